//! Events → Anthropic SSE, and a whole answer → a Messages body: what the gateway sends
//! Anthropic clients. Anthropic blocks are strictly sequential while OpenAI backends may
//! interleave parallel calls, so calls after the first are held until the one before ends
//! (and text that comes while a call is open follows it); `message_delta` waits for the end
//! because OpenAI backends send usage after the finish. A whole body is this same stream
//! folded, so the two cannot disagree.

use serde_json::{Map, Value};

use super::fold::MessageBuilder;
use super::stop_reason;
use super::types::{
    AnthropicUsage, BlockDelta, DeltaUsage, MessageDeltaBody, MessagesResponse, StartBlock,
    StreamPayload,
};
use crate::ids::IdMap;
use crate::{ChatResponse, EncodeError, FinishReason, StreamEvent, Usage};

#[derive(Debug)]
struct HeldCall {
    id: String,
    name: String,
    arguments: String,
    ended: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Tool(usize),
    /// An MCP connector block, opened and closed at once.
    Mcp,
}

/// A server tool call's id as Anthropic spells it (`srvtoolu_…`), from the gateway's
/// `toolu_…` or the model's own.
fn server_tool_id(id: &str) -> String {
    if id.starts_with(super::tool_search::SERVER_ID_PREFIX) {
        return id.to_owned();
    }
    let rest = id.strip_prefix("toolu_").unwrap_or(id);
    format!("{}{rest}", super::tool_search::SERVER_ID_PREFIX)
}

/// Turns events into Anthropic stream payloads for one message.
#[derive(Debug)]
pub struct SseEncoder {
    id: String,
    model: String,
    ids: IdMap,
    input_estimate: u64,
    started: bool,
    open: Option<(u32, Open)>,
    next_block: u32,
    calls: Vec<HeldCall>,
    /// The first call whose block has not been closed yet.
    head: usize,
    /// Text that arrived while calls were still being sent, to follow them.
    deferred: Vec<StreamEvent>,
    usage: Option<Usage>,
    reason: Option<FinishReason>,
}

impl SseEncoder {
    /// Tool ids are rewritten through `ids` where Anthropic would reject them.
    pub fn new(id: impl Into<String>, model: impl Into<String>, ids: IdMap) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            ids,
            input_estimate: 0,
            started: false,
            open: None,
            next_block: 0,
            calls: Vec::new(),
            head: 0,
            deferred: Vec::new(),
            usage: None,
            reason: None,
        }
    }

    /// The `input_tokens` `message_start` announces: an estimate, since OpenAI-compatible
    /// backends count the prompt only at the end (`message_delta` carries the real count).
    pub fn with_input_estimate(mut self, tokens: u64) -> Self {
        self.set_input_estimate(tokens);
        self
    }

    /// Replaces the figure [`Self::with_input_estimate`] set, before `message_start` is sent:
    /// a count that arrived in time.
    pub fn set_input_estimate(&mut self, tokens: u64) {
        self.input_estimate = tokens;
    }

    /// The id map, with every rewrite this encoder made.
    pub fn into_ids(self) -> IdMap {
        self.ids
    }

    /// `message_start`, unless it was sent already; every other method starts with it too.
    pub fn start(&mut self) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        out
    }

    /// The payloads this event completes (possibly none, when it must wait).
    pub fn event(&mut self, event: &StreamEvent) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        match event {
            // Anthropic clients reject empty blocks; an empty delta must not open one.
            StreamEvent::TextDelta(text)
            | StreamEvent::ReasoningDelta(text)
            | StreamEvent::ReasoningSignature(text)
                if text.is_empty() => {}
            StreamEvent::TextDelta(_)
            | StreamEvent::ReasoningDelta(_)
            | StreamEvent::ReasoningSignature(_)
                if self.head < self.calls.len() =>
            {
                self.deferred.push(event.clone());
            }
            StreamEvent::TextDelta(text) => {
                self.ensure_open(Open::Text, &mut out);
                self.delta(BlockDelta::TextDelta { text: text.clone() }, &mut out);
            }
            StreamEvent::ReasoningDelta(text) => {
                self.ensure_open(Open::Thinking, &mut out);
                self.delta(
                    BlockDelta::ThinkingDelta {
                        thinking: text.clone(),
                    },
                    &mut out,
                );
            }
            StreamEvent::ReasoningSignature(signature) => {
                self.ensure_open(Open::Thinking, &mut out);
                self.delta(
                    BlockDelta::SignatureDelta {
                        signature: signature.clone(),
                    },
                    &mut out,
                );
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                if *index == self.calls.len() {
                    let id = self.ids.to_anthropic(id);
                    self.calls.push(HeldCall {
                        id,
                        name: name.clone(),
                        arguments: String::new(),
                        ended: false,
                    });
                    self.pump(&mut out);
                }
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                if self
                    .open
                    .is_some_and(|(_, open)| open == Open::Tool(*index))
                {
                    self.delta(
                        BlockDelta::InputJsonDelta {
                            partial_json: delta.clone(),
                        },
                        &mut out,
                    );
                } else if let Some(call) = self.calls.get_mut(*index) {
                    call.arguments.push_str(delta);
                }
            }
            StreamEvent::ToolCallEnd { index } => {
                if let Some(call) = self.calls.get_mut(*index) {
                    call.ended = true;
                }
                self.pump(&mut out);
            }
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Finish(reason) => self.reason = Some(reason.clone()),
        }
        out
    }

    /// A call the gateway runs on an MCP server, as the MCP connector's `mcp_tool_use`
    /// block, its input whole (the call was complete before it ran).
    pub fn mcp_tool_use(
        &mut self,
        id: &str,
        name: &str,
        server_name: &str,
        arguments: &str,
    ) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        self.close(&mut out);
        let content_block = StartBlock::McpToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            server_name: server_name.to_owned(),
            input: Value::Object(Map::new()),
        };
        self.begin(Open::Mcp, content_block, &mut out);
        if !arguments.is_empty() {
            self.delta(
                BlockDelta::InputJsonDelta {
                    partial_json: arguments.to_owned(),
                },
                &mut out,
            );
        }
        self.close(&mut out);
        out
    }

    /// A tool search the gateway ran, as Anthropic's server-side search answers it: a
    /// `server_tool_use` block (its input whole) and the `tool_search_tool_result` block,
    /// `found` being the tools' names or, when the input was unusable, an error.
    pub fn tool_search(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
        found: Result<&[String], ()>,
    ) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        self.close(&mut out);
        let id = server_tool_id(id);
        let content_block = StartBlock::ServerToolUse {
            id: id.clone(),
            name: name.to_owned(),
            input: Value::Object(Map::new()),
        };
        self.begin(Open::Mcp, content_block, &mut out);
        // Input that is no JSON object (the model's mistake, which the result reports) is
        // shown as none: clients parse the input.
        let object = serde_json::from_str::<Value>(arguments).is_ok_and(|input| input.is_object());
        if object {
            self.delta(
                BlockDelta::InputJsonDelta {
                    partial_json: arguments.to_owned(),
                },
                &mut out,
            );
        }
        self.close(&mut out);
        let content_block = StartBlock::ToolSearchToolResult {
            tool_use_id: id,
            content: super::tool_search::result_content(found),
        };
        self.begin(Open::Mcp, content_block, &mut out);
        self.close(&mut out);
        out
    }

    /// The tools listed from an MCP server, as the 2026-09-15 beta's `mcp_tool_listing`
    /// block (`tools`: name, description and input_schema of each).
    pub fn mcp_tool_listing(&mut self, mcp_server_name: &str, tools: Value) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        self.close(&mut out);
        let content_block = StartBlock::McpToolListing {
            mcp_server_name: mcp_server_name.to_owned(),
            tools,
        };
        self.begin(Open::Mcp, content_block, &mut out);
        self.close(&mut out);
        out
    }

    /// The result of an MCP call, as an `mcp_tool_result` block.
    pub fn mcp_tool_result(
        &mut self,
        tool_use_id: &str,
        text: &str,
        is_error: bool,
    ) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        self.close(&mut out);
        let content_block = StartBlock::McpToolResult {
            tool_use_id: tool_use_id.to_owned(),
            is_error,
            content: serde_json::json!([{"type": "text", "text": text}]),
        };
        self.begin(Open::Mcp, content_block, &mut out);
        self.close(&mut out);
        out
    }

    /// The end of the answer: everything held, then `message_delta` and `message_stop`.
    pub fn finish(&mut self) -> Vec<StreamPayload> {
        let mut out = Vec::new();
        self.begin_message(&mut out);
        for call in &mut self.calls {
            call.ended = true;
        }
        self.pump(&mut out);
        self.close(&mut out);
        let usage = self.usage.unwrap_or_default();
        let reason = self.reason.clone().unwrap_or(FinishReason::Stop);
        out.push(StreamPayload::MessageDelta {
            delta: MessageDeltaBody {
                stop_reason: Some(stop_reason(&reason).to_owned()),
                stop_sequence: match reason {
                    FinishReason::StopSequence(sequence) => Some(sequence),
                    _ => None,
                },
            },
            usage: Some(DeltaUsage {
                input_tokens: Some(usage.prompt_tokens),
                cache_creation_input_tokens: Some(0),
                cache_read_input_tokens: Some(0),
                output_tokens: usage.completion_tokens,
            }),
        });
        out.push(StreamPayload::MessageStop);
        out
    }

    /// SSE bytes for payloads: `event: <type>` and `data: <json>` per payload.
    pub fn sse(payloads: &[StreamPayload]) -> String {
        let mut text = String::new();
        for payload in payloads {
            // Serialising our own plain structs cannot fail; an empty object keeps the stream valid.
            let json = serde_json::to_string(payload).unwrap_or_else(|_| "{}".to_owned());
            push_sse_event(&mut text, payload.event_name(), &json);
        }
        text
    }

    fn begin_message(&mut self, out: &mut Vec<StreamPayload>) {
        if self.started {
            return;
        }
        self.started = true;
        out.push(StreamPayload::MessageStart {
            message: MessagesResponse {
                id: self.id.clone(),
                kind: "message".to_owned(),
                role: "assistant".to_owned(),
                model: self.model.clone(),
                content: Vec::new(),
                stop_reason: None,
                stop_sequence: None,
                usage: AnthropicUsage {
                    input_tokens: self.input_estimate,
                    cache_creation_input_tokens: Some(0),
                    cache_read_input_tokens: Some(0),
                    output_tokens: 0,
                },
                extra: Map::new(),
            },
        });
    }

    /// Opens a text or thinking block unless one of that kind is open.
    fn ensure_open(&mut self, kind: Open, out: &mut Vec<StreamPayload>) {
        if self.open.map(|(_, open)| open) == Some(kind) {
            return;
        }
        self.close(out);
        let content_block = match kind {
            Open::Thinking => StartBlock::Thinking {
                thinking: String::new(),
                signature: String::new(),
            },
            _ => StartBlock::Text {
                text: String::new(),
            },
        };
        self.begin(kind, content_block, out);
    }

    /// A delta for the open block.
    fn delta(&self, delta: BlockDelta, out: &mut Vec<StreamPayload>) {
        out.push(StreamPayload::ContentBlockDelta {
            index: self.next_block - 1,
            delta,
        });
    }

    fn begin(&mut self, kind: Open, content_block: StartBlock, out: &mut Vec<StreamPayload>) {
        out.push(StreamPayload::ContentBlockStart {
            index: self.next_block,
            content_block,
        });
        self.open = Some((self.next_block, kind));
        self.next_block += 1;
    }

    fn close(&mut self, out: &mut Vec<StreamPayload>) {
        if let Some((index, _)) = self.open.take() {
            out.push(StreamPayload::ContentBlockStop { index });
        }
    }

    /// Sends calls in order as far as they can go, then any text that waited for them.
    fn pump(&mut self, out: &mut Vec<StreamPayload>) {
        while let Some(call) = self.calls.get_mut(self.head) {
            if self.open.map(|(_, open)| open) != Some(Open::Tool(self.head)) {
                let held = std::mem::take(&mut call.arguments);
                let content_block = StartBlock::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: Value::Object(Map::new()),
                };
                self.close(out);
                self.begin(Open::Tool(self.head), content_block, out);
                if !held.is_empty() {
                    self.delta(BlockDelta::InputJsonDelta { partial_json: held }, out);
                }
            }
            if !self.calls.get(self.head).is_some_and(|call| call.ended) {
                return;
            }
            self.close(out);
            self.head += 1;
        }
        for event in std::mem::take(&mut self.deferred) {
            let more = self.event(&event);
            out.extend(more);
        }
    }
}

/// Appends one SSE event: `event: NAME`, `data: JSON`, a blank line.
pub fn push_sse_event(text: &mut String, name: &str, json: &str) {
    text.push_str("event: ");
    text.push_str(name);
    text.push_str("\ndata: ");
    text.push_str(json);
    text.push_str("\n\n");
}

/// A whole answer as a non-streaming Messages body: the stream [`SseEncoder`] would send,
/// folded. Tool arguments must be a JSON object.
pub fn message(
    response: &ChatResponse,
    id: impl Into<String>,
    model: impl Into<String>,
    ids: &mut IdMap,
) -> Result<MessagesResponse, EncodeError> {
    for (index, call) in response.tool_calls.iter().enumerate() {
        let input = serde_json::from_str::<Value>(&call.arguments).map_err(|error| {
            EncodeError::Arguments {
                index,
                detail: error.to_string(),
            }
        })?;
        if !input.is_object() {
            return Err(EncodeError::Arguments {
                index,
                detail: "not an object".to_owned(),
            });
        }
    }
    let mut encoder = SseEncoder::new(id, model, std::mem::take(ids));
    let mut builder = MessageBuilder::new();
    for event in response.events() {
        for payload in encoder.event(&event) {
            builder.push(&payload);
        }
    }
    for payload in encoder.finish() {
        builder.push(&payload);
    }
    *ids = encoder.into_ids();
    Ok(builder.finish())
}
