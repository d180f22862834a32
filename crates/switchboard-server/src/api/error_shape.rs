//! The error shape of the API a request was sent to, chosen by its path, for the errors
//! that are answered before any endpoint runs (401, 429): Anthropic's for `/v1/messages`,
//! OpenAI's for everything else (Chat Completions, Responses, the model list).

use axum::response::{IntoResponse, Response};

use super::messages::error_response as anthropic_error;
use crate::error::ApiError;

/// `error` as the API at `path` writes its errors.
pub fn error_response(path: &str, error: ApiError) -> Response {
    if path == "/v1/messages" || path.starts_with("/v1/messages/") {
        anthropic_error(error)
    } else {
        error.into_response()
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
