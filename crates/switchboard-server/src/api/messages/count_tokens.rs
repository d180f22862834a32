//! `POST /v1/messages/count_tokens`: `{"input_tokens": N}` for a Messages request, counted
//! by the tokenizer of the backend that would answer it where it offers one, estimated
//! otherwise. The `x-switchboard-token-count` header says which (`backend`, `estimate`).

use axum::Json;
use axum::body::Body;
use axum::extract::Extension;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::render::TOKEN_COUNT;
use super::validate::Endpoint;
use super::{parse, with_headers};
use crate::api::caller::Caller;
use crate::api::front_end::RequestId;
use crate::api::log::{RequestLog, Tally};

/// `POST /v1/messages/count_tokens`
pub async fn handle(
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Response {
    let log = RequestLog::new(request_id.clone(), "count_tokens").with_caller(&caller);
    let parsed = match parse(&caller, body, Endpoint::CountTokens).await {
        Ok(parsed) => parsed,
        Err(error) => {
            return with_headers(
                log.fail("-", error, super::FRONT_END.error),
                &request_id,
                &[],
            );
        }
    };
    log.requested(&parsed.request.request.model);
    let count = caller
        .snapshot()
        .pipeline
        .count_tokens(&parsed.request)
        .await;
    // A count consumes nothing: no tokens are tallied.
    log.finish(
        &parsed.request.target.label(),
        StatusCode::OK,
        Tally::default(),
        false,
    );
    let mut response = Json(json!({"input_tokens": count.tokens})).into_response();
    response
        .headers_mut()
        .insert(TOKEN_COUNT, HeaderValue::from_static(count.source));
    with_headers(response, &request_id, &parsed.dropped)
}
