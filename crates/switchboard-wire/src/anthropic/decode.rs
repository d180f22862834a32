//! Anthropic Messages SSE stream (and non-streaming body) → events. Content blocks become
//! text, reasoning or tool calls; a tool_use block's arguments are its `input_json_delta`s
//! (the first of which is empty), a thinking block's signature is kept beside its text,
//! prompt tokens count cached ones too, `ping` may come anywhere, and only `message_stop`
//! ends the stream.

use std::collections::HashMap;

use super::finish_reason_with;
use super::types::{
    AnthropicUsage, Block, BlockDelta, ContentBlock, MessagesResponse, StartBlock, StreamPayload,
};
use crate::calls::Calls;
use crate::ids::IdSource;
use crate::sse::{Sse, SseEvent};
use crate::{DecodeError, DecodeErrorKind, FinishReason, StreamDecoder, StreamEvent, Usage};

const TERMINATOR: &str = "event: message_stop";

/// Incremental decoder of an Anthropic Messages SSE stream.
#[derive(Debug, Default)]
pub struct Decoder {
    sse: Sse,
    state: State,
}

impl Decoder {
    pub fn new(ids: IdSource) -> Self {
        Self {
            sse: Sse::default(),
            state: State {
                calls: Calls::new(ids),
                ..State::default()
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum OpenBlock {
    Text,
    Thinking,
    Tool(usize),
    Other,
}

#[derive(Debug, Default)]
struct State {
    calls: Calls,
    blocks: HashMap<u32, OpenBlock>,
    /// The start's usage, for counts a `message_delta` leaves out.
    start_usage: AnthropicUsage,
    done: bool,
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        let state = &mut self.state;
        self.sse.feed(bytes, |event| state.event(&event, out))
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        let state = &mut self.state;
        self.sse
            .finish(|event| state.event(&event, out))
            .map_err(|error| error.at_end(TERMINATOR))?;
        if !self.state.done {
            return Err(DecodeError::new(
                self.sse.position(),
                DecodeErrorKind::Truncated(TERMINATOR),
            ));
        }
        Ok(())
    }
}

impl State {
    fn event(
        &mut self,
        event: &SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.done {
            return Ok(());
        }
        let payload: StreamPayload = serde_json::from_str(event.data).map_err(|error| {
            DecodeError::json(event.data, event.data_offset, &error, TERMINATOR)
        })?;
        let offset = event.offset;
        let protocol = |problem: String| DecodeError::protocol(offset, problem);
        match payload {
            StreamPayload::MessageStart { message } => self.start_usage = message.usage,
            StreamPayload::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    StartBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push(StreamEvent::TextDelta(text));
                        }
                        OpenBlock::Text
                    }
                    StartBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        if !thinking.is_empty() {
                            out.push(StreamEvent::ReasoningDelta(thinking));
                        }
                        if !signature.is_empty() {
                            out.push(StreamEvent::ReasoningSignature(signature));
                        }
                        OpenBlock::Thinking
                    }
                    StartBlock::ToolUse { id, name, input } => {
                        let call = self.calls.open(Some(&id), Some(&name), out);
                        // Streams send `{}` here and the input as deltas; a proxy that sends
                        // the whole input up front sends no deltas.
                        if input.as_object().is_some_and(|object| !object.is_empty()) {
                            self.calls.arguments(call, &input.to_string(), out);
                        }
                        OpenBlock::Tool(call)
                    }
                    // A backend that ran MCP tools or a search itself: what it did is not
                    // ours to redo.
                    StartBlock::McpToolUse { .. }
                    | StartBlock::McpToolResult { .. }
                    | StartBlock::McpToolListing { .. }
                    | StartBlock::ServerToolUse { .. }
                    | StartBlock::ToolSearchToolResult { .. }
                    | StartBlock::Unknown => OpenBlock::Other,
                };
                self.blocks.insert(index, block);
            }
            StreamPayload::ContentBlockDelta { index, delta } => {
                let block = *self.blocks.get(&index).ok_or_else(|| {
                    protocol(format!(
                        "delta for content block {index}, which was never started"
                    ))
                })?;
                match (delta, block) {
                    (BlockDelta::TextDelta { text }, _) if !text.is_empty() => {
                        out.push(StreamEvent::TextDelta(text))
                    }
                    (BlockDelta::ThinkingDelta { thinking }, _) if !thinking.is_empty() => {
                        out.push(StreamEvent::ReasoningDelta(thinking));
                    }
                    (BlockDelta::SignatureDelta { signature }, _) if !signature.is_empty() => {
                        out.push(StreamEvent::ReasoningSignature(signature));
                    }
                    (BlockDelta::InputJsonDelta { partial_json }, OpenBlock::Tool(call)) => {
                        self.calls.arguments(call, &partial_json, out);
                    }
                    (BlockDelta::InputJsonDelta { .. }, _) => {
                        return Err(protocol(format!(
                            "input_json_delta for content block {index}, which is not tool_use"
                        )));
                    }
                    _ => {}
                }
            }
            StreamPayload::ContentBlockStop { index } => {
                if let Some(OpenBlock::Tool(call)) = self.blocks.get(&index) {
                    self.calls.close(*call, out).map_err(protocol)?;
                }
            }
            StreamPayload::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    let start = &self.start_usage;
                    let total = AnthropicUsage {
                        input_tokens: usage.input_tokens.unwrap_or(start.input_tokens),
                        cache_creation_input_tokens: usage
                            .cache_creation_input_tokens
                            .or(start.cache_creation_input_tokens),
                        cache_read_input_tokens: usage
                            .cache_read_input_tokens
                            .or(start.cache_read_input_tokens),
                        output_tokens: usage.output_tokens,
                    };
                    out.push(StreamEvent::Usage(Usage::new(
                        total.prompt_tokens(),
                        total.output_tokens,
                    )));
                }
                if let Some(reason) = delta.stop_reason {
                    self.calls
                        .finish(finish_reason_with(&reason, delta.stop_sequence), out)
                        .map_err(protocol)?;
                }
            }
            StreamPayload::MessageStop => {
                if !self.calls.finished() {
                    self.calls
                        .finish(FinishReason::Stop, out)
                        .map_err(protocol)?;
                }
                self.done = true;
            }
            StreamPayload::Error { error } => {
                let message = if error.kind.is_empty() {
                    error.message
                } else {
                    format!("{}: {}", error.kind, error.message)
                };
                return Err(DecodeError::new(offset, DecodeErrorKind::Backend(message)));
            }
            StreamPayload::Ping | StreamPayload::Unknown => {}
        }
        Ok(())
    }
}

/// Events of a non-streaming Messages body, normalised exactly as a stream is.
pub fn body_events(body: &[u8], ids: IdSource) -> Result<Vec<StreamEvent>, DecodeError> {
    const END: &str = "the end of the JSON body";
    let text = std::str::from_utf8(body)
        .map_err(|error| DecodeError::new(error.valid_up_to(), DecodeErrorKind::InvalidUtf8))?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| DecodeError::json(text, 0, &error, END))?;
    if value.get("type").and_then(serde_json::Value::as_str) == Some("error") {
        let error = value.get("error").cloned().unwrap_or_default();
        let message = error
            .get("message")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(DecodeError::new(0, DecodeErrorKind::Backend(message)));
    }
    let response: MessagesResponse =
        serde_json::from_value(value).map_err(|error| DecodeError::json(text, 0, &error, END))?;
    let mut calls = Calls::new(ids);
    let mut out = Vec::new();
    for block in response.content {
        match block {
            ContentBlock::Known(Block::Text { text, .. }) if !text.is_empty() => {
                out.push(StreamEvent::TextDelta(text))
            }
            ContentBlock::Known(Block::Thinking {
                thinking,
                signature,
            }) => {
                if !thinking.is_empty() {
                    out.push(StreamEvent::ReasoningDelta(thinking));
                }
                if let Some(signature) = signature.filter(|signature| !signature.is_empty()) {
                    out.push(StreamEvent::ReasoningSignature(signature));
                }
            }
            ContentBlock::Known(Block::ToolUse {
                id, name, input, ..
            }) => {
                let call = calls.open(Some(&id), Some(&name), &mut out);
                calls.arguments(call, &input.to_string(), &mut out);
                calls
                    .close(call, &mut out)
                    .map_err(|problem| DecodeError::protocol(0, problem))?;
            }
            _ => {}
        }
    }
    out.push(StreamEvent::Usage(Usage::new(
        response.usage.prompt_tokens(),
        response.usage.output_tokens,
    )));
    let reason = response
        .stop_reason
        .as_deref()
        .map_or(FinishReason::Stop, |reason| {
            finish_reason_with(reason, response.stop_sequence.clone())
        });
    calls
        .finish(reason, &mut out)
        .map_err(|problem| DecodeError::protocol(0, problem))?;
    Ok(out)
}
