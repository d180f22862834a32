//! Checks a chat-completions request, read into [`ChatBody`], before anything is sent
//! anywhere: every rule that OpenAI enforces, every problem listed, each with the parameter
//! it is about; then turns it into the pipeline's request.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use switchboard_tools::{Content, Message, ToolCall, Toolset, quote, quote_value};
use switchboard_wire::openai::Stop;
use switchboard_wire::{ChatRequest, REASONING_EFFORTS, ToolChoice};

use super::request::{
    ChatBody, ClientMessage, ClientToolCall, ClientToolChoice, Role, StreamOptions,
};
use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, number, rejection};
use switchboard_pipeline::compile_tools;
use switchboard_wire::mcp::{McpServerRequest, OpenAiTool};
use switchboard_wire::path::PathStyle;

/// The request in the pipeline's model, and what presenting its answer needs.
#[derive(Debug)]
pub struct Checked {
    pub request: ChatRequest,
    pub include_usage: bool,
    /// The request's tools compiled under the `api` profile, to check the model's calls.
    pub tools: Toolset,
    /// The `{"type": "mcp"}` servers of `tools`, for the gateway to run.
    pub mcp: Vec<McpServerRequest>,
}

/// Checks a request read into its types. All problems are reported in one 400.
pub fn check_request(body: ChatBody) -> Result<Checked, ApiError> {
    let ChatBody {
        model,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        temperature,
        top_p,
        max_tokens,
        max_completion_tokens,
        stop,
        stream,
        stream_options,
        reasoning_effort,
        response_format,
        seed,
        top_k,
        extra,
    } = body;
    let mut problems = Vec::new();
    let model = fields::model(model, &mut problems);
    let messages = check_messages(messages, &mut problems);
    let (mcp, tools, positions) = take_mcp_tools(tools, &mut problems);
    let toolset = check_tools(tools.as_ref(), &positions, &mut problems);
    let has_tools = tools
        .as_ref()
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let tool_choice = check_tool_choice(tool_choice, has_tools, &toolset, &mut problems);
    let stream = fields::boolean(stream, "stream", &mut problems);
    let include_usage = matches!(
        &stream_options,
        Sent::Given(StreamOptions {
            include_usage: Some(true)
        })
    );
    if !matches!(stream_options, Sent::Absent) && !stream {
        problems.push(invalid(
            "stream_options",
            "stream_options is only allowed when stream is true",
        ));
    }
    let temperature = number(temperature, "temperature", 0.0, 2.0, &mut problems);
    let top_p = number(top_p, "top_p", 0.0, 1.0, &mut problems);
    let max_tokens = fields::token_count(max_tokens, "max_tokens", &mut problems);
    let max_completion_tokens = fields::token_count(
        max_completion_tokens,
        "max_completion_tokens",
        &mut problems,
    );
    let stop = stop.check(
        "stop",
        "must be a string or an array of strings",
        |_| true,
        &mut problems,
    );
    let seed = seed.check(
        "seed",
        &format!("must be an integer from {} to {}", i64::MIN, i64::MAX),
        |_| true,
        &mut problems,
    );
    let top_k = top_k.check(
        "top_k",
        &format!("must be an integer from 0 to {}", u32::MAX),
        |_| true,
        &mut problems,
    );
    let reasoning_effort = reasoning_effort.check(
        "reasoning_effort",
        &format!("must be one of {}", REASONING_EFFORTS.join(", ")),
        |effort| REASONING_EFFORTS.contains(&effort.as_str()),
        &mut problems,
    );
    check_standard_fields(&extra, &mut problems);
    check_response_format(response_format.as_ref(), &mut problems);
    Sent::<u64>::field(&extra, "n").check(
        "n",
        "only n = 1 is supported",
        |n| *n == 1,
        &mut problems,
    );
    let parallel_tool_calls = parallel_tool_calls.check(
        "parallel_tool_calls",
        "expected a boolean",
        |_| true,
        &mut problems,
    );
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    let tools = toolset.unwrap_or_default();
    Ok(Checked {
        request: ChatRequest {
            model,
            messages,
            tools: tools.definitions().cloned().collect(),
            tool_choice,
            parallel_tool_calls,
            temperature,
            top_p,
            max_tokens: max_completion_tokens.or(max_tokens),
            stop: match stop {
                None => Vec::new(),
                Some(Stop::One(stop)) => vec![stop],
                Some(Stop::Many(stops)) => stops,
            },
            stream,
            reasoning_effort,
            response_format,
            seed,
            top_k,
            extra,
        },
        include_usage,
        tools,
        mcp,
    })
}

/// The messages in the pipeline's model; problems are recorded, each at its message.
fn check_messages(
    messages: Option<Vec<ClientMessage>>,
    problems: &mut Vec<Invalid>,
) -> Vec<Message> {
    let messages = match messages {
        Some(messages) if !messages.is_empty() => messages,
        _ => {
            problems.push(invalid("messages", "at least one message is required"));
            return Vec::new();
        }
    };
    let mut call_ids: Vec<String> = Vec::new();
    let mut checked = Vec::with_capacity(messages.len());
    for (index, message) in messages.into_iter().enumerate() {
        let at = |field: &str| format!("messages[{index}].{field}");
        let ClientMessage {
            role,
            content,
            name,
            tool_calls,
            tool_call_id,
            reasoning_content,
        } = message;
        let role = match role {
            Sent::Given(role) => role,
            other => {
                problems.push(invalid(
                    at("role"),
                    format!(
                        "must be one of {}, got {}",
                        Role::NAMES.join(", "),
                        other.quoted()
                    ),
                ));
                continue;
            }
        };
        if let Some(Content::Parts(parts)) = &content {
            check_parts(parts, &at("content"), problems);
        }
        let needs_content = |problems: &mut Vec<Invalid>, content: Option<Content>, role: &str| {
            if content.is_none() {
                problems.push(invalid(
                    at("content"),
                    format!("a {role} message needs content"),
                ));
            }
            content
        };
        let message = match role {
            Role::Assistant => {
                if content.is_none() && tool_calls.is_none() {
                    problems.push(invalid(
                        at("content"),
                        "an assistant message needs content or tool_calls",
                    ));
                }
                let tool_calls = check_assistant_calls(
                    tool_calls.unwrap_or_default(),
                    &at("tool_calls"),
                    &mut call_ids,
                    problems,
                );
                Some(Message::Assistant {
                    content,
                    reasoning_content,
                    reasoning_signature: None,
                    tool_calls,
                    name,
                })
            }
            Role::Tool => {
                let answered = match tool_call_id {
                    None => {
                        problems.push(invalid(
                            at("tool_call_id"),
                            "a tool message needs the tool_call_id it answers",
                        ));
                        None
                    }
                    Some(id) if !call_ids.contains(&id) => {
                        problems.push(invalid(
                            at("tool_call_id"),
                            format!(
                                "{} does not answer a tool call of an earlier assistant message",
                                quote(&id)
                            ),
                        ));
                        None
                    }
                    Some(id) => Some(id),
                };
                let content = needs_content(problems, content, "tool");
                answered
                    .zip(content)
                    .map(|(tool_call_id, content)| Message::Tool {
                        tool_call_id,
                        content,
                    })
            }
            Role::System => needs_content(problems, content, "system")
                .map(|content| Message::System { content, name }),
            Role::Developer => needs_content(problems, content, "developer")
                .map(|content| Message::Developer { content, name }),
            Role::User => needs_content(problems, content, "user")
                .map(|content| Message::User { content, name }),
        };
        checked.extend(message);
    }
    checked
}

/// Parts each with a `type`; text parts carry their text as a string.
fn check_parts(parts: &[Value], at: &str, problems: &mut Vec<Invalid>) {
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

fn check_assistant_calls(
    calls: Vec<ClientToolCall>,
    at: &str,
    call_ids: &mut Vec<String>,
    problems: &mut Vec<Invalid>,
) -> Vec<ToolCall> {
    let mut checked = Vec::with_capacity(calls.len());
    for (index, call) in calls.into_iter().enumerate() {
        let ClientToolCall { id, kind, function } = call;
        match kind {
            Sent::Given(kind) if kind == "function" => {}
            Sent::Absent => problems.push(invalid(
                format!("{at}[{index}].type"),
                "must be \"function\", got nothing",
            )),
            other => {
                other.check(
                    &format!("{at}[{index}].type"),
                    "must be \"function\"",
                    |_| false,
                    problems,
                );
            }
        }
        if let Some(id) = &id {
            call_ids.push(id.clone());
        } else {
            problems.push(invalid(
                format!("{at}[{index}].id"),
                "each tool call needs an id",
            ));
        }
        let (name, arguments) =
            function.map_or((None, None), |function| (function.name, function.arguments));
        if name.is_none() {
            problems.push(invalid(
                format!("{at}[{index}].function.name"),
                "each tool call needs a function name",
            ));
        }
        if let (Some(id), Some(name)) = (id, name) {
            checked.push(ToolCall {
                id,
                name,
                arguments: arguments.unwrap_or_default(),
            });
        }
    }
    checked
}

/// Sorts `tools`: the `{"type": "mcp"}` entries, as read, are servers for the gateway to
/// run, not functions for the model. Returns them, the other entries as one list (none
/// when no entry is left), and the position in `tools` of each, by which its problems are
/// named.
fn take_mcp_tools(
    tools: Option<Vec<OpenAiTool>>,
    problems: &mut Vec<Invalid>,
) -> (Vec<McpServerRequest>, Option<Value>, Vec<usize>) {
    let mut servers = Vec::new();
    let mut left = Vec::new();
    let mut positions = Vec::new();
    for (index, tool) in tools.into_iter().flatten().enumerate() {
        match tool {
            OpenAiTool::Mcp(tool) => {
                let path = PathStyle::Brackets.item("tools", index);
                let read = tool
                    .at(&path, PathStyle::Brackets)
                    .and_then(|tool| McpServerRequest::from_openai(tool, &path));
                match read {
                    Ok(server) => servers.push(server),
                    Err(error) => problems.push(fields::converted(error)),
                }
            }
            // The gateway's tool search, read in `tool_search.rs`: no function.
            OpenAiTool::Other(tool)
                if tool.get("type").and_then(Value::as_str) == Some("tool_search") => {}
            OpenAiTool::Other(tool) => {
                positions.push(index);
                left.push(tool);
            }
        }
    }
    let left = (!left.is_empty()).then_some(Value::Array(left));
    (servers, left, positions)
}

/// The function tools compiled; a problem is named at the tool's place in the request
/// (`positions`: where each tool of the list stood).
fn check_tools(
    tools: Option<&Value>,
    positions: &[usize],
    problems: &mut Vec<Invalid>,
) -> Option<Toolset> {
    match tools {
        None | Some(Value::Null) => None,
        Some(list) => match compile_tools(list) {
            Ok(toolset) => Some(toolset),
            Err(found) => {
                for problem in found.0 {
                    problems.push(invalid(
                        tool_place(&problem.path, positions),
                        problem.message,
                    ));
                }
                None
            }
        },
    }
}

/// A pointer into the compiled list (`/1/function/name`) as a place in `tools`.
fn tool_place(pointer: &str, positions: &[usize]) -> String {
    let mut segments = pointer.trim_start_matches('/').splitn(2, '/');
    let index = segments
        .next()
        .and_then(|index| index.parse::<usize>().ok());
    match index.and_then(|index| positions.get(index)) {
        Some(&position) => {
            let rest = segments
                .next()
                .map_or(String::new(), |rest| format!("/{rest}"));
            PathStyle::Brackets.pointer(&PathStyle::Brackets.item("tools", position), &rest)
        }
        None => PathStyle::Brackets.pointer("tools", pointer),
    }
}

fn check_tool_choice(
    choice: Sent<ClientToolChoice>,
    has_tools: bool,
    tools: &Option<Toolset>,
    problems: &mut Vec<Invalid>,
) -> Option<ToolChoice> {
    match choice {
        Sent::Absent => None,
        Sent::Given(ClientToolChoice::Mode(mode)) if mode == "none" => Some(ToolChoice::None),
        Sent::Given(ClientToolChoice::Mode(mode)) if mode == "auto" => Some(ToolChoice::Auto),
        Sent::Given(ClientToolChoice::Mode(mode)) if mode == "required" => {
            if !has_tools {
                problems.push(invalid(
                    "tool_choice",
                    "\"required\" needs at least one tool in tools",
                ));
            }
            Some(ToolChoice::Required)
        }
        Sent::Given(ClientToolChoice::Named { kind, function }) if kind == "function" => {
            match function.and_then(|function| function.name) {
                None => {
                    problems.push(invalid(
                        "tool_choice.function.name",
                        "name the function the model must call",
                    ));
                    None
                }
                Some(name) => {
                    let known = tools
                        .as_ref()
                        .is_some_and(|tools| tools.get(&name).is_some());
                    if !known
                        && problems
                            .iter()
                            .all(|problem| !problem.param.starts_with("tools"))
                    {
                        problems.push(invalid(
                            "tool_choice.function.name",
                            format!("{} is not one of the request's tools", quote(&name)),
                        ));
                    }
                    Some(ToolChoice::Function(name))
                }
            }
        }
        other => {
            other.check(
                "tool_choice",
                "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}",
                |_| false,
                problems,
            );
            None
        }
    }
}

/// The OpenAI API's other request fields, forwarded to backends as sent: checked here so
/// that a mistake is a 400 naming the field, not a backend's error or a silent drop.
fn check_standard_fields(extra: &Map<String, Value>, problems: &mut Vec<Invalid>) {
    for field in ["frequency_penalty", "presence_penalty"] {
        number(Sent::field(extra, field), field, -2.0, 2.0, problems);
    }
    Sent::<u64>::field(extra, "top_logprobs").check(
        "top_logprobs",
        "must be an integer from 0 to 20",
        |count| *count <= 20,
        problems,
    );
    fields::boolean(Sent::field(extra, "logprobs"), "logprobs", problems);
    for field in ["user", "service_tier"] {
        Sent::<String>::field(extra, field).check(field, "expected a string", |_| true, problems);
    }
    match Sent::<Map<String, Value>>::field(extra, "logit_bias") {
        Sent::Given(biases) => {
            for (token, bias) in biases {
                Sent::<f64>::of(bias).check(
                    &format!("logit_bias.{token}"),
                    "must be a number from -100 to 100",
                    |bias| (-100.0..=100.0).contains(bias),
                    problems,
                );
            }
        }
        other => {
            other.check(
                "logit_bias",
                "expected an object of token ids and biases",
                |_| true,
                problems,
            );
        }
    }
    Sent::<BTreeMap<String, String>>::field(extra, "metadata").check(
        "metadata",
        "expected an object of strings",
        |_| true,
        problems,
    );
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
                quote_value(format.get("type").unwrap_or(&Value::Null))
            ),
        )),
    }
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
    fn a_message_or_call_must_be_an_object() {
        for (messages, param) in [
            (json!([["user", "hi"]]), "messages[0]:"),
            (
                json!([{"role": "user", "content": "hi"}, 5]),
                "messages[1]:",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [["call_1", "function"]]}]),
                "messages[0].tool_calls[0]:",
            ),
        ] {
            let message = problems(with("messages", messages));
            assert!(
                message.starts_with(param) && message.contains("expected an object"),
                "{message}"
            );
        }
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
