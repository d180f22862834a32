//! `POST /v1/messages/count_tokens`: `{"input_tokens": N}` for a Messages request, counted
//! by the tokenizer of the backend that would answer it where it offers one, estimated
//! otherwise. The `x-switchboard-token-count` header says which (`backend`, `estimate`).

use axum::Json;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use switchboard_pipeline::TokenCount;

use super::Messages;
use super::render::{Presentation, TOKEN_COUNT};
use crate::api::path::Counts;

impl Counts for Messages {
    fn counted(count: TokenCount, _presentation: &Presentation) -> Response {
        let mut response = Json(json!({"input_tokens": count.tokens})).into_response();
        response
            .headers_mut()
            .insert(TOKEN_COUNT, HeaderValue::from_static(count.source));
        response
    }
}
