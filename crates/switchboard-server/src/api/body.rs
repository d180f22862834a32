//! A request body read under the configured limit and parsed as JSON, with errors that say
//! what was wrong and where (the byte limit, or the line and column of the JSON error).

use axum::body::Body;
use serde_json::Value;

use crate::error::ApiError;

/// The body as JSON, or the error to answer with (413 past the limit, 400 otherwise).
pub async fn read_json(body: Body, limit: usize) -> Result<Value, ApiError> {
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|error| {
        if is_length_limit(&error) {
            ApiError::payload_too_large(limit)
        } else {
            ApiError::invalid_request(format!("could not read the request body: {error}"), None)
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|error| {
        ApiError::invalid_request(format!("the request body is not valid JSON: {error}"), None)
    })
}

fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = current.source();
    }
    false
}
