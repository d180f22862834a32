//! Checks a Messages request, read into `request.rs`'s types, before anything is sent
//! anywhere, as strictly as the chat completions front-end does: every problem listed in one
//! 400, each named by its path the way Anthropic names them
//! (`messages.3.content.0.tool_use_id`). The request checked becomes the pipeline's
//! `ChatRequest` in the same pass, each part moved through the wire crate's translation of
//! an Anthropic client's parts (`anthropic::from_client`). What real clients send beyond
//! the fields checked here (`metadata`, `context_management`, `cache_control`, keys added
//! per message) is accepted and left out.

use switchboard_tools::{Message, Toolset, quote};
use switchboard_wire::ChatRequest;
use switchboard_wire::anthropic::from_client;
use switchboard_wire::anthropic::tool_search::SearchKind;
use switchboard_wire::anthropic::{AnthropicTool, MessageContent, Role, System};
use switchboard_wire::ids::IdMap;
use switchboard_wire::mcp::{AnthropicMcpServer, McpServerRequest, McpToolset};
use switchboard_wire::path::{PathStyle, Read};

use super::blocks::{Place, check_blocks, not_content};
use super::request::{self, Content, MessagesBody, connector_blocks_as_tool_blocks};
use super::tools::{Tools, check_tool_choice, check_tools};
use crate::api::error::ApiError;
use crate::api::fields::{self, Invalid, Sent, invalid, number, rejection};

/// Which endpoint the body came to: `count_tokens` takes no `max_tokens` or `stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Messages,
    CountTokens,
}

/// A request checked: what the translation takes, and what later steps need beside it.
#[derive(Debug)]
pub struct Checked {
    /// The request, with the MCP connector's parts taken out.
    pub request: ChatRequest,
    /// Every custom tool compiled under the `api` profile, to check the model's calls
    /// (deferred ones too: the model may call them once a tool search has shown them).
    pub tools: Toolset,
    /// Custom tools with `defer_loading` that no `tool_reference` of the conversation has
    /// loaded: checked against, but not shown to the model.
    pub deferred: Vec<String>,
    /// Anthropic's own tools (web search, code execution, …), which cannot run here.
    pub dropped: Vec<String>,
    /// The MCP connector's servers, each with what its toolset offers, for the gateway to
    /// run.
    pub mcp: Vec<McpServerRequest>,
    /// The tool search tool offered, by its name.
    pub search: Option<(String, SearchKind)>,
}

/// Checks a request body. All problems are reported in one 400.
pub fn check_request(body: MessagesBody, endpoint: Endpoint) -> Result<Checked, ApiError> {
    let MessagesBody {
        model,
        max_tokens,
        system,
        messages,
        tools,
        tool_choice,
        stream,
        temperature,
        top_p,
        top_k,
        stop_sequences,
        metadata,
        thinking,
        output_config,
        mcp_servers,
        extra,
    } = body;
    let mut problems = Vec::new();
    let mcp_servers = match mcp_servers {
        Sent::Given(servers) => servers,
        Sent::Absent => Vec::new(),
        wrong => {
            problems.push(invalid(
                "mcp_servers",
                format!("must be an array of MCP servers, got {}", wrong.quoted()),
            ));
            Vec::new()
        }
    };
    let model = fields::model(model, &mut problems);
    let max_tokens = match (max_tokens, endpoint) {
        (Sent::Absent, Endpoint::CountTokens) => None,
        (Sent::Absent, Endpoint::Messages) => {
            problems.push(invalid("max_tokens", "Field required"));
            None
        }
        (sent, _) => fields::token_count(sent, "max_tokens", &mut problems),
    };
    let mut conversation = match system {
        None => Vec::new(),
        Some(Content::Text(text)) => from_client::system(System::Text(text)),
        Some(Content::List(blocks)) => from_client::system(System::Blocks(check_blocks(
            blocks,
            "system",
            &mut Place::Prompt,
            &mut problems,
        ))),
        Some(Content::Other(other)) => {
            problems.push(not_content("system", "text blocks", Some(&other)));
            Vec::new()
        }
    };
    let mut references = Vec::new();
    check_messages(
        messages.map(connector_blocks_as_tool_blocks),
        &mut conversation,
        &mut references,
        &mut problems,
    );
    let mut tools = check_tools(tools.unwrap_or_default(), &mut problems);
    let mut mcp = connector(
        mcp_servers,
        std::mem::take(&mut tools.toolsets),
        &mut problems,
    );
    load_referenced(&mut tools, &mut mcp, &references, &mut problems);
    let tool_choice = check_tool_choice(tool_choice, &tools, &mut problems);
    let stream = fields::boolean(stream, "stream", &mut problems);
    let temperature = number(temperature, "temperature", 0.0, 1.0, &mut problems);
    let top_p = number(top_p, "top_p", 0.0, 1.0, &mut problems);
    let top_k = top_k.check(
        "top_k",
        "must be a positive integer",
        |top_k| (1..=u64::from(u32::MAX)).contains(top_k),
        &mut problems,
    );
    let stop_sequences = stop_sequences.check(
        "stop_sequences",
        "must be an array of strings",
        |_| true,
        &mut problems,
    );
    let objects = [
        ("metadata", metadata),
        ("thinking", thinking),
        ("output_config", output_config),
    ]
    .map(|(field, sent)| {
        let object = sent.check(field, "expected an object", |_| true, &mut problems);
        (field, object)
    });
    if let [(_, Some(metadata)), ..] = &objects {
        Sent::<String>::field(metadata, "user_id").check(
            "metadata.user_id",
            "expected a string",
            |_| true,
            &mut problems,
        );
    }
    let [_, (_, thinking), (_, output_config)] = &objects;
    let reasoning_effort = from_client::reasoning_effort(thinking.as_ref(), output_config.as_ref())
        .unwrap_or_else(|error| {
            problems.push(fields::converted(error));
            None
        });
    let response_format =
        from_client::response_format(output_config.as_ref(), extra.get("output_format"))
            .unwrap_or_else(|error| {
                problems.push(fields::converted(error));
                None
            });
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    let (tool_choice, parallel_tool_calls) = tool_choice
        .map(from_client::tool_choice)
        .map_or((None, None), |(choice, parallel)| (Some(choice), parallel));
    Ok(Checked {
        request: ChatRequest {
            model,
            messages: conversation,
            tools: tools
                .custom
                .into_iter()
                .filter(AnthropicTool::is_custom)
                .map(from_client::tool)
                .collect(),
            tool_choice,
            parallel_tool_calls,
            temperature,
            top_p,
            max_tokens,
            stop: stop_sequences.unwrap_or_default(),
            stream,
            reasoning_effort,
            response_format,
            top_k: top_k.and_then(|top_k| u32::try_from(top_k).ok()),
            ..ChatRequest::default()
        },
        tools: tools.compiled,
        deferred: tools.deferred,
        dropped: tools.dropped,
        mcp,
        search: tools.search,
    })
}

/// The MCP connector: the `mcp_servers` entries, as read, joined with the toolsets that
/// name them. Nothing when any part is wrong (the problems say why).
fn connector(
    servers: Vec<Read<AnthropicMcpServer>>,
    toolsets: Vec<(usize, McpToolset)>,
    problems: &mut Vec<Invalid>,
) -> Vec<McpServerRequest> {
    let before = problems.len();
    let servers: Vec<AnthropicMcpServer> = servers
        .into_iter()
        .enumerate()
        .filter_map(|(index, server)| {
            server
                .at(&PathStyle::Dots.item("mcp_servers", index), PathStyle::Dots)
                .map_err(|error| problems.push(fields::converted(error)))
                .ok()
        })
        .collect();
    if problems.len() > before {
        return Vec::new();
    }
    McpServerRequest::from_anthropic(servers, toolsets, PathStyle::Dots).unwrap_or_else(|error| {
        problems.push(fields::converted(error));
        Vec::new()
    })
}

/// Deferred tools named by a `tool_reference` (each with its path) are loaded: offered to
/// the model like any other. A reference to a tool the request does not define is refused,
/// as Anthropic refuses it; where an MCP toolset defers tools, a name that is none of the
/// custom tools may be one of its server's (listed only once the server is reached), and
/// loads it there.
fn load_referenced(
    tools: &mut Tools,
    mcp: &mut [McpServerRequest],
    references: &[(String, String)],
    problems: &mut Vec<Invalid>,
) {
    let defers_mcp = mcp.iter().any(|server| server.deferred.any());
    for (at, name) in references {
        if tools.custom.iter().any(|tool| tool.name == *name) {
            continue;
        }
        if !defers_mcp {
            problems.push(invalid(
                at.clone(),
                format!("{} is not one of the request's tools", quote(name)),
            ));
            continue;
        }
        for server in mcp.iter_mut() {
            // The model may know a server's tool by its own name or as `{label}_{tool}`.
            let prefix = format!("{}_", server.label);
            let tool = name.strip_prefix(&prefix).unwrap_or(name);
            for tool in [name.as_str(), tool] {
                server.deferred.load(tool);
            }
        }
    }
    tools
        .deferred
        .retain(|name| !references.iter().any(|(_, referenced)| referenced == name));
}

/// The conversation's messages, checked and appended to `conversation` in our model.
fn check_messages(
    messages: Option<Vec<request::Message>>,
    conversation: &mut Vec<Message>,
    references: &mut Vec<(String, String)>,
    problems: &mut Vec<Invalid>,
) {
    let Some(messages) = messages.filter(|messages| !messages.is_empty()) else {
        problems.push(invalid("messages", "at least one message is required"));
        return;
    };
    // The tool_use ids of the last assistant turn: results may answer them until the next
    // one (consecutive user messages are one turn, as Anthropic merges them).
    let mut offered = Vec::new();
    let last = messages.len() - 1;
    conversation.reserve(messages.len());
    for (position, message) in messages.into_iter().enumerate() {
        let at = format!("messages.{position}");
        let role = match message.role {
            Sent::Given(role) => role,
            other => {
                problems.push(invalid(
                    format!("{at}.role"),
                    format!(
                        "must be \"user\", \"assistant\" or \"system\", got {}",
                        other.quoted()
                    ),
                ));
                continue;
            }
        };
        let empty = |content: &Content| match content {
            Content::Text(text) => text.is_empty(),
            Content::List(blocks) => blocks.is_empty(),
            Content::Other(_) => false,
        };
        if message.content.as_ref().is_some_and(empty)
            && !(role == Role::Assistant && position == last)
        {
            problems.push(invalid(
                format!("{at}.content"),
                "must not be empty (only a final assistant message may be)",
            ));
        }
        let content = match message.content {
            Some(Content::Text(text)) => {
                if role == Role::Assistant {
                    offered.clear();
                }
                MessageContent::Text(text)
            }
            Some(Content::List(blocks)) => {
                let at = format!("{at}.content");
                MessageContent::Blocks(match role {
                    Role::Assistant => {
                        let mut ids = Vec::new();
                        let blocks =
                            check_blocks(blocks, &at, &mut Place::Assistant(&mut ids), problems);
                        offered = ids;
                        blocks
                    }
                    Role::User => check_blocks(
                        blocks,
                        &at,
                        &mut Place::User(&offered, references),
                        problems,
                    ),
                    Role::System => check_blocks(blocks, &at, &mut Place::SystemMessage, problems),
                })
            }
            Some(Content::Other(other)) => {
                problems.push(not_content(
                    format!("{at}.content"),
                    "content blocks",
                    Some(&other),
                ));
                continue;
            }
            None => {
                problems.push(not_content(format!("{at}.content"), "content blocks", None));
                continue;
            }
        };
        // The client's own ids: nothing to map back.
        if let Err(error) =
            from_client::push_message(role, content, &IdMap::new(), &at, conversation)
        {
            problems.push(fields::converted(error));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::{PathStyle, parse_typed};
    use serde_json::{Value, json};

    /// The body read as the front-end reads it, and checked.
    fn check(body: &Value, endpoint: Endpoint) -> Result<Checked, ApiError> {
        let body = parse_typed(body.to_string().as_bytes(), PathStyle::Dots)?;
        check_request(body, endpoint)
    }

    fn problems(body: Value) -> String {
        check(&body, Endpoint::Messages)
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
        assert!(check(&body, Endpoint::CountTokens).is_ok());
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
        let checked = check(&body, Endpoint::Messages).unwrap();
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
        let checked = check(
            &with("tools", json!([tool("now"), deferred])),
            Endpoint::Messages,
        )
        .unwrap();
        assert_eq!(checked.deferred, ["later"]);
        assert!(checked.tools.get("later").is_some());
    }

    #[test]
    fn a_tool_reference_loads_its_deferred_tool_and_must_name_one_of_the_tools() {
        let deferred = |name| {
            let mut deferred = tool(name);
            deferred["defer_loading"] = json!(true);
            deferred
        };
        let searched = |found: &str| {
            let mut body = with(
                "messages",
                json!([
                    {"role": "user", "content": "archive it"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "archive"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "tool_reference", "tool_name": found}]}]}
                ]),
            );
            body["tools"] = json!([tool("ToolSearch"), deferred("archive"), deferred("list")]);
            body
        };
        let checked = check(&searched("archive"), Endpoint::Messages).unwrap();
        assert_eq!(checked.deferred, ["list"]);
        match checked.request.messages.last() {
            Some(Message::Tool { content, .. }) => {
                assert_eq!(content.text(), "Tool loaded: archive")
            }
            other => panic!("not a tool result: {other:?}"),
        }
        assert_eq!(
            problems(searched("delete")),
            "messages.2.content.0.content.0.tool_name: \"delete\" is not one of the request's tools"
        );
        let mut nameless = searched("archive");
        nameless["messages"][2]["content"][0]["content"][0] = json!({"type": "tool_reference"});
        assert!(
            problems(nameless).starts_with(
                "messages.2.content.0.content.0.tool_name: a tool_reference block needs"
            )
        );
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

    #[test]
    fn the_connectors_blocks_become_tool_blocks() {
        let messages = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "mcp_tool_use", "id": "t1", "name": "echo", "server_name": "e", "input": {"m": 1}},
                {"type": "mcp_tool_result", "tool_use_id": "t1", "is_error": false, "content": [{"type": "text", "text": "1"}]},
                {"type": "text", "text": "It says 1."}]},
            {"role": "user", "content": "thanks"}]);
        // Read as a request, rewritten and checked, in the pipeline's shape: the
        // connector's call and result are a tool call and its result.
        let body = json!({"model": "m", "max_tokens": 1, "messages": messages});
        let messages = check(&body, Endpoint::Messages).unwrap().request.messages;
        assert_eq!(
            serde_json::to_value(messages).unwrap(),
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "echo", "arguments": "{\"m\":1}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "1"},
                {"role": "assistant", "content": "It says 1."},
                {"role": "user", "content": "thanks"}
            ])
        );
    }

    #[test]
    fn a_wrong_shape_is_named_by_its_path() {
        assert_eq!(
            problems(with(
                "messages",
                json!([{"role": "user", "content": [{"type": "text", "text": 5}]}])
            )),
            "messages.0.content.0.text: invalid type: integer `5`, expected a string"
        );
        assert_eq!(
            problems(with("messages", json!("hello"))),
            "messages: expected an array, got \"hello\""
        );
    }

    #[test]
    fn content_that_is_neither_text_nor_blocks_is_listed_and_a_server_tools_result_refused() {
        let mut body = with(
            "messages",
            json!([
                {"role": "user", "content": 5},
                {"role": "assistant", "content": [
                    {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1",
                        "content": {"type": "code_execution_result", "stdout": "4"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": {"x": 1}}]}
            ]),
        );
        body["system"] = json!(5);
        assert_eq!(
            problems(body),
            "system: must be a string or an array of text blocks, got 5; \
             messages.0.content: must be a string or an array of content blocks, got 5; \
             messages.1.content.0.type: \"code_execution_tool_result\" blocks are not supported \
             in an assistant message by this gateway; \
             messages.2.content.0.tool_use_id: \"toolu_1\" does not answer a tool_use block of \
             the previous assistant message; \
             messages.2.content.0.content: must be a string or an array of text and image blocks, \
             got {\"x\":1}"
        );
    }

    #[test]
    fn every_wrong_top_level_field_is_listed() {
        let mut body = with("model", json!(5));
        body["max_tokens"] = json!("x");
        body["mcp_servers"] = json!(5);
        body["top_k"] = json!(0);
        assert_eq!(
            problems(body),
            "mcp_servers: must be an array of MCP servers, got 5; model: expected a string, got 5; \
             max_tokens: must be a positive integer up to 4294967295, got \"x\"; \
             top_k: must be a positive integer, got 0"
        );
    }

    #[test]
    fn the_checked_request_is_the_pipelines_request_in_one_move() {
        let body = json!({
            "model": "m", "max_tokens": 512, "stream": true, "temperature": 0.5, "top_k": 40,
            "stop_sequences": ["END"],
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                    "is_error": true, "content": [{"type": "text", "text": "no"}]}]}
            ],
            "tools": [tool("lookup")],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "metadata": {"user_id": "u"},
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "context_management": {"edits": []}
        });
        let request = check(&body, Endpoint::Messages).unwrap().request;
        let expected = ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::system("Be brief."),
                Message::User {
                    content: switchboard_tools::Content::Parts(vec![
                        json!({"type": "text", "text": "look"}),
                        json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
                    ]),
                    name: None,
                },
                Message::Assistant {
                    content: None,
                    reasoning_content: Some("hm".into()),
                    reasoning_signature: Some("s".into()),
                    tool_calls: vec![switchboard_tools::ToolCall {
                        id: "toolu_1".into(),
                        name: "lookup".into(),
                        arguments: r#"{"q":"x"}"#.into(),
                    }],
                    name: None,
                },
                Message::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: switchboard_tools::Content::Text("Error: no".into()),
                },
            ],
            tools: request.tools.clone(),
            tool_choice: Some(switchboard_wire::ToolChoice::Auto),
            parallel_tool_calls: Some(false),
            temperature: Some(0.5),
            max_tokens: Some(512),
            stop: vec!["END".into()],
            stream: true,
            // A thinking budget of 2,048 tokens.
            reasoning_effort: Some("low".into()),
            top_k: Some(40),
            ..ChatRequest::default()
        };
        assert_eq!(request, expected);
        assert_eq!(request.tools.len(), 1);
        assert_eq!(request.tools[0].function.name, "lookup");
    }

    #[test]
    fn an_mcp_toolset_is_taken_out_and_the_other_tools_keep_their_positions() {
        let toolset = json!({"type": "mcp_toolset", "mcp_server_name": "ev"});
        let mut body = with("tools", json!([toolset, tool("f")]));
        body["mcp_servers"] = json!([{"type": "url", "url": "http://h/mcp", "name": "ev"}]);
        let checked = check(&body, Endpoint::Messages).unwrap();
        assert_eq!(checked.mcp.len(), 1);
        assert_eq!(
            (checked.mcp[0].label.as_str(), checked.mcp[0].path.as_str()),
            ("ev", "mcp_servers.0")
        );
        assert_eq!(checked.request.tools.len(), 1);
        body["tools"][1] = json!({"name": "f"});
        assert!(problems(body).starts_with("tools.1.input_schema:"));
    }
}
