//! Checks a Responses request, read into [`ResponsesBody`], before anything is sent
//! anywhere, every problem listed with the parameter it is about, and moves it into the
//! wire crate's request. Items and tools are checked where they are converted (with paths
//! such as `input[4].call_id`).

use serde::Deserialize;
use serde_json::{Map, Value};
use switchboard_wire::responses::{Input, ReasoningConfig, ResponsesRequest, TextConfig};

use super::request::ResponsesBody;
use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, TextOrList, invalid, number, rejection};

const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];
const VERBOSITIES: &[&str] = &["low", "medium", "high"];

/// The request, typed, once every top-level rule holds.
pub fn check_request(body: ResponsesBody) -> Result<ResponsesRequest, ApiError> {
    let ResponsesBody {
        model,
        input,
        instructions,
        tools,
        tool_choice,
        parallel_tool_calls,
        max_output_tokens,
        temperature,
        top_p,
        reasoning,
        text,
        store,
        stream,
        previous_response_id,
        metadata,
        user,
        extra,
    } = body;
    let mut problems = Vec::new();
    let model = fields::model(model, &mut problems);
    let input = match input {
        Some(TextOrList::Text(text)) => Some(Input::Text(text)),
        Some(TextOrList::List(items)) => Some(Input::Items(items)),
        None => {
            problems.push(invalid(
                "input",
                "input is required: a string or a list of items",
            ));
            None
        }
        Some(TextOrList::Other(other)) => {
            Sent::<()>::Wrong(other).check(
                "input",
                "must be a string or a list of items",
                |_| false,
                &mut problems,
            );
            None
        }
    };
    let string = |sent: Sent<String>, param: &str, problems: &mut Vec<Invalid>| {
        sent.check(param, "expected a string", |_| true, problems)
    };
    let instructions = string(instructions, "instructions", &mut problems);
    let previous_response_id = string(previous_response_id, "previous_response_id", &mut problems);
    let user = string(user, "user", &mut problems);
    let flag = |sent: Sent<bool>, param: &str, problems: &mut Vec<Invalid>| {
        sent.check(param, "expected a boolean", |_| true, problems)
    };
    let stream = flag(stream, "stream", &mut problems);
    let store = flag(store, "store", &mut problems);
    let parallel_tool_calls = flag(parallel_tool_calls, "parallel_tool_calls", &mut problems);
    let tools = check_tools(tools, &mut problems);
    Sent::<Vec<Value>>::field(&extra, "include").check(
        "include",
        "expected an array",
        |_| true,
        &mut problems,
    );
    let object = |sent: Sent<Map<String, Value>>, param: &str, problems: &mut Vec<Invalid>| {
        sent.check(param, "expected an object", |_| true, problems)
    };
    let metadata = object(metadata, "metadata", &mut problems);
    let reasoning = object(reasoning, "reasoning", &mut problems);
    let text = object(text, "text", &mut problems);
    let temperature = number(temperature, "temperature", 0.0, 2.0, &mut problems);
    let top_p = number(top_p, "top_p", 0.0, 1.0, &mut problems);
    let max_output_tokens =
        fields::token_count(max_output_tokens, "max_output_tokens", &mut problems);
    let tool_choice = match tool_choice {
        None | Some(Value::Null) => None,
        Some(choice @ (Value::String(_) | Value::Object(_))) => Some(choice),
        Some(other) => {
            Sent::<()>::Wrong(other).check(
                "tool_choice",
                "must be a string or an object",
                |_| false,
                &mut problems,
            );
            None
        }
    };
    let reasoning = reasoning.map(|reasoning| {
        let effort = one_of(
            &reasoning,
            "effort",
            "reasoning.effort",
            EFFORTS,
            &mut problems,
        );
        (reasoning, effort)
    });
    let text = text.map(|text| {
        let verbosity = one_of(
            &text,
            "verbosity",
            "text.verbosity",
            VERBOSITIES,
            &mut problems,
        );
        if let Some(format) = text.get("format")
            && !format.is_null()
            && !format.get("type").is_some_and(Value::is_string)
        {
            problems.push(invalid("text.format.type", "the format needs a type"));
        }
        (text, verbosity)
    });
    if Sent::<bool>::field(&extra, "background") == Sent::Given(true) {
        problems.push(invalid(
            "background",
            "background responses are not supported; stream the response instead",
        ));
    }
    if extra
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
    let shape = |error: serde_json::Error| {
        ApiError::invalid_request(
            format!("the request does not match the Responses format: {error}"),
            None,
        )
    };
    Ok(ResponsesRequest {
        model,
        input: input.unwrap_or(Input::Items(Vec::new())),
        instructions,
        tools,
        tool_choice,
        parallel_tool_calls,
        max_output_tokens,
        temperature,
        top_p,
        reasoning: reasoning
            .map(|(fields, effort)| {
                ReasoningConfig::deserialize(Value::Object(fields))
                    .map(|config| ReasoningConfig { effort, ..config })
            })
            .transpose()
            .map_err(shape)?,
        text: text
            .map(|(fields, verbosity)| {
                TextConfig::deserialize(Value::Object(fields)).map(|config| TextConfig {
                    verbosity,
                    ..config
                })
            })
            .transpose()
            .map_err(shape)?,
        store,
        stream,
        previous_response_id,
        metadata,
        user,
        extra,
    })
}

/// `tools`: an array of objects, each converted with its own path later.
fn check_tools(tools: Option<Value>, problems: &mut Vec<Invalid>) -> Option<Vec<Value>> {
    match tools {
        None | Some(Value::Null) => None,
        Some(Value::Array(tools)) => {
            for (index, tool) in tools.iter().enumerate() {
                if !tool.is_object() {
                    problems.push(invalid(
                        format!("tools[{index}]"),
                        "each tool must be an object",
                    ));
                }
            }
            Some(tools)
        }
        Some(other) => {
            Sent::<()>::Wrong(other).check("tools", "expected an array", |_| false, problems);
            None
        }
    }
}

/// A field of `object` that must be one of `allowed`, when present.
fn one_of(
    object: &Map<String, Value>,
    field: &str,
    param: &str,
    allowed: &[&str],
    problems: &mut Vec<Invalid>,
) -> Option<String> {
    Sent::<String>::field(object, field).check(
        param,
        &format!("must be one of {}", allowed.join(", ")),
        |value| allowed.contains(&value.as_str()),
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::{PathStyle, parse_typed};
    use serde_json::json;

    /// The problems of a body as it would come over HTTP, read into its types first.
    fn problems(body: Value) -> String {
        let bytes = serde_json::to_vec(&body).unwrap();
        parse_typed(&bytes, PathStyle::Brackets)
            .and_then(check_request)
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
