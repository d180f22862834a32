//! Why the pipeline could not answer, in its own terms. It knows no API's error shape and
//! no HTTP status: each front-end renders these through `api::error::ApiError`, where the
//! status, type and code of every kind are decided once.

use std::time::Duration;

use switchboard_providers::BackendError;

/// One failed answer, or a request the pipeline cannot take.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The request asks for something the pipeline cannot do with it; `param` names the
    /// field it is about.
    #[error("{message}")]
    Invalid {
        message: String,
        param: Option<String>,
    },
    /// The model names no route, alias or loaded character.
    #[error("{0}")]
    UnknownModel(String),
    /// The backend failed (every retry and fallback used), or failed mid-answer.
    #[error(transparent)]
    Backend(BackendError),
    /// The backend answered, but not with what was asked for: an incomplete answer, an
    /// invalid tool call under `reject`, no call where one was required. `code` says which.
    #[error("{message}")]
    BadAnswer { message: String, code: &'static str },
    /// The answer passed `max_answer_bytes`; the backend request was closed.
    #[error("the backend's answer is too large: {0}")]
    AnswerTooLarge(String),
    /// The request ran past its deadline.
    #[error("the request took longer than {} s", .0.as_secs())]
    Timeout(Duration),
    /// The gateway stopped before the answer ended.
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// A character was asked for and no route is configured for characters.
    #[error("no route is configured for characters to talk through")]
    NoCharacterRoute,
    /// A character's own code failed (its system prompt could not be made).
    #[error("{0}")]
    Character(String),
    /// Nobody reads the answer any more.
    #[error("the client went away")]
    ClientGone,
}

impl PipelineError {
    pub fn invalid(message: impl Into<String>, param: Option<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            param,
        }
    }

    /// The backend's answer does not add up (a call never ended, events out of order).
    pub fn incomplete(detail: impl std::fmt::Display) -> Self {
        Self::BadAnswer {
            message: format!("the backend's answer is incomplete: {detail}"),
            code: "backend_bad_answer",
        }
    }
}

impl From<BackendError> for PipelineError {
    fn from(error: BackendError) -> Self {
        Self::Backend(error)
    }
}
