//! What a client may send to `POST /v1/messages` (and `count_tokens`), shaped for naming
//! its problems: the body is read once, straight from its bytes, into these types. The
//! top-level scalars are `Sent`, and content that is neither a string nor a list of blocks
//! is kept, so that every such problem is listed; beneath them messages, blocks, tools and
//! `tool_choice` take every field optional, so that `validate.rs` can name a missing or
//! unsuitable one by its path in Anthropic's words, and a block holds the fields of every
//! kind of block, since its `type` may come after them. Any other value of the wrong JSON
//! type ends the parse at once, named by its path in serde's words.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use switchboard_wire::anthropic::Role;
use switchboard_wire::anthropic::tool_search::{SERVER_ID_PREFIX, referenced};
use switchboard_wire::mcp::{AnthropicMcpServer, PinnedTool, ToolConfig};
use switchboard_wire::path::Read;

use crate::api::fields::{self, Sent};

/// The request body.
#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "a JSON object")]
pub struct MessagesBody {
    pub model: Sent<String>,
    pub max_tokens: Sent<u64>,
    pub system: Option<Content>,
    #[serde(deserialize_with = "fields::array")]
    pub messages: Option<Vec<Message>>,
    #[serde(deserialize_with = "fields::array")]
    pub tools: Option<Vec<Tool>>,
    pub tool_choice: Option<ToolChoice>,
    pub stream: Sent<bool>,
    pub temperature: Sent<f64>,
    pub top_p: Sent<f64>,
    pub top_k: Sent<u64>,
    pub stop_sequences: Sent<Vec<String>>,
    pub metadata: Sent<Map<String, Value>>,
    pub thinking: Sent<Map<String, Value>>,
    pub output_config: Sent<Map<String, Value>>,
    /// The MCP connector's servers, each read into its type (a wrong one is listed with
    /// the request's other problems, named by its path).
    pub mcp_servers: Sent<Vec<Read<AnthropicMcpServer>>>,
    /// Every other field (`output_format`, `context_management`, …), for the translation to
    /// keep or drop.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Message {
    pub role: Sent<Role>,
    pub content: Option<Content>,
}

/// A string, or a list of content blocks: a message's content, the system prompt, a tool
/// result's. Anything else is kept, for the problem to quote (or, in a block of a kind this
/// gateway does not take, such as a server tool's result, to pass over).
pub type Content = fields::TextOrList<Block>;

/// A content block: its `type`, and the fields of the kinds this gateway takes (`text`;
/// `image`; `tool_use`, `tool_result` and the MCP connector's versions of them; `thinking`,
/// `redacted_thinking`; `tool_reference`), each where that kind has it. Other keys (`cache_control`,
/// `citations`, …) are kept for the translation.
#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "a content block, an object with a type")]
pub struct Block {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub text: Option<String>,
    /// An image's `source`, checked by its own `type`.
    pub source: Option<Value>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
    pub tool_use_id: Option<String>,
    pub content: Option<Content>,
    pub is_error: Option<bool>,
    pub thinking: Option<String>,
    pub signature: Option<String>,
    pub data: Option<String>,
    /// The tool a `tool_reference` loads.
    pub tool_name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool offered to the model: a custom tool (no `type`, or `"custom"`), one of Anthropic's
/// own tools (any other `type`), or the MCP connector's `mcp_toolset`. Like a block, it
/// holds the fields of every kind, since its `type` may come after them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: Sent<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub input_schema: Option<Value>,
    pub defer_loading: Option<bool>,
    /// An `mcp_toolset`'s server.
    pub mcp_server_name: Option<String>,
    /// An `mcp_toolset`'s configuration of every tool, and of each by name.
    pub default_config: Option<ToolConfig>,
    pub configs: Option<BTreeMap<String, ToolConfig>>,
    /// An `mcp_toolset`'s pinned listing (the 2026-09-15 beta).
    pub tools: Option<Vec<PinnedTool>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "an object such as {\"type\": \"auto\"}")]
pub struct ToolChoice {
    #[serde(rename = "type")]
    pub kind: Sent<ChoiceKind>,
    pub name: Option<String>,
    pub disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChoiceKind {
    Auto,
    Any,
    Tool,
    None,
}

/// A conversation sent back with the MCP connector's blocks in it, as ordinary tool blocks
/// every backend understands: each assistant message's `mcp_tool_use` becomes a `tool_use`,
/// and each `mcp_tool_result` a `tool_result` in a user message of its own (the results of
/// one turn's calls share one), the assistant's later blocks in another message after it;
/// `mcp_tool_listing` blocks are left out. A tool search the gateway ran
/// (`server_tool_use`, `tool_search_tool_result`) is rewritten the same way, its references
/// as `tool_reference` blocks. The paths of later problems are those of the conversation
/// rewritten.
pub fn connector_blocks_as_tool_blocks(messages: Vec<Message>) -> Vec<Message> {
    let has_connector_blocks = |message: &Message| {
        message.role == Sent::Given(Role::Assistant)
            && matches!(&message.content, Some(Content::List(blocks)) if blocks.iter().any(is_connector_block))
    };
    if !messages.iter().any(has_connector_blocks) {
        return messages;
    }
    let turn = |role, blocks| Message {
        role: Sent::Given(role),
        content: Some(Content::List(blocks)),
    };
    let mut rewritten = Vec::with_capacity(messages.len() + 2);
    // Whether the last message is a user message of results, which the next result joins.
    let mut results_open = false;
    for message in messages {
        let blocks = match message {
            Message {
                role: Sent::Given(Role::Assistant),
                content: Some(Content::List(blocks)),
            } if blocks.iter().any(is_connector_block) => blocks,
            message => {
                rewritten.push(message);
                results_open = false;
                continue;
            }
        };
        let mut assistant = Vec::new();
        for mut block in blocks {
            match block.kind.as_deref() {
                Some("mcp_tool_use") => {
                    block.kind = Some("tool_use".into());
                    block.extra.remove("server_name");
                    assistant.push(block);
                }
                Some("mcp_tool_result" | "tool_search_tool_result") => {
                    if !assistant.is_empty() {
                        rewritten.push(turn(Role::Assistant, std::mem::take(&mut assistant)));
                        results_open = false;
                    }
                    if block.kind.as_deref() == Some("tool_search_tool_result") {
                        block = search_result(block);
                    }
                    block.kind = Some("tool_result".into());
                    match rewritten.last_mut() {
                        Some(Message {
                            content: Some(Content::List(results)),
                            ..
                        }) if results_open => results.push(block),
                        _ => {
                            rewritten.push(turn(Role::User, vec![block]));
                            results_open = true;
                        }
                    }
                }
                // A listing is for the client to pin in a toolset, not for the model.
                Some("mcp_tool_listing") => {}
                // A search the gateway ran: the model's call of the search tool, and its
                // result, whose references load the tools found.
                Some("server_tool_use") => {
                    block.kind = Some("tool_use".into());
                    block.id = block.id.map(|id| client_id(&id));
                    assistant.push(block);
                }

                _ => assistant.push(block),
            }
        }
        if !assistant.is_empty() {
            rewritten.push(turn(Role::Assistant, assistant));
            results_open = false;
        }
    }
    rewritten
}

fn is_connector_block(block: &Block) -> bool {
    matches!(
        block.kind.as_deref(),
        Some(
            "mcp_tool_use"
                | "mcp_tool_result"
                | "mcp_tool_listing"
                | "server_tool_use"
                | "tool_search_tool_result"
        )
    )
}

/// A search's call id as an ordinary call's: a `tool_result` may not answer `srvtoolu_…`.
fn client_id(id: &str) -> String {
    match id.strip_prefix(SERVER_ID_PREFIX) {
        Some(rest) => format!("toolu_{rest}"),
        None => id.to_owned(),
    }
}

/// A `tool_search_tool_result` as a `tool_result` of `tool_reference` blocks (or the
/// error's text), which load the tools found.
fn search_result(block: Block) -> Block {
    let content = match &block.content {
        Some(Content::Other(content)) => referenced(content),
        _ => None,
    };
    let (content, is_error) = match content {
        Some(names) if names.is_empty() => {
            (Content::Text("No deferred tools matched.".into()), None)
        }
        Some(names) => (
            Content::List(
                names
                    .into_iter()
                    .map(|name| Block {
                        kind: Some("tool_reference".into()),
                        tool_name: Some(name),
                        ..Block::default()
                    })
                    .collect(),
            ),
            None,
        ),
        None => (
            Content::Text("Error: invalid_tool_input".into()),
            Some(true),
        ),
    };
    Block {
        kind: Some("tool_result".into()),
        tool_use_id: block.tool_use_id.map(|id| client_id(&id)),
        content: Some(content),
        is_error,
        ..Block::default()
    }
}
