//! The front-ends' error: what the pipeline's failures and the front-ends' own refusals
//! become, each with the HTTP status it is answered with. Its body is OpenAI's shape
//! (`{"error": {"message", "type", "param", "code"}}`); the Messages front-end renders it
//! in Anthropic's. Nothing reaches a client as a bare 500.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;
use switchboard_providers::BackendError;
use switchboard_wire::DecodeErrorKind;

use switchboard_pipeline::PipelineError;

/// The code of an answer stopped for its size.
pub const ANSWER_TOO_LARGE: &str = "backend_answer_too_large";

/// An error answered to an API client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<String>,
}

/// Each way the pipeline fails, with the status, type and code its clients are answered with.
/// A request the wire crate could not convert: a 400 naming the field where it can.
impl From<switchboard_wire::ConvertError> for ApiError {
    fn from(error: switchboard_wire::ConvertError) -> Self {
        match error {
            switchboard_wire::ConvertError::Invalid { path, message } => {
                Self::invalid_request(format!("{path}: {message}"), Some(path))
            }
            other => Self::invalid_request(other.to_string(), None),
        }
    }
}

impl From<PipelineError> for ApiError {
    fn from(error: PipelineError) -> Self {
        match error {
            PipelineError::Invalid { message, param } => Self::invalid_request(message, param),
            PipelineError::UnknownModel(message) => Self::not_found(message),
            PipelineError::Backend(error) => Self::from(error),
            PipelineError::BadAnswer { message, code } => {
                Self::upstream(StatusCode::BAD_GATEWAY, message, code)
            }
            PipelineError::AnswerTooLarge(detail) => Self::answer_too_large(detail),
            PipelineError::Timeout(timeout) => Self::request_timeout(timeout),
            PipelineError::ShuttingDown => Self::shutting_down(),
            unserved @ PipelineError::NoCharacterRoute => Self::upstream(
                StatusCode::SERVICE_UNAVAILABLE,
                unserved.to_string(),
                "no_character_route",
            ),
            PipelineError::Character(message) => Self::upstream(
                StatusCode::INTERNAL_SERVER_ERROR,
                message,
                "character_failed",
            ),
            gone @ PipelineError::ClientGone => Self::invalid_request(gone.to_string(), None),
        }
    }
}

/// A backend's failure as a client is answered: the status and code the failure classifies
/// itself with, and its text, except where the text is the operator's business.
impl From<BackendError> for ApiError {
    fn from(error: BackendError) -> Self {
        let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_GATEWAY);
        match &error {
            // A backend refusing the route's key tends to quote the key back (masked or
            // not): that text is never the client's.
            BackendError::Http {
                status: refused @ (401 | 403),
                ..
            } => Self::upstream(
                status,
                format!(
                    "the backend refused the gateway's credentials for this route (HTTP {refused}); the route's api_key_env needs attention"
                ),
                error.code(),
            ),
            BackendError::Decode(decode)
                if matches!(decode.kind, DecodeErrorKind::TooLarge { .. }) =>
            {
                Self::answer_too_large(decode)
            }
            _ => Self::upstream(status, error.to_string(), error.code()),
        }
    }
}

impl ApiError {
    pub fn invalid_request(message: impl Into<String>, param: Option<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param,
            code: None,
        }
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some("model".into()),
            code: Some("model_not_found".into()),
        }
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!("request body is larger than the limit of {limit} bytes"),
            kind: "invalid_request_error",
            param: None,
            code: Some("request_too_large".into()),
        }
    }

    /// A failure of the backend or of the gateway on the backend's behalf.
    pub fn upstream(status: StatusCode, message: impl Into<String>, code: &str) -> Self {
        let kind = match status.as_u16() {
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        };
        Self {
            status,
            message: message.into(),
            kind,
            param: None,
            code: Some(code.into()),
        }
    }

    /// The whole request took longer than the configured deadline.
    pub fn request_timeout(timeout: std::time::Duration) -> Self {
        Self::upstream(
            StatusCode::GATEWAY_TIMEOUT,
            format!("the request took longer than {} s", timeout.as_secs()),
            "request_timeout",
        )
    }

    /// The backend's answer passed `max_answer_bytes`, or one of its events the decoders'
    /// bound.
    pub fn answer_too_large(detail: impl std::fmt::Display) -> Self {
        Self::upstream(
            StatusCode::BAD_GATEWAY,
            format!("the backend's answer is too large: {detail}; the backend request was closed"),
            ANSWER_TOO_LARGE,
        )
    }

    /// The gateway is stopping and could not wait for this answer any longer.
    pub fn shutting_down() -> Self {
        Self::upstream(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway is shutting down; the answer was cut short, send the request again",
            "server_shutting_down",
        )
    }

    /// The request's body did not arrive in time.
    pub fn body_timeout(detail: impl std::fmt::Display) -> Self {
        Self {
            status: StatusCode::REQUEST_TIMEOUT,
            message: detail.to_string(),
            kind: "invalid_request_error",
            param: None,
            code: Some("body_timeout".into()),
        }
    }

    /// The JSON body, as sent both in responses and as an SSE error event.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": ErrorBody { message: &self.message, kind: self.kind, param: self.param.as_deref(), code: self.code.as_deref() }})
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}
