//! `POST /v1/messages/count_tokens`: `{"input_tokens": N}` for a Messages request, counted
//! by the tokenizer of the backend that would answer it where it offers one, estimated
//! otherwise. The `x-switchboard-token-count` header says which (`backend`, `estimate`).

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use switchboard_pipeline::TokenCount;

use super::Messages;
use super::render::{Presentation, TOKEN_COUNT};
use crate::api::caller::Caller;
use crate::api::front_end::RequestId;
use crate::api::path;
use crate::state::AppState;

/// `POST /v1/messages/count_tokens`
pub async fn handle(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    path::count::<Messages>(&state, request_id, &caller, &uri, &headers, body, respond).await
}

fn respond(count: TokenCount, _presentation: &Presentation) -> Response {
    let mut response = Json(json!({"input_tokens": count.tokens})).into_response();
    response
        .headers_mut()
        .insert(TOKEN_COUNT, HeaderValue::from_static(count.source));
    response
}
