//! A request body read under the configured limit and parsed as JSON, with errors that say
//! what was wrong and where (the byte limit, or the line and column of the JSON error).

use axum::body::{Body, Bytes, HttpBody};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;
use switchboard_tools::truncate_message;

use crate::api::error::ApiError;
use crate::api::fields;
use crate::connections::BodyTimedOut;

/// The body as JSON, or the error to answer with: 413 past the limit (at once when the
/// declared `Content-Length` is past it, without reading), 408 when the body does not
/// arrive in time, 400 otherwise.
pub async fn read_json(body: Body, limit: usize) -> Result<Value, ApiError> {
    let bytes = read_bytes(body, limit).await?;
    serde_json::from_slice(&bytes).map_err(not_json)
}

/// How an API writes the path of a field: OpenAI's `messages[3].content`, Anthropic's
/// `messages.3.content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStyle {
    Brackets,
    Dots,
}

impl PathStyle {
    /// The path as a parameter name; `None` at the top (the body itself).
    fn param(self, path: &serde_path_to_error::Path) -> Option<String> {
        let mut param = String::new();
        for segment in path.iter() {
            match (segment, self) {
                (Segment::Seq { index }, PathStyle::Brackets) => {
                    param.push_str(&format!("[{index}]"))
                }
                (Segment::Seq { index }, PathStyle::Dots) => param.push_str(&format!(".{index}")),
                (Segment::Map { key }, _) => param.push_str(&format!(".{key}")),
                (Segment::Enum { .. } | Segment::Unknown, _) => {}
            }
        }
        let param = param.strip_prefix('.').unwrap_or(&param);
        (!param.is_empty()).then(|| truncate_message(param.to_owned(), MAX_PARAM_CHARS))
    }
}

/// Characters of a named path (object keys come from the client).
const MAX_PARAM_CHARS: usize = 200;
/// Characters of serde's own words for a shape problem, which may quote a whole string.
const MAX_SHAPE_MESSAGE_CHARS: usize = 300;

/// The body parsed once, straight into a front-end's typed request: a body that is not
/// JSON is the same 400 as [`read_json`]'s, and one whose shape is wrong is a 400 naming
/// the first field that is, by its path in the API's own `style`.
pub(crate) fn parse_typed<T: DeserializeOwned>(
    bytes: &[u8],
    style: PathStyle,
) -> Result<T, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let error = match serde_path_to_error::deserialize(&mut json) {
        Ok(typed) => return json.end().map(|()| typed).map_err(not_json),
        Err(error) => error,
    };
    let param = style.param(error.path());
    let error = error.into_inner();
    if !error.is_data() {
        return Err(not_json(error));
    }
    // serde_json ends a message with where in the text it is; the path says it better.
    let words = error.to_string();
    let place = format!(" at line {} column {}", error.line(), error.column());
    let words = truncate_message(
        words.strip_suffix(&place).unwrap_or(&words).to_owned(),
        MAX_SHAPE_MESSAGE_CHARS,
    );
    Err(match param {
        Some(param) => fields::rejection(&[fields::invalid(param, words)]),
        // The body itself: not an object, or an object naming a field twice.
        None => ApiError::invalid_request(format!("the request body: {words}"), None),
    })
}

fn not_json(error: serde_json::Error) -> ApiError {
    ApiError::invalid_request(format!("the request body is not valid JSON: {error}"), None)
}

/// The body's bytes, or the error to answer with (see [`read_json`]).
pub async fn read_bytes(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    if body.size_hint().lower() > limit as u64 {
        return Err(ApiError::payload_too_large(limit));
    }
    axum::body::to_bytes(body, limit).await.map_err(|error| {
        if let Some(timeout) = find::<BodyTimedOut>(&error) {
            ApiError::body_timeout(timeout)
        } else if find::<http_body_util::LengthLimitError>(&error).is_some() {
            ApiError::payload_too_large(limit)
        } else {
            ApiError::invalid_request(format!("could not read the request body: {error}"), None)
        }
    })
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

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// Shaped like the front-ends' bodies: a flattened rest makes serde read it as an
    /// object only (a struct without one would take an array of its fields in order).
    #[derive(Debug, Deserialize)]
    #[serde(expecting = "a JSON object")]
    struct Body {
        #[serde(default)]
        #[allow(dead_code)]
        messages: Vec<Message>,
        #[serde(flatten)]
        #[allow(dead_code)]
        extra: serde_json::Map<String, Value>,
    }

    #[derive(Debug, Deserialize)]
    struct Message {
        #[serde(default)]
        #[allow(dead_code)]
        content: Option<String>,
    }

    fn problem(text: &str, style: PathStyle) -> ApiError {
        parse_typed::<Body>(text.as_bytes(), style).unwrap_err()
    }

    #[test]
    fn a_shape_problem_is_named_by_its_path_in_the_apis_style() {
        let text = r#"{"messages": [{"content": "a"}, {"content": 5}]}"#;
        let error = problem(text, PathStyle::Brackets);
        assert_eq!(error.param.as_deref(), Some("messages[1].content"));
        assert!(
            error
                .message
                .starts_with("messages[1].content: invalid type: integer `5`"),
            "{}",
            error.message
        );
        assert!(!error.message.contains("line 1"), "{}", error.message);
        let error = problem(text, PathStyle::Dots);
        assert_eq!(error.param.as_deref(), Some("messages.1.content"));
    }

    #[test]
    fn the_body_itself_is_named_without_a_parameter() {
        let error = problem("[1, 2]", PathStyle::Brackets);
        assert_eq!(error.param, None);
        assert!(
            error.message.contains("expected a JSON object"),
            "{}",
            error.message
        );
        let error = problem(r#"{"messages": [], "messages": []}"#, PathStyle::Brackets);
        assert!(
            error.message.contains("duplicate field"),
            "{}",
            error.message
        );
        let error = problem(r#"{"messages": []} {}"#, PathStyle::Brackets);
        assert!(
            error.message.contains("not valid JSON"),
            "{}",
            error.message
        );
    }

    #[test]
    fn serdes_words_are_cut_short() {
        let long = "x".repeat(100_000);
        let error = problem(
            &format!(r#"{{"messages": [{{"content": ["{long}"]}}]}}"#),
            PathStyle::Brackets,
        );
        assert!(error.message.len() < 1_000, "{} bytes", error.message.len());
    }
}
