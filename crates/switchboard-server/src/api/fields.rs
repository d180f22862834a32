//! What every front-end's validator shares: a problem with one field of the request, the one
//! 400 that lists them (bounded, so thousands of broken fields make a short answer), and the
//! checks of fields that mean the same in every API. Client values are quoted through
//! `quote_value`, which cuts long ones, so an error never echoes a large input back.

use serde_json::{Map, Value};
use switchboard_tools::quote_value;

use crate::api::error::ApiError;

/// Problems named in one error.
const MAX_PROBLEMS_LISTED: usize = 20;

/// A problem with one field (its parameter name or path) of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub param: String,
    pub message: String,
}

pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid {
        param: param.into(),
        message: message.into(),
    }
}

/// One 400 listing the problems, `param: message` each; the first names the parameter.
pub(crate) fn rejection(problems: &[Invalid]) -> ApiError {
    let param = problems.first().map(|first| first.param.clone());
    let mut message = problems
        .iter()
        .take(MAX_PROBLEMS_LISTED)
        .map(|problem| format!("{}: {}", problem.param, problem.message))
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > MAX_PROBLEMS_LISTED {
        message.push_str(&format!(
            "; and {} more problems",
            problems.len() - MAX_PROBLEMS_LISTED
        ));
    }
    ApiError::invalid_request(message, param)
}

/// The body's fields, or the 400 for a body that is not a JSON object.
pub(crate) fn object(body: &Value) -> Result<&Map<String, Value>, ApiError> {
    match body {
        Value::Object(request) => Ok(request),
        _ => Err(not_an_object()),
    }
}

pub(crate) fn not_an_object() -> ApiError {
    ApiError::invalid_request("the request body must be a JSON object", None)
}

/// `model`: a non-empty string (empty when it is not one; the problem is recorded).
pub(crate) fn model(request: &Map<String, Value>, problems: &mut Vec<Invalid>) -> String {
    match request.get("model") {
        Some(Value::String(model)) if !model.trim().is_empty() => model.clone(),
        Some(Value::String(_)) | None => {
            problems.push(invalid(
                "model",
                "you must name a model (a route, an alias of one, or character/<name>)",
            ));
            String::new()
        }
        Some(other) => {
            problems.push(invalid(
                "model",
                format!("expected a string, got {}", quote_value(other)),
            ));
            String::new()
        }
    }
}

/// A boolean field; absent or null is `false`.
pub(crate) fn boolean(
    request: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<Invalid>,
) -> bool {
    match request.get(field) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(value)) => *value,
        Some(other) => {
            problems.push(invalid(
                field,
                format!("expected a boolean, got {}", quote_value(other)),
            ));
            false
        }
    }
}

/// Whether a field holds a positive integer a token count can be (up to `u32::MAX`).
pub(crate) fn is_token_count(value: &Value) -> bool {
    value
        .as_u64()
        .is_some_and(|value| value > 0 && value <= u64::from(u32::MAX))
}

/// The problem of a field that is not a token count.
pub(crate) fn not_a_token_count(field: &str, value: &Value) -> Invalid {
    invalid(
        field,
        format!(
            "must be a positive integer up to {}, got {}",
            u32::MAX,
            quote_value(value)
        ),
    )
}

/// A number field within `min..=max`, when present.
pub(crate) fn number(
    request: &Map<String, Value>,
    field: &str,
    min: f64,
    max: f64,
    problems: &mut Vec<Invalid>,
) {
    match request.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Number(number))
            if number
                .as_f64()
                .is_some_and(|value| (min..=max).contains(&value)) => {}
        Some(other) => problems.push(invalid(
            field,
            format!(
                "must be a number from {min} to {max}, got {}",
                quote_value(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_large_wrong_value_is_quoted_short() {
        let body = json!({"model": "m", "stream": vec![7; 100_000]});
        let mut problems = Vec::new();
        assert!(!boolean(object(&body).unwrap(), "stream", &mut problems));
        let message = &problems[0].message;
        assert!(
            message.starts_with("expected a boolean, got [7,7,"),
            "{message}"
        );
        assert!(message.len() < 300, "{} bytes", message.len());
    }

    #[test]
    fn the_rejection_lists_twenty_problems_and_counts_the_rest() {
        let problems: Vec<Invalid> = (0..25)
            .map(|index| invalid(format!("tools[{index}]"), "bad"))
            .collect();
        let error = rejection(&problems);
        assert_eq!(error.param.as_deref(), Some("tools[0]"));
        assert!(
            error
                .message
                .ends_with("tools[19]: bad; and 5 more problems"),
            "{}",
            error.message
        );
    }
}
