//! A Messages stream folded into the whole message, the way Anthropic's SDKs accumulate
//! one: blocks in the order they started, deltas appended, a tool's `partial_json` parsed
//! when its block stops, and `message_delta`'s totals replacing the start's.

use serde_json::{Map, Value};

use super::types::{
    AnthropicUsage, Block, BlockDelta, ContentBlock, MessagesResponse, StartBlock, StreamPayload,
};

/// Folds payloads into one [`MessagesResponse`].
#[derive(Debug)]
pub struct MessageBuilder {
    message: MessagesResponse,
    /// The `partial_json` of each tool_use block so far, by block index.
    inputs: Vec<(usize, String)>,
}

impl Default for MessageBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl MessageBuilder {
    pub fn new() -> Self {
        Self {
            message: MessagesResponse {
                id: String::new(),
                kind: "message".to_owned(),
                role: "assistant".to_owned(),
                model: String::new(),
                content: Vec::new(),
                stop_reason: None,
                stop_sequence: None,
                usage: AnthropicUsage::default(),
                extra: Map::new(),
            },
            inputs: Vec::new(),
        }
    }

    pub fn push(&mut self, payload: &StreamPayload) {
        match payload {
            StreamPayload::MessageStart { message } => self.message = message.clone(),
            StreamPayload::ContentBlockStart { content_block, .. } => {
                let block = match content_block.clone() {
                    StartBlock::Text { text } => Block::Text {
                        text,
                        extra: Map::new(),
                    },
                    StartBlock::ToolUse { id, name, input } => {
                        self.inputs
                            .push((self.message.content.len(), String::new()));
                        Block::ToolUse {
                            id,
                            name,
                            input,
                            extra: Map::new(),
                        }
                    }
                    StartBlock::Thinking {
                        thinking,
                        signature,
                    } => Block::Thinking {
                        thinking,
                        signature: Some(signature),
                    },
                    StartBlock::McpToolUse {
                        id,
                        name,
                        server_name,
                        input,
                    } => {
                        self.inputs
                            .push((self.message.content.len(), String::new()));
                        Block::McpToolUse {
                            id,
                            name,
                            server_name,
                            input,
                        }
                    }
                    StartBlock::ServerToolUse { id, name, input } => {
                        self.inputs
                            .push((self.message.content.len(), String::new()));
                        Block::ServerToolUse { id, name, input }
                    }
                    StartBlock::ToolSearchToolResult {
                        tool_use_id,
                        content,
                    } => Block::ToolSearchToolResult {
                        tool_use_id,
                        content,
                    },
                    StartBlock::McpToolResult {
                        tool_use_id,
                        is_error,
                        content,
                    } => Block::McpToolResult {
                        tool_use_id,
                        is_error,
                        content,
                    },
                    StartBlock::McpToolListing {
                        mcp_server_name,
                        tools,
                    } => Block::McpToolListing {
                        mcp_server_name,
                        tools,
                    },
                    StartBlock::Unknown => return,
                };
                self.message.content.push(ContentBlock::Known(block));
            }
            StreamPayload::ContentBlockDelta { index, delta } => {
                let position = *index as usize;
                if let BlockDelta::InputJsonDelta { partial_json } = delta {
                    if let Some((_, input)) = self.inputs.iter_mut().find(|(at, _)| *at == position)
                    {
                        input.push_str(partial_json);
                    }
                    return;
                }
                match (self.message.content.get_mut(position), delta) {
                    (
                        Some(ContentBlock::Known(Block::Text { text, .. })),
                        BlockDelta::TextDelta { text: more },
                    ) => text.push_str(more),
                    (
                        Some(ContentBlock::Known(Block::Thinking { thinking, .. })),
                        BlockDelta::ThinkingDelta { thinking: more },
                    ) => thinking.push_str(more),
                    (
                        Some(ContentBlock::Known(Block::Thinking { signature, .. })),
                        BlockDelta::SignatureDelta { signature: given },
                    ) => *signature = Some(given.clone()),
                    _ => {}
                }
            }
            StreamPayload::ContentBlockStop { index } => {
                let position = *index as usize;
                let Some((_, text)) = self.inputs.iter().find(|(at, _)| *at == position) else {
                    return;
                };
                if let Some(ContentBlock::Known(
                    Block::ToolUse { input, .. }
                    | Block::McpToolUse { input, .. }
                    | Block::ServerToolUse { input, .. },
                )) = self.message.content.get_mut(position)
                {
                    *input = input_object(text);
                }
            }
            StreamPayload::MessageDelta { delta, usage } => {
                self.message.stop_reason.clone_from(&delta.stop_reason);
                self.message.stop_sequence.clone_from(&delta.stop_sequence);
                if let Some(usage) = usage {
                    let total = &mut self.message.usage;
                    total.output_tokens = usage.output_tokens;
                    if let Some(tokens) = usage.input_tokens {
                        total.input_tokens = tokens;
                    }
                    if let Some(tokens) = usage.cache_creation_input_tokens {
                        total.cache_creation_input_tokens = Some(tokens);
                    }
                    if let Some(tokens) = usage.cache_read_input_tokens {
                        total.cache_read_input_tokens = Some(tokens);
                    }
                }
            }
            StreamPayload::MessageStop
            | StreamPayload::Ping
            | StreamPayload::Error { .. }
            | StreamPayload::Unknown => {}
        }
    }

    pub fn finish(self) -> MessagesResponse {
        self.message
    }
}

/// A tool's streamed input as the object `input` must be: `{}` for no input, and for text
/// that is not a JSON object (the gateway reports such a call as malformed beside it).
fn input_object(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Map::new()),
    }
}
