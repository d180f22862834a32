//! A request body read under the configured limit and parsed as JSON, with errors that say
//! what was wrong and where (the byte limit, or the line and column of the JSON error).

use axum::body::{Body, HttpBody};
use serde_json::Value;

use crate::api::error::ApiError;
use crate::connections::BodyTimedOut;

/// The body as JSON, or the error to answer with: 413 past the limit (at once when the
/// declared `Content-Length` is past it, without reading), 408 when the body does not
/// arrive in time, 400 otherwise.
pub async fn read_json(body: Body, limit: usize) -> Result<Value, ApiError> {
    read_json_sized(body, limit).await.map(|(value, _)| value)
}

/// [`read_json`], with the body's length in bytes.
pub async fn read_json_sized(body: Body, limit: usize) -> Result<(Value, usize), ApiError> {
    if body.size_hint().lower() > limit as u64 {
        return Err(ApiError::payload_too_large(limit));
    }
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|error| {
        if let Some(timeout) = find::<BodyTimedOut>(&error) {
            ApiError::body_timeout(timeout)
        } else if find::<http_body_util::LengthLimitError>(&error).is_some() {
            ApiError::payload_too_large(limit)
        } else {
            ApiError::invalid_request(format!("could not read the request body: {error}"), None)
        }
    })?;
    let value = serde_json::from_slice(&bytes).map_err(|error| {
        ApiError::invalid_request(format!("the request body is not valid JSON: {error}"), None)
    })?;
    Ok((value, bytes.len()))
}

/// The first error of type `E` in `error`'s source chain.
fn find<E: std::error::Error + 'static>(error: &axum::Error) -> Option<&E> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(found) = current.downcast_ref::<E>() {
            return Some(found);
        }
        source = current.source();
    }
    None
}
