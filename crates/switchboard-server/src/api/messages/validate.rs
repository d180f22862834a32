//! Checks a Messages request before anything is sent anywhere, as strictly as the chat
//! completions front-end does: every problem listed in one 400, each named by its path the
//! way Anthropic names them (`messages.3.content.0.tool_use_id`). What real clients send
//! beyond the fields checked here (`metadata`, `context_management`, `cache_control`, keys
//! added per message) is accepted and left for the translation to keep or drop.

use serde_json::{Value, json};
use switchboard_tools::{Toolset, quote_value};

use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, number, rejection};
use switchboard_pipeline::compile_converted;

/// Which endpoint the body came to: `count_tokens` takes no `max_tokens` or `stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Messages,
    CountTokens,
}

/// What validation learned that later steps need.
#[derive(Debug)]
pub struct Checked {
    pub model: String,
    pub stream: bool,
    /// Every custom tool compiled under the `api` profile, to check the model's calls
    /// (deferred ones too: the model may call them once a tool search has shown them).
    pub tools: Toolset,
    /// Custom tools with `defer_loading`: checked against, but not shown to the model.
    pub deferred: Vec<String>,
    /// Anthropic's own tools (web search, code execution, …), which cannot run here.
    pub dropped: Vec<String>,
}

/// Validates a parsed request body. All problems are reported in one 400.
pub fn check_request(body: &Value, endpoint: Endpoint) -> Result<Checked, ApiError> {
    let request = fields::object(body)?;
    let mut problems = Vec::new();
    let model = fields::model(Sent::field(request, "model"), &mut problems);
    match (Sent::field(request, "max_tokens"), endpoint) {
        (Sent::Absent, Endpoint::CountTokens) => {}
        (Sent::Absent, Endpoint::Messages) => {
            problems.push(invalid("max_tokens", "Field required"))
        }
        (sent, _) => {
            fields::token_count(sent, "max_tokens", &mut problems);
        }
    }
    check_system(request.get("system"), &mut problems);
    check_messages(request.get("messages"), &mut problems);
    let tools = check_tools(request.get("tools"), &mut problems);
    check_tool_choice(request.get("tool_choice"), &tools, &mut problems);
    let stream = fields::boolean(Sent::field(request, "stream"), "stream", &mut problems);
    number(
        Sent::field(request, "temperature"),
        "temperature",
        0.0,
        1.0,
        &mut problems,
    );
    number(
        Sent::field(request, "top_p"),
        "top_p",
        0.0,
        1.0,
        &mut problems,
    );
    match request.get("top_k") {
        None | Some(Value::Null) => {}
        Some(Value::Number(number))
            if number
                .as_u64()
                .is_some_and(|value| value > 0 && value <= u64::from(u32::MAX)) => {}
        Some(other) => problems.push(invalid(
            "top_k",
            format!("must be a positive integer, got {}", quote_value(other)),
        )),
    }
    match request.get("stop_sequences") {
        None | Some(Value::Null) => {}
        Some(Value::Array(stops)) if stops.iter().all(Value::is_string) => {}
        Some(other) => problems.push(invalid(
            "stop_sequences",
            format!("must be an array of strings, got {}", quote_value(other)),
        )),
    }
    for field in ["metadata", "thinking", "output_config"] {
        match request.get(field) {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(other) => problems.push(invalid(
                field,
                format!("expected an object, got {}", quote_value(other)),
            )),
        }
    }
    match request
        .get("metadata")
        .and_then(|metadata| metadata.get("user_id"))
    {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(other) => problems.push(invalid(
            "metadata.user_id",
            format!("expected a string, got {}", quote_value(other)),
        )),
    }
    if problems.is_empty() {
        let (tools, deferred, dropped) = tools.map_or_else(Default::default, |tools| {
            (tools.compiled, tools.deferred, tools.dropped)
        });
        Ok(Checked {
            model,
            stream,
            tools,
            deferred,
            dropped,
        })
    } else {
        Err(rejection(&problems))
    }
}

fn check_system(system: Option<&Value>, problems: &mut Vec<Invalid>) {
    match system {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                let at = format!("system.{index}");
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => check_text(block, &at, problems),
                    _ => problems.push(invalid(
                        format!("{at}.type"),
                        "system blocks must be text blocks",
                    )),
                }
            }
        }
        Some(other) => problems.push(invalid(
            "system",
            format!(
                "must be a string or an array of text blocks, got {}",
                quote_value(other)
            ),
        )),
    }
}

fn check_text(block: &Value, at: &str, problems: &mut Vec<Invalid>) {
    if !block.get("text").is_some_and(Value::is_string) {
        problems.push(invalid(
            format!("{at}.text"),
            "a text block needs its text as a string",
        ));
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
    // The tool_use ids of the last assistant turn: results may answer them until the next
    // one (consecutive user messages are one turn, as Anthropic merges them).
    let mut offered: Vec<&str> = Vec::new();
    let last = messages.len() - 1;
    for (position, message) in messages.iter().enumerate() {
        let at = format!("messages.{position}");
        let Value::Object(message) = message else {
            problems.push(invalid(at, "each message must be an object"));
            continue;
        };
        let role = message.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "assistant" | "system")) {
            problems.push(invalid(
                format!("{at}.role"),
                format!(
                    "must be \"user\", \"assistant\" or \"system\", got {}",
                    message.get("role").map_or("nothing".into(), quote_value)
                ),
            ));
            continue;
        }
        let role = role.unwrap_or_default();
        let blocks = match message.get("content") {
            Some(Value::String(text)) => {
                if text.is_empty() && !(role == "assistant" && position == last) {
                    problems.push(invalid(
                        format!("{at}.content"),
                        "must not be empty (only a final assistant message may be)",
                    ));
                }
                if role == "assistant" {
                    offered.clear();
                }
                continue;
            }
            Some(Value::Array(blocks)) => blocks,
            other => {
                problems.push(invalid(
                    format!("{at}.content"),
                    format!(
                        "must be a string or an array of content blocks, got {}",
                        other.map_or("nothing".into(), quote_value)
                    ),
                ));
                continue;
            }
        };
        if blocks.is_empty() && !(role == "assistant" && position == last) {
            problems.push(invalid(
                format!("{at}.content"),
                "must not be empty (only a final assistant message may be)",
            ));
        }
        match role {
            "assistant" => {
                offered = check_assistant_blocks(blocks, &at, problems);
            }
            "user" => check_user_blocks(blocks, &at, &offered, problems),
            _ => {
                for (index, block) in blocks.iter().enumerate() {
                    let at = format!("{at}.content.{index}");
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => check_text(block, &at, problems),
                        _ => problems.push(invalid(
                            format!("{at}.type"),
                            "a system message holds text blocks only",
                        )),
                    }
                }
            }
        }
    }
}

/// Checks an assistant turn; returns the ids of its tool_use blocks.
fn check_assistant_blocks<'a>(
    blocks: &'a [Value],
    at: &str,
    problems: &mut Vec<Invalid>,
) -> Vec<&'a str> {
    let mut ids = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let at = format!("{at}.content.{index}");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => check_text(block, &at, problems),
            Some("thinking") => {
                if !block.get("thinking").is_some_and(Value::is_string) {
                    problems.push(invalid(
                        format!("{at}.thinking"),
                        "a thinking block needs its thinking as a string",
                    ));
                }
                if !block
                    .get("signature")
                    .is_none_or(|signature| signature.is_string() || signature.is_null())
                {
                    problems.push(invalid(format!("{at}.signature"), "expected a string"));
                }
            }
            Some("redacted_thinking") => {
                if !block.get("data").is_some_and(Value::is_string) {
                    problems.push(invalid(
                        format!("{at}.data"),
                        "a redacted_thinking block needs its data as a string",
                    ));
                }
            }
            Some("tool_use") => {
                match block.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => {
                        if ids.contains(&id) {
                            problems.push(invalid(
                                format!("{at}.id"),
                                format!("\"{id}\" is used by an earlier tool_use of this message"),
                            ));
                        }
                        ids.push(id);
                    }
                    _ => problems.push(invalid(format!("{at}.id"), "a tool_use block needs an id")),
                }
                if !block.get("name").is_some_and(Value::is_string) {
                    problems.push(invalid(
                        format!("{at}.name"),
                        "a tool_use block needs the tool's name",
                    ));
                }
                if !block.get("input").is_some_and(Value::is_object) {
                    problems.push(invalid(
                        format!("{at}.input"),
                        "a tool_use block's input must be an object",
                    ));
                }
            }
            other => problems.push(unsupported_block(&at, other, "an assistant message")),
        }
    }
    ids
}

fn check_user_blocks(blocks: &[Value], at: &str, offered: &[&str], problems: &mut Vec<Invalid>) {
    for (index, block) in blocks.iter().enumerate() {
        let at = format!("{at}.content.{index}");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => check_text(block, &at, problems),
            Some("image") => check_image(block, &at, problems),
            Some("tool_result") => {
                match block.get("tool_use_id").and_then(Value::as_str) {
                    None => problems.push(invalid(
                        format!("{at}.tool_use_id"),
                        "a tool_result block needs the tool_use_id it answers",
                    )),
                    Some(id) if !offered.contains(&id) => problems.push(invalid(
                        format!("{at}.tool_use_id"),
                        format!(
                            "\"{id}\" does not answer a tool_use block of the previous assistant message"
                        ),
                    )),
                    Some(_) => {}
                }
                match block.get("content") {
                    None | Some(Value::Null) | Some(Value::String(_)) => {}
                    Some(Value::Array(parts)) => {
                        for (part_index, part) in parts.iter().enumerate() {
                            let at = format!("{at}.content.{part_index}");
                            match part.get("type").and_then(Value::as_str) {
                                Some("text") => check_text(part, &at, problems),
                                Some("image") => check_image(part, &at, problems),
                                other => {
                                    problems.push(unsupported_block(&at, other, "a tool_result"))
                                }
                            }
                        }
                    }
                    Some(other) => problems.push(invalid(
                        format!("{at}.content"),
                        format!(
                            "must be a string or an array of text and image blocks, got {}",
                            quote_value(other)
                        ),
                    )),
                }
                if !block
                    .get("is_error")
                    .is_none_or(|flag| flag.is_boolean() || flag.is_null())
                {
                    problems.push(invalid(format!("{at}.is_error"), "expected a boolean"));
                }
            }
            other => problems.push(unsupported_block(&at, other, "a user message")),
        }
    }
}

fn unsupported_block(at: &str, kind: Option<&str>, place: &str) -> Invalid {
    match kind {
        None => invalid(format!("{at}.type"), "each content block needs a type"),
        Some(kind) => invalid(
            format!("{at}.type"),
            format!("\"{kind}\" blocks are not supported in {place} by this gateway"),
        ),
    }
}

/// `{"type": "base64", "media_type", "data"}` or `{"type": "url", "url"}`.
fn check_image(block: &Value, at: &str, problems: &mut Vec<Invalid>) {
    let source = block.get("source");
    let fields: &[&str] = match source.and_then(|source| source.get("type")?.as_str()) {
        Some("base64") => &["media_type", "data"],
        Some("url") => &["url"],
        _ => {
            problems.push(invalid(
                format!("{at}.source.type"),
                "an image source must be of type \"base64\" or \"url\"",
            ));
            return;
        }
    };
    for field in fields {
        if !source.is_some_and(|source| source.get(*field).is_some_and(Value::is_string)) {
            problems.push(invalid(format!("{at}.source.{field}"), "expected a string"));
        }
    }
}

/// The request's tools, sorted out.
#[derive(Debug)]
struct Tools {
    compiled: Toolset,
    /// Names of custom tools.
    custom: Vec<String>,
    deferred: Vec<String>,
    dropped: Vec<String>,
}

fn check_tools(tools: Option<&Value>, problems: &mut Vec<Invalid>) -> Option<Tools> {
    let original = tools.filter(|tools| !tools.is_null())?;
    let Value::Array(list) = original else {
        problems.push(invalid(
            "tools",
            format!("expected an array, got {original}"),
        ));
        return None;
    };
    // The position in `tools` of each custom tool, in the order they are compiled.
    let mut positions = Vec::new();
    let mut tools = Tools {
        compiled: Toolset::default(),
        custom: Vec::new(),
        deferred: Vec::new(),
        dropped: Vec::new(),
    };
    let before = problems.len();
    for (index, tool) in list.iter().enumerate() {
        let at = || format!("tools.{index}");
        let Value::Object(tool) = tool else {
            problems.push(invalid(at(), "each tool must be an object"));
            continue;
        };
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            problems.push(invalid(format!("{}.name", at()), "each tool needs a name"));
            continue;
        };
        match tool.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(kind)) if kind == "custom" => {}
            Some(Value::String(_)) => {
                tools.dropped.push(name.to_owned());
                continue;
            }
            Some(other) => {
                problems.push(invalid(
                    format!("{}.type", at()),
                    format!("expected a string, got {}", quote_value(other)),
                ));
                continue;
            }
        }
        if !tool.get("input_schema").is_some_and(Value::is_object) {
            problems.push(invalid(
                format!("{}.input_schema", at()),
                "a custom tool needs its input_schema, a JSON Schema object",
            ));
            continue;
        }
        if tool.get("defer_loading") == Some(&Value::Bool(true)) {
            tools.deferred.push(name.to_owned());
        }
        tools.custom.push(name.to_owned());
        positions.push(index);
    }
    if problems.len() > before {
        return None;
    }
    // In OpenAI's function shape, built only for a list not compiled before.
    let functions = || {
        Value::Array(
            positions
                .iter()
                .map(|&index| {
                    let tool = &list[index];
                    let mut function =
                        json!({"name": tool["name"], "parameters": tool["input_schema"]});
                    if let Some(description) =
                        tool.get("description").filter(|value| !value.is_null())
                    {
                        function["description"] = description.clone();
                    }
                    json!({"type": "function", "function": function})
                })
                .collect(),
        )
    };
    match compile_converted("anthropic", original, functions) {
        Ok(compiled) => tools.compiled = compiled,
        Err(found) => {
            for problem in found.0 {
                problems.push(invalid(
                    tool_path(&problem.path, &positions),
                    problem.message,
                ));
            }
            return None;
        }
    }
    Some(tools)
}

/// A problem's pointer into the compiled function list as a path into `tools`:
/// `/1/function/parameters/type` → `tools.3.input_schema.type`.
fn tool_path(pointer: &str, positions: &[usize]) -> String {
    let mut segments = pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"));
    let index = segments
        .next()
        .and_then(|segment| segment.parse::<usize>().ok())
        .and_then(|compiled| positions.get(compiled).copied());
    let mut path = match index {
        Some(index) => format!("tools.{index}"),
        None => "tools".to_owned(),
    };
    for segment in segments.filter(|segment| segment != "function") {
        path.push('.');
        path.push_str(if segment == "parameters" {
            "input_schema"
        } else {
            &segment
        });
    }
    path
}

fn check_tool_choice(choice: Option<&Value>, tools: &Option<Tools>, problems: &mut Vec<Invalid>) {
    let Some(choice) = choice.filter(|choice| !choice.is_null()) else {
        return;
    };
    let Value::Object(choice) = choice else {
        problems.push(invalid(
            "tool_choice",
            format!("expected an object such as {{\"type\": \"auto\"}}, got {choice}"),
        ));
        return;
    };
    if !choice
        .get("disable_parallel_tool_use")
        .is_none_or(|flag| flag.is_boolean() || flag.is_null())
    {
        problems.push(invalid(
            "tool_choice.disable_parallel_tool_use",
            "expected a boolean",
        ));
    }
    let custom = tools.as_ref().map_or(&[][..], |tools| &tools.custom[..]);
    let dropped = tools.as_ref().map_or(&[][..], |tools| &tools.dropped[..]);
    let tools_broken = problems
        .iter()
        .any(|problem| problem.param.starts_with("tools"));
    match choice.get("type").and_then(Value::as_str) {
        Some("auto" | "none") => {}
        Some("any") => {
            if custom.is_empty() && !tools_broken {
                let message = if dropped.is_empty() {
                    "\"any\" needs at least one tool in tools".to_owned()
                } else {
                    format!(
                        "\"any\" would force a server tool ({}), which cannot run on this gateway",
                        dropped.join(", ")
                    )
                };
                problems.push(invalid("tool_choice.type", message));
            }
        }
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            None => problems.push(invalid(
                "tool_choice.name",
                "name the tool the model must use",
            )),
            Some(name) if dropped.iter().any(|server| server == name) => problems.push(invalid(
                "tool_choice.name",
                format!("\"{name}\" is a server tool, which cannot run on this gateway"),
            )),
            Some(name) if !custom.iter().any(|tool| tool == name) && !tools_broken => problems
                .push(invalid(
                    "tool_choice.name",
                    format!("\"{name}\" is not one of the request's tools"),
                )),
            Some(_) => {}
        },
        _ => problems.push(invalid(
            "tool_choice.type",
            format!(
                "must be \"auto\", \"any\", \"tool\" or \"none\", got {}",
                choice.get("type").map_or("nothing".into(), quote_value)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: Value) -> String {
        check_request(&body, Endpoint::Messages)
            .map(|_| String::new())
            .unwrap_or_else(|error| error.message)
    }

    fn base() -> Value {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]})
    }

    fn with(field: &str, value: Value) -> Value {
        let mut body = base();
        body[field] = value;
        body
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "description": "d", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}})
    }

    #[test]
    fn a_plain_request_passes_and_count_tokens_needs_no_max_tokens() {
        assert_eq!(problems(base()), "");
        let mut body = base();
        body.as_object_mut().unwrap().remove("max_tokens");
        assert!(problems(body.clone()).starts_with("max_tokens: Field required"));
        assert!(check_request(&body, Endpoint::CountTokens).is_ok());
    }

    #[test]
    fn each_rule_names_its_field_the_way_anthropic_does() {
        let history = |result: Value| {
            with(
                "messages",
                json!([
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"}]},
                    {"role": "assistant", "content": "It rains."},
                    {"role": "user", "content": [result]}
                ]),
            )
        };
        assert!(
            problems(history(json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"})))
                .starts_with("messages.4.content.0.tool_use_id: \"toolu_1\" does not answer a tool_use block of the previous assistant message")
        );
        assert!(problems(with("max_tokens", json!(0))).starts_with("max_tokens: must be"));
        assert!(
            problems(with("temperature", json!(1.5)))
                .starts_with("temperature: must be a number from 0 to 1")
        );
        assert!(problems(with("top_k", json!(-1))).starts_with("top_k:"));
        assert!(
            problems(with("messages", json!([{"role": "tool", "content": "x"}])))
                .starts_with("messages.0.role:")
        );
        assert!(
            problems(with(
                "messages",
                json!([{"role": "user", "content": [{"type": "document", "source": {}}]}])
            ))
            .starts_with("messages.0.content.0.type: \"document\" blocks are not supported")
        );
        assert!(problems(with("messages", json!([{"role": "user", "content": [{"type": "image", "source": {"type": "base64"}}]}])))
            .contains("messages.0.content.0.source.media_type: expected a string"));
        assert!(problems(with("messages", json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}]}])))
            .starts_with("messages.1.content.0.input:"));
        assert!(problems(with("system", json!([{"type": "image"}]))).starts_with("system.0.type:"));
        assert!(
            problems(with(
                "tools",
                json!([{"name": "bad name", "input_schema": {"type": "object"}}])
            ))
            .starts_with("tools.0.name:")
        );
        assert!(
            problems(with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "objekt"}}])
            ))
            .starts_with("tools.0.input_schema")
        );
        assert!(
            problems(with("tools", json!([{"name": "f"}])))
                .starts_with("tools.0.input_schema: a custom tool needs")
        );
        assert!(
            problems(with("tool_choice", json!({"type": "sometimes"})))
                .starts_with("tool_choice.type:")
        );
    }

    #[test]
    fn server_tools_are_set_aside_and_cannot_be_forced() {
        let mut body = with(
            "tools",
            json!([tool("lookup"), {"type": "web_search_20250305", "name": "web_search"}]),
        );
        let checked = check_request(&body, Endpoint::Messages).unwrap();
        assert_eq!(checked.dropped, ["web_search"]);
        assert_eq!(checked.tools.len(), 1);
        body["tool_choice"] = json!({"type": "tool", "name": "web_search"});
        assert_eq!(
            problems(body.clone()),
            "tool_choice.name: \"web_search\" is a server tool, which cannot run on this gateway"
        );
        body["tools"] = json!([{"type": "code_execution_20250825", "name": "code_execution"}]);
        body["tool_choice"] = json!({"type": "any"});
        assert!(problems(body).contains("would force a server tool (code_execution)"));
    }

    #[test]
    fn deferred_tools_are_known_but_listed_apart() {
        let mut deferred = tool("later");
        deferred["defer_loading"] = json!(true);
        let checked = check_request(
            &with("tools", json!([tool("now"), deferred])),
            Endpoint::Messages,
        )
        .unwrap();
        assert_eq!(checked.deferred, ["later"]);
        assert!(checked.tools.get("later").is_some());
    }

    #[test]
    fn what_claude_code_sends_passes() {
        let body = json!({
            "model": "claude-sonnet-4-5-20250929", "max_tokens": 64000, "stream": true,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2;"},
                {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]},
                {"role": "system", "content": "# Environment", "output_config": {"effort": "high"}},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "sig"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": false, "cache_control": {"type": "ephemeral"}}]}
            ],
            "tools": [{"name": "Bash", "description": "run", "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}],
            "metadata": {"user_id": "{\"device_id\":\"d\"}"},
            "thinking": {"type": "adaptive", "display": "omitted"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "output_config": {"effort": "medium"}
        });
        assert_eq!(problems(body), "");
    }
}
