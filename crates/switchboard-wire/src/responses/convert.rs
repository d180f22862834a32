//! A Responses request (and the stored conversation it continues) as our request model:
//! its fields checked and mapped, the conversation as messages (`conversation.rs`), and
//! its tools as plain functions ([`OfferedTools`]).

use serde_json::{Map, Value, json};

use super::conversation::{McpApproval, messages};
use super::items::{Item, MessageContent, Role};
use super::request::{Input, ResponsesRequest};
use super::tools::{CallKind, McpChoice, OfferedTools, model_name};
use crate::path::PathStyle;
use crate::{ChatRequest, ConvertError, ToolChoice};

/// Top-level fields that mean the same in Chat Completions: passed on as extra fields,
/// which reach the backends whose route forwards them.
const PASSED_ON: &[&str] = &[
    "user",
    "metadata",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
];

/// A request ready for the pipeline.
#[derive(Debug, Clone)]
pub struct Converted {
    pub request: ChatRequest,
    /// Where each offered tool came from and how each call maps back; the definitions
    /// themselves are `request.tools`.
    pub tools: OfferedTools,
    /// The request's own input as items (a string input is one user message).
    pub input: Vec<Item>,
    /// The client's answers to approval requests of MCP calls, for the server side to run
    /// (or refuse) before the model answers; the calls themselves end the messages.
    pub approvals: Vec<McpApproval>,
    /// Labels of MCP servers whose tools an earlier `mcp_list_tools` item listed.
    pub listed: Vec<String>,
}

/// The request's `input` as items: a problem an item kept is named by its own path.
pub fn parse_input(input: Input) -> Result<Vec<Item>, ConvertError> {
    match input {
        Input::Text(text) => Ok(vec![Item::Message {
            id: None,
            role: Role::User,
            content: MessageContent::Text(text),
            status: None,
        }]),
        Input::Items(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                item.0.at(
                    &PathStyle::Brackets.item("input", index),
                    PathStyle::Brackets,
                )
            })
            .collect(),
    }
}

/// The request in our model. `history` is the stored conversation that
/// `previous_response_id` continues (its input and output items), `input` the request's own
/// items from [`parse_input`]. The request is taken: its tools' schemas move into the
/// definitions offered to the model.
pub fn to_chat<'a>(
    request: ResponsesRequest,
    history: impl IntoIterator<Item = &'a Item>,
    input: Vec<Item>,
) -> Result<Converted, ConvertError> {
    let ResponsesRequest {
        model,
        instructions,
        tools: offered,
        tool_choice: choice,
        parallel_tool_calls,
        max_output_tokens,
        temperature,
        top_p,
        reasoning,
        text,
        stream,
        metadata,
        user,
        extra: fields,
        ..
    } = request;
    let mut tools = OfferedTools::default();
    tools.add_all(offered.unwrap_or_default(), "tools")?;
    let items: Vec<(String, &Item)> = history
        .into_iter()
        .enumerate()
        .map(|(index, item)| (format!("previous response's item {index}"), item))
        .chain(
            input
                .iter()
                .enumerate()
                .map(|(index, item)| (format!("input[{index}]"), item)),
        )
        .collect();
    for (path, item) in &items {
        match item {
            Item::AdditionalTools { tools: more, .. } => {
                tools.add_all(more.clone(), &format!("{path}.tools"))?;
            }
            Item::ToolSearchOutput { tools: more, .. } => {
                tools.load_all(more.clone(), &format!("{path}.tools"))?;
            }
            _ => {}
        }
    }
    tools.settle_deferred();
    let tool_choice = tool_choice(choice.as_ref(), &mut tools)?;
    let (messages, approvals) = messages(instructions.as_deref(), &items)?;
    let listed = items
        .iter()
        .filter_map(|(_, item)| match item {
            Item::McpListTools { server_label, .. } => Some(server_label.clone()),
            _ => None,
        })
        .collect();
    let mut extra = Map::new();
    for field in PASSED_ON {
        if let Some(value) = fields.get(*field) {
            extra.insert((*field).to_owned(), value.clone());
        }
    }
    if let Some(user) = user {
        extra.insert("user".into(), Value::from(user));
    }
    if let Some(metadata) = metadata {
        extra.insert("metadata".into(), Value::Object(metadata));
    }
    let (format, verbosity) = text.map_or((None, None), |text| (text.format, text.verbosity));
    if let Some(verbosity) = verbosity {
        extra.insert("verbosity".into(), Value::from(verbosity));
    }
    let response_format = match &format {
        None => None,
        Some(format) => response_format(format)?,
    };
    let chat = ChatRequest {
        model,
        messages,
        // The definitions live in the request from here on; `tools` keeps how each maps back.
        tools: std::mem::take(&mut tools.definitions).into(),
        tool_choice,
        parallel_tool_calls,
        temperature,
        top_p,
        max_tokens: max_output_tokens,
        stop: Vec::new(),
        reasoning_effort: reasoning.and_then(|reasoning| reasoning.effort),
        response_format,
        seed: None,
        top_k: None,
        stream: stream.unwrap_or(false),
        extra,
    };
    Ok(Converted {
        request: chat,
        tools,
        input,
        approvals,
        listed,
    })
}

/// `text.format` as Chat Completions' `response_format`; plain text is no format at all.
fn response_format(format: &Value) -> Result<Option<Value>, ConvertError> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let mut schema = Map::new();
            for field in ["name", "schema", "strict", "description"] {
                if let Some(value) = format.get(field).filter(|value| !value.is_null()) {
                    schema.insert(field.to_owned(), value.clone());
                }
            }
            if !schema.contains_key("name") || !schema.contains_key("schema") {
                return Err(ConvertError::invalid(
                    "text.format",
                    "a json_schema format needs a name and a schema",
                ));
            }
            Ok(Some(
                json!({"type": "json_schema", "json_schema": Value::Object(schema)}),
            ))
        }
        _ => Err(ConvertError::invalid(
            "text.format.type",
            format!(
                "must be \"text\", \"json_object\" or \"json_schema\", got {}",
                format.get("type").unwrap_or(&Value::Null)
            ),
        )),
    }
}

/// `tool_choice` in our model; `allowed_tools` narrows the offered tools.
fn tool_choice(
    choice: Option<&Value>,
    tools: &mut OfferedTools,
) -> Result<Option<ToolChoice>, ConvertError> {
    let Some(choice) = choice.filter(|choice| !choice.is_null()) else {
        return Ok(None);
    };
    if let Some(mode) = choice.as_str() {
        return match mode {
            "auto" => Ok(Some(ToolChoice::Auto)),
            "none" => Ok(Some(ToolChoice::None)),
            "required" => Ok(Some(ToolChoice::Required)),
            other => Err(ConvertError::invalid(
                "tool_choice",
                format!("must be \"auto\", \"none\", \"required\" or an object, got \"{other}\""),
            )),
        };
    }
    let kind = choice
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "function" | "custom" => Ok(Some(ToolChoice::Function(named(
            choice,
            "tool_choice",
            tools,
        )?))),
        "allowed_tools" => {
            let listed = choice
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    ConvertError::invalid("tool_choice.tools", "list the allowed tools")
                })?;
            let mut allowed = Vec::with_capacity(listed.len());
            for (index, tool) in listed.iter().enumerate() {
                let kind = tool.get("type").and_then(Value::as_str);
                // A hosted tool among the allowed ones is left out like the tool itself.
                if matches!(kind, Some("function" | "custom")) {
                    allowed.push(named(tool, &format!("tool_choice.tools[{index}]"), tools)?);
                }
            }
            tools.restrict(&allowed);
            match choice.get("mode").and_then(Value::as_str) {
                None | Some("auto") => Ok(Some(ToolChoice::Auto)),
                Some("required") => Ok(Some(ToolChoice::Required)),
                Some(other) => Err(ConvertError::invalid(
                    "tool_choice.mode",
                    format!("must be \"auto\" or \"required\", got \"{other}\""),
                )),
            }
        }
        "mcp" => {
            let label = choice
                .get("server_label")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ConvertError::invalid(
                        "tool_choice.server_label",
                        "name the MCP server (the server_label of one of tools' mcp entries)",
                    )
                })?;
            if !tools.mcp.iter().any(|server| server.label == label) {
                return Err(ConvertError::invalid(
                    "tool_choice.server_label",
                    format!("no mcp entry in tools is labelled \"{label}\""),
                ));
            }
            let name = choice
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if name.is_none() {
                // Any tool of that server: the request's own functions are not offered, so
                // what the model must call is a server's tool.
                tools.restrict(&[]);
            }
            tools.mcp_choice = Some(McpChoice {
                label: label.to_owned(),
                name,
            });
            // Narrowed to the one tool once the server side knows its name.
            Ok(Some(ToolChoice::Required))
        }
        hosted
            if tools
                .dropped
                .iter()
                .any(|dropped| dropped.split(':').next() == Some(hosted)) =>
        {
            Err(ConvertError::invalid(
                "tool_choice",
                format!(
                    "forces the hosted tool \"{hosted}\", which this gateway cannot run (it is left out of the request)"
                ),
            ))
        }
        other => Err(ConvertError::invalid(
            "tool_choice.type",
            format!(
                "must be \"function\", \"custom\", \"allowed_tools\" or \"mcp\", got \"{other}\""
            ),
        )),
    }
}

/// The model-facing name of the tool `{"type", "name", "namespace"?}` names.
fn named(choice: &Value, path: &str, tools: &OfferedTools) -> Result<String, ConvertError> {
    let kind = choice
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = choice
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ConvertError::invalid(format!("{path}.name"), "name the tool"))?;
    let namespace = choice.get("namespace").and_then(Value::as_str);
    let exact = model_name(namespace, name);
    let found = tools.kinds.iter().find(|(model, found)| match found {
        CallKind::Function { name: own, .. } if kind == "function" => {
            **model == exact || own == name
        }
        CallKind::Custom { name: own, .. } if kind == "custom" => **model == exact || own == name,
        _ => false,
    });
    match found {
        Some((model, _)) => Ok(model.clone()),
        None if tools.dropped.iter().any(|dropped| dropped == kind) => Err(ConvertError::invalid(
            path,
            format!(
                "forces the hosted tool \"{kind}\", which this gateway cannot run (it is left out of the request)"
            ),
        )),
        None => Err(ConvertError::invalid(
            format!("{path}.name"),
            format!("\"{name}\" is not one of the request's {kind} tools"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> ResponsesRequest {
        serde_json::from_value(body).unwrap()
    }

    fn convert(body: Value) -> Result<Converted, ConvertError> {
        let mut request = request(body);
        let input = parse_input(std::mem::replace(
            &mut request.input,
            Input::Items(Vec::new()),
        ))?;
        to_chat(request, std::iter::empty(), input)
    }

    #[test]
    fn a_codex_history_becomes_chat_messages() {
        let converted = convert(json!({
            "model": "gpt-5.5",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "id": "msg_1", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
                {"role": "user", "content": "list files"},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "use ls"}], "encrypted_content": "gAAA"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "status": "completed"},
                {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
                {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "a.txt"},
                {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "Done"}]},
                {"type": "message", "role": "developer", "content": "mid-conversation note"}
            ],
            "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}, {"type": "custom", "name": "apply_patch"}],
            "reasoning": {"effort": "high"},
            "text": {"verbosity": "low", "format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
            "max_output_tokens": 99,
            "store": false,
            "prompt_cache_key": "abc"
        }))
        .unwrap();
        let messages = serde_json::to_value(&converted.request.messages).unwrap();
        assert_eq!(
            messages,
            json!([
                {"role": "system", "content": "Be brief.\n\nYou are Codex."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Listing.", "reasoning_content": "use ls", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Done"},
                {"role": "system", "content": "mid-conversation note"}
            ])
        );
        let chat = &converted.request;
        assert_eq!(chat.reasoning_effort.as_deref(), Some("high"));
        assert_eq!(chat.max_tokens, Some(99));
        assert_eq!(
            chat.response_format.as_ref().unwrap()["json_schema"]["name"],
            "x"
        );
        assert_eq!(chat.extra["verbosity"], "low");
        assert_eq!(chat.extra["prompt_cache_key"], "abc");
        assert!(!chat.extra.contains_key("store"));
        assert_eq!(converted.input.len(), 9);
    }

    #[test]
    fn an_output_must_answer_an_earlier_call() {
        let error = convert(json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "call_9", "output": "x"}]}))
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("input[1].call_id: \"call_9\" does not answer"),
            "{error}"
        );
        // …unless the call is in the stored conversation.
        let mut request = request(
            json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]}),
        );
        let history = [Item::FunctionCall {
            id: None,
            call_id: "call_9".into(),
            name: "f".into(),
            namespace: None,
            arguments: "{}".into(),
            status: None,
        }];
        let input = parse_input(std::mem::replace(
            &mut request.input,
            Input::Items(Vec::new()),
        ))
        .unwrap();
        assert!(to_chat(request, &history, input).is_ok());
    }

    #[test]
    fn a_hosted_search_and_its_output_are_a_call_and_its_result() {
        let converted = convert(json!({"model": "m", "input": [
            {"role": "user", "content": "weather?"},
            {"type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server",
                "arguments": {"query": "weather"}, "status": "completed"},
            {"type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server",
                "tools": [{"type": "function", "name": "weather", "defer_loading": true}],
                "status": "completed"}],
            "tools": [{"type": "tool_search"}, {"type": "function", "name": "weather", "defer_loading": true}]}))
        .unwrap();
        let messages = serde_json::to_value(&converted.request.messages).unwrap();
        assert_eq!(messages[1]["tool_calls"][0]["id"], "tsc_1");
        assert_eq!(
            messages[1]["tool_calls"][0]["function"]["name"],
            "tool_search"
        );
        assert_eq!(messages[2]["tool_call_id"], "tsc_1");
        // Loaded by the search: offered from the start.
        assert!(converted.tools.deferred.is_empty());
    }

    #[test]
    fn a_hosted_search_that_could_not_run_reads_as_an_error_not_as_no_match() {
        let converted = convert(json!({"model": "m", "input": [
            {"role": "user", "content": "weather?"},
            {"type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server",
                "arguments": {"query": ""}, "status": "completed"},
            {"type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server",
                "tools": [], "status": "incomplete"}],
            "tools": [{"type": "tool_search"}, {"type": "function", "name": "weather", "defer_loading": true}]}))
        .unwrap();
        let messages = serde_json::to_value(&converted.request.messages).unwrap();
        let read = messages[2]["content"].as_str().unwrap();
        assert!(read.starts_with("Error: invalid_tool_input:"), "{read}");
        assert_eq!(converted.tools.deferred.len(), 1);
    }

    #[test]
    fn bad_items_name_their_path() {
        let error = convert(json!({"model": "m", "input": [{"role": "user", "content": "hi"}, {"type": "function_call", "name": "f", "arguments": "{}"}]})).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("input[1].call_id: missing field `call_id`"),
            "{error}"
        );
        let error = convert(json!({"model": "m", "input": [{"type": "teleport"}]})).unwrap_err();
        assert!(
            error.to_string().contains("input[0]") && error.to_string().contains("teleport"),
            "{error}"
        );
        let error = convert(json!({"model": "m", "input": [{"role": "robot", "content": "hi"}]}))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("input[0].role: unknown variant `robot`"),
            "{error}"
        );
        let error = convert(json!({"model": "m", "input": [{"content": "hi"}]}))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("input[0].type: missing field"), "{error}");
        let error = convert(json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]})).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("input[0].content[0].image_url"),
            "{error}"
        );
    }

    #[test]
    fn tool_choice_forms_and_hosted_tools() {
        let tools = json!([{"type": "function", "name": "f"}, {"type": "custom", "name": "g"}, {"type": "web_search"}]);
        let choice = |value: Value| {
            convert(json!({"model": "m", "input": "hi", "tools": tools, "tool_choice": value}))
        };
        assert_eq!(
            choice(json!("required")).unwrap().request.tool_choice,
            Some(ToolChoice::Required)
        );
        assert_eq!(
            choice(json!({"type": "custom", "name": "g"}))
                .unwrap()
                .request
                .tool_choice,
            Some(ToolChoice::Function("g".into()))
        );
        let allowed = choice(json!({"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}, {"type": "web_search"}]})).unwrap();
        assert_eq!(allowed.request.tools.len(), 1);
        assert_eq!(allowed.request.tool_choice, Some(ToolChoice::Required));
        let error = choice(json!({"type": "web_search"})).unwrap_err();
        assert!(error.to_string().contains("\"web_search\""), "{error}");
        let error = choice(json!({"type": "function", "name": "nope"})).unwrap_err();
        assert!(
            error.to_string().starts_with("tool_choice.name:"),
            "{error}"
        );
        assert_eq!(choice(json!("auto")).unwrap().tools.dropped, ["web_search"]);
    }
}
