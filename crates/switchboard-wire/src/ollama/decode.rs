//! Ollama NDJSON stream (and non-streaming body) → events. Calls arrive whole, without ids
//! or indices: each becomes start, arguments and end at once, numbered in order, with a
//! generated id; `done: true` is the terminator.

use super::finish_reason;
use super::types::OllamaChunk;
use crate::calls::Calls;
use crate::ids::IdSource;
use crate::lines::Lines;
use crate::{DecodeError, DecodeErrorKind, StreamDecoder, StreamEvent, Usage};

const TERMINATOR: &str = "a line with \"done\": true";

/// Incremental decoder of an Ollama `/api/chat` NDJSON stream.
#[derive(Debug, Default)]
pub struct Decoder {
    lines: Lines,
    state: State,
}

#[derive(Debug, Default)]
struct State {
    calls: Calls,
    done: bool,
}

impl Decoder {
    pub fn new(ids: IdSource) -> Self {
        Self {
            lines: Lines::default(),
            state: State {
                calls: Calls::new(ids),
                done: false,
            },
        }
    }
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        let state = &mut self.state;
        self.lines
            .feed(bytes, |offset, line| state.line(offset, line, out))
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        if let Some((offset, line)) = self.lines.rest()? {
            self.state
                .line(offset, line, out)
                .map_err(|error| error.at_end(TERMINATOR))?;
        }
        if !self.state.done {
            return Err(DecodeError::new(
                self.lines.position(),
                DecodeErrorKind::Truncated(TERMINATOR),
            ));
        }
        Ok(())
    }
}

impl State {
    fn line(
        &mut self,
        offset: usize,
        line: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.done || line.trim().is_empty() {
            return Ok(());
        }
        let chunk: OllamaChunk = serde_json::from_str(line)
            .map_err(|error| DecodeError::json(line, offset, &error, TERMINATOR))?;
        self.chunk(chunk, offset, out)
    }

    fn chunk(
        &mut self,
        chunk: OllamaChunk,
        offset: usize,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if let Some(error) = chunk.error {
            return Err(DecodeError::new(offset, DecodeErrorKind::Backend(error)));
        }
        if let Some(message) = chunk.message {
            if let Some(thinking) = message.thinking.filter(|text| !text.is_empty()) {
                out.push(StreamEvent::ReasoningDelta(thinking));
            }
            if !message.content.is_empty() {
                out.push(StreamEvent::TextDelta(message.content));
            }
            for call in message.tool_calls.into_iter().flatten() {
                let index = self
                    .calls
                    .open(call.id.as_deref(), Some(&call.function.name), out);
                let arguments = match call.function.arguments {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(text) => text,
                    object => object.to_string(),
                };
                self.calls.arguments(index, &arguments, out);
                self.calls
                    .close(index, out)
                    .map_err(|problem| DecodeError::protocol(offset, problem))?;
            }
        }
        if chunk.done {
            if chunk.prompt_eval_count.is_some() || chunk.eval_count.is_some() {
                out.push(StreamEvent::Usage(Usage::new(
                    chunk.prompt_eval_count.unwrap_or(0),
                    chunk.eval_count.unwrap_or(0),
                )));
            }
            let reason = finish_reason(chunk.done_reason.as_deref().unwrap_or("stop"));
            self.calls
                .finish(reason, out)
                .map_err(|problem| DecodeError::protocol(offset, problem))?;
            self.done = true;
        }
        Ok(())
    }
}

/// Events of a non-streaming `/api/chat` body (one object with `done: true`).
pub fn body_events(body: &[u8], ids: IdSource) -> Result<Vec<StreamEvent>, DecodeError> {
    let text = std::str::from_utf8(body)
        .map_err(|error| DecodeError::new(error.valid_up_to(), DecodeErrorKind::InvalidUtf8))?;
    let chunk: OllamaChunk = serde_json::from_str(text)
        .map_err(|error| DecodeError::json(text, 0, &error, "the end of the JSON body"))?;
    let mut state = State {
        calls: Calls::new(ids),
        done: false,
    };
    let mut out = Vec::new();
    state.chunk(chunk, 0, &mut out)?;
    if !state.done {
        return Err(DecodeError::new(
            body.len(),
            DecodeErrorKind::Truncated(TERMINATOR),
        ));
    }
    Ok(out)
}
