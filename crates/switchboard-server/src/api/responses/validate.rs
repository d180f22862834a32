//! Checks a Responses request's top-level fields before anything is sent anywhere, every
//! problem listed with the parameter it is about. Items and tools are checked where they
//! are converted (with paths such as `input[4].call_id`).

use serde_json::{Map, Value};
use switchboard_wire::responses::ResponsesRequest;

use switchboard_tools::quote_value;

use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, number, rejection};

const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];
const VERBOSITIES: &[&str] = &["low", "medium", "high"];

/// The request, typed, once every top-level rule holds.
pub fn check_request(body: Value) -> Result<ResponsesRequest, ApiError> {
    let Value::Object(object) = body else {
        return Err(fields::not_an_object());
    };
    let request = &object;
    let mut problems = Vec::new();
    fields::model(Sent::field(request, "model"), &mut problems);
    match request.get("input") {
        Some(Value::String(_) | Value::Array(_)) => {}
        None | Some(Value::Null) => problems.push(invalid(
            "input",
            "input is required: a string or a list of items",
        )),
        Some(other) => problems.push(invalid(
            "input",
            format!(
                "must be a string or a list of items, got {}",
                quote_value(other)
            ),
        )),
    }
    for field in ["instructions", "previous_response_id", "user"] {
        expect(request, field, Value::is_string, "a string", &mut problems);
    }
    for field in ["stream", "store", "parallel_tool_calls"] {
        expect(
            request,
            field,
            Value::is_boolean,
            "a boolean",
            &mut problems,
        );
    }
    for field in ["tools", "include"] {
        expect(request, field, Value::is_array, "an array", &mut problems);
    }
    for field in ["metadata", "reasoning", "text"] {
        expect(request, field, Value::is_object, "an object", &mut problems);
    }
    number(
        Sent::field(request, "temperature"),
        "temperature",
        0.0,
        2.0,
        &mut problems,
    );
    number(
        Sent::field(request, "top_p"),
        "top_p",
        0.0,
        1.0,
        &mut problems,
    );
    fields::token_count(
        Sent::field(request, "max_output_tokens"),
        "max_output_tokens",
        &mut problems,
    );
    if let Some(tools) = request.get("tools").and_then(Value::as_array) {
        for (index, tool) in tools.iter().enumerate() {
            if !tool.is_object() {
                problems.push(invalid(
                    format!("tools[{index}]"),
                    "each tool must be an object",
                ));
            }
        }
    }
    match request.get("tool_choice") {
        None | Some(Value::Null | Value::String(_) | Value::Object(_)) => {}
        Some(other) => problems.push(invalid(
            "tool_choice",
            format!("must be a string or an object, got {}", quote_value(other)),
        )),
    }
    one_of(
        request.get("reasoning"),
        "effort",
        "reasoning.effort",
        EFFORTS,
        &mut problems,
    );
    one_of(
        request.get("text"),
        "verbosity",
        "text.verbosity",
        VERBOSITIES,
        &mut problems,
    );
    if let Some(format) = request.get("text").and_then(|text| text.get("format"))
        && !format.is_null()
        && !format.get("type").is_some_and(Value::is_string)
    {
        problems.push(invalid("text.format.type", "the format needs a type"));
    }
    if request.get("background") == Some(&Value::Bool(true)) {
        problems.push(invalid(
            "background",
            "background responses are not supported; stream the response instead",
        ));
    }
    if request
        .get("conversation")
        .is_some_and(|value| !value.is_null())
    {
        problems.push(invalid(
            "conversation",
            "conversation objects are not supported; continue with previous_response_id",
        ));
    }
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    ResponsesRequest::from_object(object).map_err(|error| {
        ApiError::invalid_request(
            format!("the request does not match the Responses format: {error}"),
            None,
        )
    })
}

fn expect(
    request: &Map<String, Value>,
    field: &str,
    test: fn(&Value) -> bool,
    what: &str,
    problems: &mut Vec<Invalid>,
) {
    if let Some(value) = request.get(field)
        && !value.is_null()
        && !test(value)
    {
        problems.push(invalid(
            field,
            format!("expected {what}, got {}", quote_value(value)),
        ));
    }
}

fn one_of(
    object: Option<&Value>,
    field: &str,
    param: &str,
    allowed: &[&str],
    problems: &mut Vec<Invalid>,
) {
    match object.and_then(|object| object.get(field)) {
        None | Some(Value::Null) => {}
        Some(Value::String(value)) if allowed.contains(&value.as_str()) => {}
        Some(other) => problems.push(invalid(
            param,
            format!(
                "must be one of {}, got {}",
                allowed.join(", "),
                quote_value(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(body: Value) -> String {
        check_request(body)
            .map(|_| String::new())
            .unwrap_or_else(|error| error.message)
    }

    #[test]
    fn what_codex_sends_passes() {
        assert_eq!(
            problems(
                json!({"model": "gpt-5.5", "input": [], "tools": [], "tool_choice": "auto",
                "parallel_tool_calls": true, "reasoning": {"effort": "medium", "summary": "auto"},
                "store": false, "stream": true, "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "x", "text": {"verbosity": "low"}, "client_metadata": {"a": "b"}})
            ),
            ""
        );
    }

    #[test]
    fn each_rule_names_its_parameter_and_all_are_listed() {
        let message = problems(
            json!({"model": "", "input": 7, "temperature": 3, "max_output_tokens": 0,
            "reasoning": {"effort": "maximal"}, "store": "yes", "background": true}),
        );
        for param in [
            "model:",
            "input:",
            "temperature:",
            "max_output_tokens:",
            "reasoning.effort:",
            "store:",
            "background:",
        ] {
            assert!(message.contains(param), "{param} in {message}");
        }
        assert!(problems(json!({"model": "m"})).starts_with("input: input is required"));
    }
}
