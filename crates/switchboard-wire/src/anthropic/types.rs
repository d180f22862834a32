//! Anthropic's JSON shapes as our own serde types: the Messages request and response, and
//! the SSE payloads. Unknown content blocks and stream events are kept or skipped, never
//! a parse failure, since Anthropic adds new ones and tells clients to ignore them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `POST /v1/messages` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesRequest {
    pub model: String,
    pub messages: Vec<AnthropicMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<AnthropicTool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<AnthropicToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Every field not named above (`metadata`, `thinking`, `top_k`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `system` is a string or a list of text blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum System {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

/// Who speaks a message. Anthropic's API takes `user` and `assistant`; `system` messages
/// inside the conversation are taken too, as OpenAI-style clients send them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnthropicMessage {
    pub role: String,
    pub content: MessageContent,
}

/// Message content: a string, or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

/// A content block; kinds this crate does not model are kept as raw JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContentBlock {
    Known(Block),
    Other(Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Image {
        source: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<ToolResultContent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    /// In a tool result: the named deferred tool is loaded (offered from then on).
    ToolReference {
        tool_name: String,
    },
    /// A call of a tool the server side runs (here: a tool search), id `srvtoolu_…`.
    ServerToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool search's result: `tool_search_tool_search_result` with its
    /// `tool_references`, or `tool_search_tool_result_error`.
    ToolSearchToolResult {
        tool_use_id: String,
        content: Value,
    },
    McpToolUse {
        id: String,
        name: String,
        server_name: String,
        input: Value,
    },
    McpToolResult {
        tool_use_id: String,
        is_error: bool,
        content: Value,
    },
    McpToolListing {
        mcp_server_name: String,
        tools: Value,
    },
}

impl Block {
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }
}

/// A tool result's content: a string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

/// A tool offered to the model: a custom tool (`input_schema`, no `type` or `"custom"`), or
/// one of Anthropic's own tools (`type` such as `web_search_20250305`), which has no schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnthropicTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input_schema: Value,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AnthropicTool {
    /// Whether the client defined this tool (and runs it) rather than naming one of
    /// Anthropic's built-in tools.
    pub fn is_custom(&self) -> bool {
        match self.extra.get("type") {
            None | Some(Value::Null) => true,
            Some(kind) => kind == "custom",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AnthropicToolChoice {
    Auto {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    Any {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    Tool {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    None,
}

/// A non-streaming Messages response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesResponse {
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type", default = "message_type")]
    pub kind: String,
    #[serde(default = "assistant_role")]
    pub role: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
    #[serde(default)]
    pub usage: AnthropicUsage,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn message_type() -> String {
    "message".to_owned()
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnthropicUsage {
    /// The prompt tokens that were neither written to nor read from the cache.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: u64,
}

impl AnthropicUsage {
    /// Every prompt token, cached or not: what other formats call prompt tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            + self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0)
    }
}

/// The `data` of one SSE event of a Messages stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamPayload {
    MessageStart {
        message: MessagesResponse,
    },
    ContentBlockStart {
        index: u32,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<DeltaUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// Event types added after this code was written.
    #[serde(other)]
    Unknown,
}

impl StreamPayload {
    /// The SSE `event:` name Anthropic gives this payload.
    pub fn event_name(&self) -> &'static str {
        match self {
            StreamPayload::MessageStart { .. } => "message_start",
            StreamPayload::ContentBlockStart { .. } => "content_block_start",
            StreamPayload::ContentBlockDelta { .. } => "content_block_delta",
            StreamPayload::ContentBlockStop { .. } => "content_block_stop",
            StreamPayload::MessageDelta { .. } => "message_delta",
            StreamPayload::MessageStop => "message_stop",
            StreamPayload::Ping => "ping",
            StreamPayload::Error { .. } => "error",
            StreamPayload::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        /// Empty at the start; the signature follows as a `signature_delta`.
        #[serde(default)]
        signature: String,
    },
    /// A call the server side runs on an MCP server (the MCP connector).
    McpToolUse {
        id: String,
        name: String,
        server_name: String,
        #[serde(default)]
        input: Value,
    },
    /// A call of a tool the server side runs (a tool search).
    ServerToolUse {
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// A tool search's result, whole.
    ToolSearchToolResult { tool_use_id: String, content: Value },
    /// Its result.
    McpToolResult {
        tool_use_id: String,
        is_error: bool,
        content: Value,
    },
    /// The tools the server side listed from an MCP server (the 2026-09-15 beta).
    McpToolListing {
        mcp_server_name: String,
        tools: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// The usage on `message_delta`: totals so far, which replace the start's; the optional
/// counts are left out when unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_round_trips_with_unknown_fields_and_blocks() {
        let body = json!({
            "model": "claude",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "checking"},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": false},
                    {"type": "document", "source": {"type": "text", "data": "x"}}
                ]}
            ],
            "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "metadata": {"user_id": "u"}
        });
        let request: MessagesRequest = serde_json::from_value(body.clone()).unwrap();
        assert!(request.extra.contains_key("metadata"));
        assert_eq!(serde_json::to_value(&request).unwrap(), body);
    }

    #[test]
    fn unknown_stream_events_and_blocks_are_tolerated() {
        let payload: StreamPayload = serde_json::from_str(r#"{"type":"brand_new","x":1}"#).unwrap();
        assert_eq!(payload, StreamPayload::Unknown);
        let payload: StreamPayload =
            serde_json::from_str(r#"{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","id":"s"}}"#)
                .unwrap();
        assert_eq!(
            payload,
            StreamPayload::ContentBlockStart {
                index: 2,
                content_block: StartBlock::Unknown
            }
        );
    }
}
