//! Checks a chat-completions request before anything is sent anywhere: every rule that
//! OpenAI enforces, every problem listed, each with the parameter it is about.

use serde_json::{Map, Value};
use switchboard_tools::{Toolset, quote, quote_value};
use switchboard_wire::REASONING_EFFORTS;

use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, number, rejection};
use switchboard_pipeline::compile_tools;

/// What validation learned that later steps need.
#[derive(Debug)]
pub struct Checked {
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
    /// The request's tools compiled under the `api` profile, to check the model's calls.
    pub tools: Toolset,
}

const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool"];

/// Validates a parsed request body. All problems are reported in one 400.
pub fn check_request(body: &Value) -> Result<Checked, ApiError> {
    let request = fields::object(body)?;
    let mut problems = Vec::new();
    let model = fields::model(Sent::field(request, "model"), &mut problems);
    check_messages(request.get("messages"), &mut problems);
    let tools = check_tools(request.get("tools"), &mut problems);
    check_tool_choice(request, &tools, &mut problems);
    let stream = fields::boolean(Sent::field(request, "stream"), "stream", &mut problems);
    let include_usage = match request.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(options) if !stream => {
            problems.push(invalid(
                "stream_options",
                "stream_options is only allowed when stream is true",
            ));
            options.get("include_usage") == Some(&Value::Bool(true))
        }
        Some(options) => options.get("include_usage") == Some(&Value::Bool(true)),
    };
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
    for field in ["max_tokens", "max_completion_tokens"] {
        fields::token_count(Sent::field(request, field), field, &mut problems);
    }
    match request.get("stop") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(Value::Array(stops)) if stops.iter().all(Value::is_string) => {}
        Some(other) => problems.push(invalid(
            "stop",
            format!(
                "must be a string or an array of strings, got {}",
                quote_value(other)
            ),
        )),
    }
    check_standard_fields(request, &mut problems);
    match request.get("n") {
        None | Some(Value::Null) => {}
        Some(Value::Number(number)) if number.as_u64() == Some(1) => {}
        Some(other) => problems.push(invalid(
            "n",
            format!("only n = 1 is supported, got {}", quote_value(other)),
        )),
    }
    match request.get("parallel_tool_calls") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(other) => problems.push(invalid(
            "parallel_tool_calls",
            format!("expected a boolean, got {}", quote_value(other)),
        )),
    }
    if problems.is_empty() {
        Ok(Checked {
            model,
            stream,
            include_usage,
            tools: tools.unwrap_or_default(),
        })
    } else {
        Err(rejection(&problems))
    }
}

fn check_messages(messages: Option<&Value>, problems: &mut Vec<Invalid>) {
    let messages = match messages {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) | None => {
            problems.push(invalid("messages", "at least one message is required"));
            return;
        }
        Some(other) => {
            problems.push(invalid(
                "messages",
                format!("expected an array, got {}", quote_value(other)),
            ));
            return;
        }
    };
    let mut call_ids: Vec<&str> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let at = |field: &str| {
            if field.is_empty() {
                format!("messages[{index}]")
            } else {
                format!("messages[{index}].{field}")
            }
        };
        let Value::Object(message) = message else {
            problems.push(invalid(at(""), "each message must be an object"));
            continue;
        };
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !ROLES.contains(&role) {
            problems.push(invalid(
                at("role"),
                format!(
                    "must be one of {}, got {}",
                    ROLES.join(", "),
                    message.get("role").map_or("nothing".into(), quote_value)
                ),
            ));
            continue;
        }
        let content = message.get("content").filter(|content| !content.is_null());
        if let Some(content) = content {
            check_content(content, &at("content"), problems);
        }
        match role {
            "assistant" => {
                let calls = message.get("tool_calls").filter(|calls| !calls.is_null());
                if content.is_none() && calls.is_none() {
                    problems.push(invalid(
                        at("content"),
                        "an assistant message needs content or tool_calls",
                    ));
                }
                if let Some(calls) = calls {
                    check_assistant_calls(calls, &at("tool_calls"), &mut call_ids, problems);
                }
            }
            "tool" => {
                match message.get("tool_call_id").and_then(Value::as_str) {
                    None => problems.push(invalid(
                        at("tool_call_id"),
                        "a tool message needs the tool_call_id it answers",
                    )),
                    Some(id) if !call_ids.contains(&id) => problems.push(invalid(
                        at("tool_call_id"),
                        format!(
                            "{} does not answer a tool call of an earlier assistant message",
                            quote(id)
                        ),
                    )),
                    Some(_) => {}
                }
                if content.is_none() {
                    problems.push(invalid(at("content"), "a tool message needs content"));
                }
            }
            _ => {
                if content.is_none() {
                    problems.push(invalid(
                        at("content"),
                        format!("a {role} message needs content"),
                    ));
                }
            }
        }
    }
}

/// A string, or a list of parts each with a `type`; text parts carry their text as a string.
fn check_content(content: &Value, at: &str, problems: &mut Vec<Invalid>) {
    let Value::Array(parts) = content else {
        if !content.is_string() {
            problems.push(invalid(at, "must be a string or an array of content parts"));
        }
        return;
    };
    for (index, part) in parts.iter().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            None => problems.push(invalid(
                format!("{at}[{index}].type"),
                "each content part needs a type",
            )),
            Some("text") if !part.get("text").is_some_and(Value::is_string) => {
                problems.push(invalid(
                    format!("{at}[{index}].text"),
                    "a text part needs its text as a string",
                ))
            }
            Some(_) => {}
        }
    }
}

fn check_assistant_calls<'a>(
    calls: &'a Value,
    at: &str,
    call_ids: &mut Vec<&'a str>,
    problems: &mut Vec<Invalid>,
) {
    let Value::Array(calls) = calls else {
        problems.push(invalid(at, "expected an array of tool calls"));
        return;
    };
    for (index, call) in calls.iter().enumerate() {
        match call.get("id").and_then(Value::as_str) {
            Some(id) => call_ids.push(id),
            None => problems.push(invalid(
                format!("{at}[{index}].id"),
                "each tool call needs an id",
            )),
        }
        if call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .is_none()
        {
            problems.push(invalid(
                format!("{at}[{index}].function.name"),
                "each tool call needs a function name",
            ));
        }
    }
}

fn check_tools(tools: Option<&Value>, problems: &mut Vec<Invalid>) -> Option<Toolset> {
    match tools {
        None | Some(Value::Null) => None,
        Some(list) => match compile_tools(list) {
            Ok(toolset) => Some(toolset),
            Err(found) => {
                for problem in found.0 {
                    problems.push(invalid(
                        format!("tools{}", pointer_to_param(&problem.path)),
                        problem.message,
                    ));
                }
                None
            }
        },
    }
}

/// `/0/function/name` → `[0].function.name`, the way OpenAI names parameters.
pub(crate) fn pointer_to_param(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| {
            if segment.parse::<usize>().is_ok() {
                format!("[{segment}]")
            } else {
                format!(".{}", segment.replace("~1", "/").replace("~0", "~"))
            }
        })
        .collect()
}

fn check_tool_choice(
    request: &Map<String, Value>,
    tools: &Option<Toolset>,
    problems: &mut Vec<Invalid>,
) {
    let Some(choice) = request
        .get("tool_choice")
        .filter(|choice| !choice.is_null())
    else {
        return;
    };
    let has_tools = request
        .get("tools")
        .is_some_and(|tools| tools.as_array().is_some_and(|tools| !tools.is_empty()));
    match choice {
        Value::String(mode) if mode == "none" || mode == "auto" || mode == "required" => {
            if mode == "required" && !has_tools {
                problems.push(invalid("tool_choice", "\"required\" needs at least one tool in tools"));
            }
        }
        Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("function") => {
            match object.get("function").and_then(|function| function.get("name")).and_then(Value::as_str) {
                None => problems.push(invalid("tool_choice.function.name", "name the function the model must call")),
                Some(name) => {
                    let known = tools.as_ref().is_some_and(|tools| tools.get(name).is_some());
                    if !known && problems.iter().all(|problem| !problem.param.starts_with("tools")) {
                        problems.push(invalid("tool_choice.function.name", format!("{} is not one of the request's tools", quote(name))));
                    }
                }
            }
        }
        other => problems.push(invalid(
            "tool_choice",
            format!("must be \"auto\", \"none\", \"required\" or {{\"type\": \"function\", \"function\": {{\"name\": …}}}}, got {}", quote_value(other)),
        )),
    }
}

/// The OpenAI API's other request fields, forwarded to backends: checked here so that a
/// mistake is a 400 naming the field, not a backend's error or a silent drop.
fn check_standard_fields(request: &Map<String, Value>, problems: &mut Vec<Invalid>) {
    number(
        Sent::field(request, "frequency_penalty"),
        "frequency_penalty",
        -2.0,
        2.0,
        problems,
    );
    number(
        Sent::field(request, "presence_penalty"),
        "presence_penalty",
        -2.0,
        2.0,
        problems,
    );
    check_integer(request, "seed", i64::MIN.into(), i64::MAX.into(), problems);
    check_integer(request, "top_k", 0, u32::MAX.into(), problems);
    check_integer(request, "top_logprobs", 0, 20, problems);
    match request.get("logprobs") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(other) => problems.push(invalid(
            "logprobs",
            format!("expected a boolean, got {other}"),
        )),
    }
    for field in ["user", "service_tier"] {
        match request.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => problems.push(invalid(field, format!("expected a string, got {other}"))),
        }
    }
    match request.get("reasoning_effort") {
        None | Some(Value::Null) => {}
        Some(Value::String(effort)) if REASONING_EFFORTS.contains(&effort.as_str()) => {}
        Some(other) => problems.push(invalid(
            "reasoning_effort",
            format!(
                "must be one of {}, got {other}",
                REASONING_EFFORTS.join(", ")
            ),
        )),
    }
    match request.get("logit_bias") {
        None | Some(Value::Null) => {}
        Some(Value::Object(biases)) => {
            for (token, bias) in biases {
                if !bias
                    .as_f64()
                    .is_some_and(|bias| (-100.0..=100.0).contains(&bias))
                {
                    problems.push(invalid(
                        format!("logit_bias.{token}"),
                        format!("must be a number from -100 to 100, got {bias}"),
                    ));
                }
            }
        }
        Some(other) => problems.push(invalid(
            "logit_bias",
            format!("expected an object of token ids and biases, got {other}"),
        )),
    }
    match request.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) if entries.values().all(Value::is_string) => {}
        Some(other) => problems.push(invalid(
            "metadata",
            format!("expected an object of strings, got {other}"),
        )),
    }
    check_response_format(request.get("response_format"), problems);
}

/// `{"type": "text"}`, `{"type": "json_object"}`, or `{"type": "json_schema", "json_schema":
/// {"name": …, "schema": {…}}}`.
fn check_response_format(format: Option<&Value>, problems: &mut Vec<Invalid>) {
    let Some(format) = format.filter(|format| !format.is_null()) else {
        return;
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text" | "json_object") => {}
        Some("json_schema") => match format.get("json_schema") {
            Some(Value::Object(spec)) => {
                if !spec.get("name").is_some_and(Value::is_string) {
                    problems.push(invalid(
                        "response_format.json_schema.name",
                        "name the schema",
                    ));
                }
                if spec.get("schema").is_some_and(|schema| !schema.is_object()) {
                    problems.push(invalid(
                        "response_format.json_schema.schema",
                        "must be a JSON Schema object",
                    ));
                }
            }
            _ => problems.push(invalid(
                "response_format.json_schema",
                "a json_schema format needs its json_schema object",
            )),
        },
        _ => problems.push(invalid(
            "response_format.type",
            format!(
                "must be \"text\", \"json_object\" or \"json_schema\", got {}",
                format.get("type").unwrap_or(&Value::Null)
            ),
        )),
    }
}

fn check_integer(
    request: &Map<String, Value>,
    field: &str,
    min: i128,
    max: i128,
    problems: &mut Vec<Invalid>,
) {
    let whole = |number: &serde_json::Number| {
        number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from))
    };
    match request.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Number(number))
            if whole(number).is_some_and(|value| (min..=max).contains(&value)) => {}
        Some(other) => problems.push(invalid(
            field,
            format!("must be an integer from {min} to {max}, got {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(body: Value) -> String {
        check_request(&body)
            .map(|_| String::new())
            .unwrap_or_else(|error| error.message)
    }

    fn base() -> Value {
        json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]})
    }

    fn with(field: &str, value: Value) -> Value {
        let mut body = base();
        body[field] = value;
        body
    }

    #[test]
    fn kept_tool_lists_answer_like_fresh_ones() {
        let tool = |kind: &str| {
            json!([{"type": "function", "function": {"name": "ping_kept", "parameters":
                {"type": "object", "properties": {"n": {"type": kind}}, "required": ["n"]}}}])
        };
        for _ in 0..2 {
            let tools = compile_tools(&tool("integer")).unwrap();
            assert!(tools.check_call("ping_kept", r#"{"n": 1}"#).is_ok());
            assert!(tools.check_call("ping_kept", r#"{"n": "one"}"#).is_err());
            // Same name, another schema: a different list, not the kept one.
            let tools = compile_tools(&tool("string")).unwrap();
            assert!(tools.check_call("ping_kept", r#"{"n": "one"}"#).is_ok());
            // A list with problems is reported every time.
            assert!(
                problems(with("tools", tool("integr"))).starts_with("tools[0].function.parameters")
            );
        }
    }

    #[test]
    fn a_plain_request_passes() {
        assert_eq!(problems(base()), "");
    }

    #[test]
    fn each_rule_names_its_parameter() {
        assert!(problems(with("model", json!(""))).starts_with("model:"));
        assert!(problems(with("messages", json!([]))).starts_with("messages: at least one"));
        assert!(
            problems(with("messages", json!([{"role": "robot", "content": "x"}])))
                .starts_with("messages[0].role: must be one of")
        );
        assert!(
            problems(with("messages", json!([{"role": "tool", "content": "x"}])))
                .contains("messages[0].tool_call_id: a tool message needs")
        );
        assert!(
            problems(with(
                "messages",
                json!([{"role": "tool", "tool_call_id": "call_1", "content": "x"}])
            ))
            .contains("does not answer a tool call")
        );
        assert!(
            problems(with(
                "messages",
                json!([{"role": "assistant", "content": null}])
            ))
            .contains("needs content or tool_calls")
        );
        assert!(
            problems(with("temperature", json!(2.5)))
                .starts_with("temperature: must be a number from 0 to 2")
        );
        assert!(problems(with("top_p", json!(-0.1))).starts_with("top_p:"));
        assert!(
            problems(with("max_tokens", json!(0)))
                .starts_with("max_tokens: must be a positive integer")
        );
        assert!(
            problems(with("max_completion_tokens", json!(1.5)))
                .starts_with("max_completion_tokens:")
        );
        assert!(
            problems(with("stream_options", json!({"include_usage": true})))
                .starts_with("stream_options: stream_options is only allowed")
        );
        assert!(
            problems(with("tool_choice", json!("sometimes"))).starts_with("tool_choice: must be")
        );
        assert!(
            problems(with("tool_choice", json!("required"))).contains("needs at least one tool")
        );
        assert!(
            problems(with(
                "tool_choice",
                json!({"type": "function", "function": {"name": "nope"}})
            ))
            .contains("not one of the request's tools")
        );
        assert!(problems(with("tools", json!([{"type": "function", "function": {"name": "bad name", "parameters": {"type": "object"}}}]))).contains("tools[0].function.name:"));
    }

    #[test]
    fn the_standard_fields_are_checked_before_they_are_forwarded() {
        for (field, value, param) in [
            ("seed", json!(1.5e300), "seed"),
            ("seed", json!("7"), "seed"),
            ("top_k", json!(-1), "top_k"),
            ("top_logprobs", json!(21), "top_logprobs"),
            ("logprobs", json!("yes"), "logprobs"),
            ("frequency_penalty", json!(2.5), "frequency_penalty"),
            ("presence_penalty", json!(-3), "presence_penalty"),
            ("logit_bias", json!({"50256": 101}), "logit_bias.50256"),
            ("logit_bias", json!([1]), "logit_bias"),
            ("user", json!(7), "user"),
            ("metadata", json!({"k": 1}), "metadata"),
            ("service_tier", json!(true), "service_tier"),
            ("reasoning_effort", json!("max"), "reasoning_effort"),
            (
                "response_format",
                json!({"type": "yaml"}),
                "response_format.type",
            ),
            (
                "response_format",
                json!({"type": "json_schema"}),
                "response_format.json_schema",
            ),
            (
                "response_format",
                json!({"type": "json_schema", "json_schema": {"schema": {}}}),
                "response_format.json_schema.name",
            ),
            ("n", json!(2), "n"),
        ] {
            let message = problems(with(field, value.clone()));
            assert!(
                message.starts_with(&format!("{param}: ")),
                "{field} = {value}: {message}"
            );
        }
        let mut body = base();
        for (field, value) in [
            ("seed", json!(-42)),
            ("top_k", json!(40)),
            ("top_logprobs", json!(3)),
            ("logprobs", json!(true)),
            ("frequency_penalty", json!(0.5)),
            ("logit_bias", json!({"50256": -100})),
            ("user", json!("u-1")),
            ("metadata", json!({"team": "a"})),
            ("service_tier", json!("auto")),
            ("reasoning_effort", json!("low")),
            (
                "response_format",
                json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}),
            ),
        ] {
            body[field] = value;
        }
        assert_eq!(problems(body), "");
    }

    #[test]
    fn tool_history_that_answers_a_call_passes() {
        let body = with(
            "messages",
            json!([
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
            ]),
        );
        assert_eq!(problems(body), "");
    }

    #[test]
    fn every_problem_is_listed_and_unknown_fields_pass() {
        let mut body = with("temperature", json!(9));
        body["top_p"] = json!(7);
        body["reasoning_effort"] = json!("high");
        let message = problems(body);
        assert!(
            message.contains("temperature:")
                && message.contains("top_p:")
                && !message.contains("reasoning_effort"),
            "{message}"
        );
    }
}
