//! Events → OpenAI chunks and SSE bytes, and a whole answer → a `chat.completion` body:
//! what the gateway sends its clients.

use super::types::{
    ChatCompletion, ChatCompletionChunk, Choice, ChunkChoice, Delta, ResponseMessage,
    WireFunctionCall, WireToolCall, WireUsage,
};
use crate::{ChatResponse, StreamEvent};

/// The last bytes of every OpenAI stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// Turns events into `chat.completion.chunk`s that share one id, model and creation time.
#[derive(Debug)]
pub struct ChunkEncoder {
    id: String,
    model: String,
    created: u64,
    sent_role: bool,
}

impl ChunkEncoder {
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: u64) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            created,
            sent_role: false,
        }
    }

    /// The chunk carrying this event; `ToolCallEnd` and `ReasoningSignature` have none.
    pub fn chunk(&mut self, event: &StreamEvent) -> Option<ChatCompletionChunk> {
        let mut delta = Delta::default();
        let mut finish_reason = None;
        match event {
            StreamEvent::TextDelta(text) => delta.content = Some(text.clone()),
            StreamEvent::ReasoningDelta(text) => delta.reasoning_content = Some(text.clone()),
            StreamEvent::ToolCallStart { index, id, name } => {
                delta.tool_calls = Some(vec![WireToolCall {
                    index: u32::try_from(*index).ok(),
                    id: Some(id.clone()),
                    kind: Some("function".to_owned()),
                    function: WireFunctionCall {
                        name: Some(name.clone()),
                        arguments: Some(String::new()),
                    },
                }]);
            }
            StreamEvent::ToolCallArguments {
                index,
                delta: arguments,
            } => {
                delta.tool_calls = Some(vec![WireToolCall {
                    index: u32::try_from(*index).ok(),
                    function: WireFunctionCall {
                        name: None,
                        arguments: Some(arguments.clone()),
                    },
                    ..WireToolCall::default()
                }]);
            }
            // OpenAI marks no call's end, and has no signed reasoning.
            StreamEvent::ToolCallEnd { .. } | StreamEvent::ReasoningSignature(_) => return None,
            StreamEvent::Usage(usage) => {
                let mut chunk = self.empty_chunk();
                chunk.usage = Some(WireUsage::from(usage));
                return Some(chunk);
            }
            StreamEvent::Finish(reason) => finish_reason = Some(reason.as_openai().to_owned()),
        }
        if !self.sent_role {
            self.sent_role = true;
            delta.role = Some("assistant".to_owned());
        }
        let mut chunk = self.empty_chunk();
        chunk.choices.push(ChunkChoice {
            index: 0,
            delta: Some(delta),
            finish_reason,
            stop_reason: None,
        });
        Some(chunk)
    }

    /// The SSE bytes (`data: …\n\n`) for this event, if it has a chunk.
    pub fn sse(&mut self, event: &StreamEvent) -> Option<String> {
        let chunk = self.chunk(event)?;
        // Serialising our own plain structs cannot fail; an empty object keeps the stream valid.
        let json = serde_json::to_string(&chunk).unwrap_or_else(|_| "{}".to_owned());
        Some(format!("data: {json}\n\n"))
    }

    fn empty_chunk(&self) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".to_owned(),
            created: self.created,
            model: self.model.clone(),
            choices: Vec::new(),
            usage: None,
            system_fingerprint: None,
            error: None,
        }
    }
}

/// A whole answer as a non-streaming `chat.completion` body.
pub fn completion(
    response: &ChatResponse,
    id: impl Into<String>,
    model: impl Into<String>,
    created: u64,
) -> ChatCompletion {
    let tool_calls = (!response.tool_calls.is_empty()).then(|| {
        response
            .tool_calls
            .iter()
            .map(|call| WireToolCall {
                index: None,
                id: Some(call.id.clone()),
                kind: Some("function".to_owned()),
                function: WireFunctionCall {
                    name: Some(call.name.clone()),
                    arguments: Some(call.arguments.clone()),
                },
            })
            .collect()
    });
    ChatCompletion {
        id: id.into(),
        object: "chat.completion".to_owned(),
        created,
        model: model.into(),
        choices: vec![Choice {
            index: 0,
            message: ResponseMessage {
                role: "assistant".to_owned(),
                content: response.content.clone(),
                reasoning_content: response.reasoning_content.clone(),
                reasoning: None,
                tool_calls,
                refusal: None,
            },
            finish_reason: Some(response.finish_reason.as_openai().to_owned()),
            stop_reason: None,
            logprobs: None,
        }],
        usage: response.usage.as_ref().map(WireUsage::from),
        system_fingerprint: None,
        extra: serde_json::Map::new(),
    }
}
