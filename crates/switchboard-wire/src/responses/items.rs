//! The items of a Responses conversation: what a client sends in `input` and what a
//! response carries in `output` share one type, because clients send the output items of
//! one response back as the input of the next (Codex resends its whole history each turn).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::path::Read;

/// One item of `input` or `output`, tagged by `type`. A message without a `type` is read
/// as a message ([`InputItem`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    Message {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        role: Role,
        content: MessageContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    FunctionCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        name: String,
        /// The namespace tool the function belongs to, when it came from one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    FunctionCallOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        output: ToolOutput,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    CustomToolCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        input: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    CustomToolCallOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        output: ToolOutput,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    Reasoning {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default)]
        summary: Vec<TextPart>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Vec<TextPart>>,
        /// Another provider's opaque reasoning state: no backend here can read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    /// Tools delivered in the conversation instead of the `tools` field (Codex does this
    /// for its newer models).
    AdditionalTools {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        tools: Vec<Value>,
    },
    /// A call of the `tool_search` tool: the client's to run (`execution: "client"`), or
    /// one the server side ran (hosted: `"server"`, `call_id: null`).
    ToolSearchCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Always written (`null` for a hosted search, as OpenAI's SDK types expect it).
        #[serde(default)]
        call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution: Option<Execution>,
        #[serde(default)]
        arguments: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    /// What a tool search found (the client's, or the server side's): tools offered from
    /// then on, a namespace's inside their namespace.
    ToolSearchOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Always written (`null` for a hosted search, whose output answers the search call
        /// just before it).
        #[serde(default)]
        call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution: Option<Execution>,
        #[serde(default)]
        tools: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    LocalShellCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        action: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    LocalShellCallOutput {
        /// The `call_id` of the call it answers.
        id: String,
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
    },
    /// The tools an MCP server offered, listed by the server side before the model's
    /// first answer (or why it could not list them).
    McpListTools {
        id: String,
        server_label: String,
        tools: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A call the server side ran on an MCP server: `output`, or `error` (one of OpenAI's
    /// error objects).
    McpCall {
        id: String,
        server_label: String,
        name: String,
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_request_id: Option<String>,
    },
    /// A call the model made that waits for the client's approval.
    McpApprovalRequest {
        id: String,
        server_label: String,
        name: String,
        arguments: String,
    },
    /// The client's answer to an approval request.
    McpApprovalResponse {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        approval_request_id: String,
        approve: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A reference to a stored item by id; refused (use `previous_response_id`).
    ItemReference { id: String },
}

impl Item {
    /// The `type` as it appears on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Message { .. } => "message",
            Item::FunctionCall { .. } => "function_call",
            Item::FunctionCallOutput { .. } => "function_call_output",
            Item::CustomToolCall { .. } => "custom_tool_call",
            Item::CustomToolCallOutput { .. } => "custom_tool_call_output",
            Item::Reasoning { .. } => "reasoning",
            Item::AdditionalTools { .. } => "additional_tools",
            Item::ToolSearchCall { .. } => "tool_search_call",
            Item::ToolSearchOutput { .. } => "tool_search_output",
            Item::LocalShellCall { .. } => "local_shell_call",
            Item::LocalShellCallOutput { .. } => "local_shell_call_output",
            Item::McpListTools { .. } => "mcp_list_tools",
            Item::McpCall { .. } => "mcp_call",
            Item::McpApprovalRequest { .. } => "mcp_approval_request",
            Item::McpApprovalResponse { .. } => "mcp_approval_response",
            Item::ItemReference { .. } => "item_reference",
        }
    }

    /// What the item holds in memory beyond the text of its JSON: its own slot, and the
    /// slots of the parts and JSON values inside it (a one-letter message is 46 bytes of
    /// JSON; `[0,0,…]` two bytes a value), for bounds that count what is held.
    pub fn slot_bytes(&self) -> usize {
        size_of::<Item>()
            + match self {
                Item::Message {
                    content: MessageContent::Parts(parts),
                    ..
                }
                | Item::FunctionCallOutput {
                    output: ToolOutput::Parts(parts),
                    ..
                }
                | Item::CustomToolCallOutput {
                    output: ToolOutput::Parts(parts),
                    ..
                } => parts.iter().map(ContentPart::slot_bytes).sum(),
                Item::Reasoning {
                    summary, content, ..
                } => (summary.len() + content.as_ref().map_or(0, Vec::len)) * size_of::<TextPart>(),
                Item::AdditionalTools { tools, .. }
                | Item::ToolSearchOutput { tools, .. }
                | Item::McpListTools { tools, .. } => tools.iter().map(value_slot_bytes).sum(),
                Item::ToolSearchCall {
                    arguments: value, ..
                }
                | Item::LocalShellCall { action: value, .. } => value_slot_bytes(value),
                _ => 0,
            }
    }
}

/// Who ran a tool search: the server side (OpenAI's hosted search, the gateway here) or the
/// client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    Server,
    Client,
}

/// One item of a request's `input`, read into its type as the body is read (see
/// [`Read`]): a message may leave out its `type`, as OpenAI's API takes it.
#[derive(Debug)]
pub struct InputItem(pub Read<Item>);

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Its `type` may come after its other fields: the item is read whole first.
        let mut item = Value::deserialize(deserializer)?;
        if let Value::Object(object) = &mut item {
            if !object.contains_key("type") && object.contains_key("role") {
                object.insert("type".into(), "message".into());
            }
            // Serde names a problem inside a tagged item at the item itself: a message's
            // role is read on its own first, so that its problem names `role`.
            if object.get("type").and_then(Value::as_str) == Some("message")
                && let Err(error) = serde_path_to_error::deserialize::<_, Speaker>(&item)
            {
                return Ok(Self(Read(Err(error))));
            }
        }
        Ok(Self(Read::from(item)))
    }
}

/// A message item's `role`, read on its own.
#[derive(Deserialize)]
struct Speaker {
    #[serde(rename = "role")]
    _role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
}

/// A message's content: a plain string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One part of a message's content (or of a tool's output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    InputText {
        text: String,
    },
    OutputText {
        text: String,
        #[serde(default)]
        annotations: Vec<Value>,
    },
    InputImage {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image_url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    InputFile {
        #[serde(flatten)]
        fields: Map<String, Value>,
    },
    Refusal {
        refusal: String,
    },
}

impl ContentPart {
    fn slot_bytes(&self) -> usize {
        size_of::<ContentPart>()
            + match self {
                ContentPart::OutputText { annotations, .. } => {
                    annotations.iter().map(value_slot_bytes).sum()
                }
                ContentPart::InputFile { fields } => map_slot_bytes(fields),
                _ => 0,
            }
    }
}

/// What a JSON value holds in memory beyond its text: a slot for it and for every value
/// and key inside it.
pub fn value_slot_bytes(value: &Value) -> usize {
    size_of::<Value>()
        + match value {
            Value::Array(values) => values.iter().map(value_slot_bytes).sum(),
            Value::Object(map) => map_slot_bytes(map),
            _ => 0,
        }
}

/// Each entry: its key, its place in the map's index, its value.
fn map_slot_bytes(map: &Map<String, Value>) -> usize {
    map.values()
        .map(|value| size_of::<String>() + 2 * size_of::<usize>() + value_slot_bytes(value))
        .sum()
}

/// A tool's output: text, or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolOutput {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// `{"type": "summary_text" | "reasoning_text" | …, "text": …}`: a reasoning item's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

impl TextPart {
    pub fn summary(text: impl Into<String>) -> Self {
        Self {
            kind: "summary_text".to_owned(),
            text: text.into(),
        }
    }
}
