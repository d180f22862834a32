//! The APIs the gateway serves, one front-end per folder, each listed once in
//! [`FRONT_ENDS`]. Each parses its own request format into the pipeline's
//! [`GatewayRequest`](switchboard_pipeline::GatewayRequest), and renders the pipeline's outputs
//! and errors in its own format, whole or streamed. What every front-end needs the same way
//! lives beside them: the access gate and the caller, reading the body, the SSE driver, the
//! request log.

mod body;
pub mod caller;
pub mod characters;
pub mod chat;
pub mod error;
mod fields;
mod front_end;
pub mod gate;
pub mod gemini;
pub(crate) mod log;
pub mod mcp;
pub mod messages;
pub mod ollama;
pub mod ops;
mod path;
pub mod playground;
pub mod responses;
mod sse;

use axum::response::{IntoResponse, Response};

pub use front_end::{FrontEnd, RequestId};

use crate::api::error::ApiError;

/// Every API the gateway serves. A new one is a folder beside these and a line here.
pub const FRONT_ENDS: &[FrontEnd] = &[
    chat::FRONT_END,
    messages::FRONT_END,
    responses::FRONT_END,
    gemini::FRONT_END,
    ollama::FRONT_END,
    characters::FRONT_END,
    mcp::FRONT_END,
    ops::FRONT_END,
    playground::FRONT_END,
];

/// `error` as the API at `path` writes its errors: OpenAI's shape where no front-end
/// claims the path (the fallback's 404, say).
pub fn error_response(path: &str, error: ApiError) -> Response {
    match FRONT_ENDS.iter().find(|front_end| (front_end.owns)(path)) {
        Some(front_end) => (front_end.error)(error),
        None => error.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use serde_json::json;

    use super::*;

    async fn body(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn anthropic_paths_get_anthropic_errors_and_the_rest_openai_errors() {
        let error = ApiError {
            status: StatusCode::FORBIDDEN,
            message: "no".into(),
            kind: "permission_error",
            param: None,
            code: Some("model_not_allowed".into()),
        };
        for path in ["/v1/messages", "/v1/messages/count_tokens"] {
            let response = error_response(path, error.clone());
            assert_eq!(response.status(), 403);
            assert_eq!(
                body(response).await,
                json!({"type": "error", "error": {"type": "permission_error", "message": "no"}})
            );
        }
        for path in [
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/messagesx",
            "/v1/models",
        ] {
            let response = error_response(path, error.clone());
            assert_eq!(response.status(), 403);
            assert_eq!(body(response).await, error.body(), "{path}");
        }
    }
}
