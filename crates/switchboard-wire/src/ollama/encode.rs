//! Events → Ollama NDJSON lines, and a whole answer → an `/api/chat` body. Ollama clients
//! expect each call whole with object arguments, so a call is held until it ends; the
//! final `done` line waits for the end because usage may follow the finish.

use serde_json::Value;

use super::done_reason;
use super::types::{OllamaChunk, OllamaFunction, OllamaMessage, OllamaToolCall};
use crate::{ChatResponse, EncodeError, FinishReason, StreamEvent, Usage};

#[derive(Debug)]
struct HeldCall {
    id: String,
    name: String,
    arguments: String,
}

/// Turns events into NDJSON chunks for one answer.
#[derive(Debug)]
pub struct NdjsonEncoder {
    model: String,
    created_at: String,
    calls: Vec<HeldCall>,
    usage: Option<Usage>,
    reason: Option<FinishReason>,
}

impl NdjsonEncoder {
    pub fn new(model: impl Into<String>, created_at: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            created_at: created_at.into(),
            calls: Vec::new(),
            usage: None,
            reason: None,
        }
    }

    /// The chunk this event completes, if any.
    pub fn event(&mut self, event: &StreamEvent) -> Result<Option<OllamaChunk>, EncodeError> {
        let message = match event {
            StreamEvent::TextDelta(text) => OllamaMessage {
                content: text.clone(),
                ..assistant()
            },
            StreamEvent::ReasoningDelta(text) => OllamaMessage {
                thinking: Some(text.clone()),
                ..assistant()
            },
            StreamEvent::ToolCallStart { id, name, .. } => {
                self.calls.push(HeldCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
                return Ok(None);
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                let call = self.calls.get_mut(*index).ok_or(EncodeError::Call {
                    index: *index,
                    problem: "never started",
                })?;
                call.arguments.push_str(delta);
                return Ok(None);
            }
            StreamEvent::ToolCallEnd { index } => {
                let call = self.calls.get(*index).ok_or(EncodeError::Call {
                    index: *index,
                    problem: "never started",
                })?;
                OllamaMessage {
                    tool_calls: Some(vec![tool_call(
                        *index,
                        &call.id,
                        &call.name,
                        &call.arguments,
                    )?]),
                    ..assistant()
                }
            }
            // Ollama has no signed reasoning.
            StreamEvent::ReasoningSignature(_) => return Ok(None),
            StreamEvent::Usage(usage) => {
                self.usage = Some(*usage);
                return Ok(None);
            }
            StreamEvent::Finish(reason) => {
                self.reason = Some(reason.clone());
                return Ok(None);
            }
        };
        Ok(Some(self.chunk(Some(message))))
    }

    /// The final `done: true` line.
    pub fn finish(&mut self) -> OllamaChunk {
        let mut chunk = self.chunk(Some(assistant()));
        chunk.done = true;
        chunk.done_reason =
            Some(done_reason(self.reason.as_ref().unwrap_or(&FinishReason::Stop)).to_owned());
        if let Some(usage) = self.usage {
            chunk.prompt_eval_count = Some(usage.prompt_tokens);
            chunk.eval_count = Some(usage.completion_tokens);
        }
        chunk
    }

    /// One NDJSON line.
    pub fn line(chunk: &OllamaChunk) -> String {
        // Serialising our own plain structs cannot fail; an empty object keeps the stream parseable.
        let mut line = serde_json::to_string(chunk).unwrap_or_else(|_| "{}".to_owned());
        line.push('\n');
        line
    }

    fn chunk(&self, message: Option<OllamaMessage>) -> OllamaChunk {
        OllamaChunk {
            model: self.model.clone(),
            created_at: self.created_at.clone(),
            message,
            ..OllamaChunk::default()
        }
    }
}

fn assistant() -> OllamaMessage {
    OllamaMessage {
        role: "assistant".to_owned(),
        ..OllamaMessage::default()
    }
}

fn tool_call(
    index: usize,
    id: &str,
    name: &str,
    arguments: &str,
) -> Result<OllamaToolCall, EncodeError> {
    let arguments = match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) => {
            return Err(EncodeError::Arguments {
                index,
                detail: "not an object".to_owned(),
            });
        }
        Err(error) => {
            return Err(EncodeError::Arguments {
                index,
                detail: error.to_string(),
            });
        }
    };
    Ok(OllamaToolCall {
        id: Some(id.to_owned()),
        function: OllamaFunction {
            index: u32::try_from(index).ok(),
            name: name.to_owned(),
            arguments,
        },
    })
}

/// A whole answer as a non-streaming `/api/chat` body.
pub fn response(
    answer: &ChatResponse,
    model: impl Into<String>,
    created_at: impl Into<String>,
) -> Result<OllamaChunk, EncodeError> {
    let tool_calls = answer
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| tool_call(index, &call.id, &call.name, &call.arguments))
        .collect::<Result<Vec<_>, _>>()?;
    let usage = answer.usage;
    Ok(OllamaChunk {
        model: model.into(),
        created_at: created_at.into(),
        message: Some(OllamaMessage {
            content: answer.content.clone().unwrap_or_default(),
            thinking: answer.reasoning_content.clone(),
            tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
            ..assistant()
        }),
        done: true,
        done_reason: Some(done_reason(&answer.finish_reason).to_owned()),
        prompt_eval_count: usage.map(|usage| usage.prompt_tokens),
        eval_count: usage.map(|usage| usage.completion_tokens),
        ..OllamaChunk::default()
    })
}
