//! OpenAI SSE stream (and non-streaming body) → events. This is where servers differ most:
//! fragments interleaved by `index`, `index` always 0 with distinct ids, missing or reused
//! ids, whole arguments in one chunk, `null` deltas, empty `choices`, text and a call in
//! the same delta. All of it lands on the same event sequence.

use std::collections::HashMap;

use serde_json::Value;

use super::types::{ChatCompletion, ChatCompletionChunk, Delta, WireToolCall, error_message};
use crate::calls::Calls;
use crate::ids::IdSource;
use crate::sse::{Sse, SseEvent};
use crate::{DecodeError, DecodeErrorKind, FinishReason, StreamDecoder, StreamEvent};

const TERMINATOR: &str = "data: [DONE]";

/// Incremental decoder of an OpenAI chat completion SSE stream.
#[derive(Debug, Default)]
pub struct Decoder {
    sse: Sse,
    state: State,
}

impl Decoder {
    pub fn new(ids: IdSource) -> Self {
        Self {
            sse: Sse::default(),
            state: State::new(ids),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    calls: Calls,
    /// The server's `index` → our index of the call it currently designates.
    by_index: HashMap<u32, usize>,
    /// The id the server gave each of our calls, before any de-duplication.
    server_ids: Vec<Option<String>>,
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
    fn new(ids: IdSource) -> Self {
        Self {
            calls: Calls::new(ids),
            ..Self::default()
        }
    }

    fn event(
        &mut self,
        event: &SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.done {
            return Ok(());
        }
        if event.data.trim() == "[DONE]" {
            self.done = true;
            if !self.calls.finished() {
                self.finish(FinishReason::Stop, event.offset, out)?;
            }
            return Ok(());
        }
        // Some proxies report a failure as `event: error` with a JSON or plain-text body.
        if event.name == "error" {
            let message = serde_json::from_str::<serde_json::Value>(event.data).map_or_else(
                |_| event.data.to_owned(),
                |value| error_message(value.get("error").unwrap_or(&value)),
            );
            return Err(DecodeError::new(
                event.offset,
                DecodeErrorKind::Backend(message),
            ));
        }
        let chunk: ChatCompletionChunk = serde_json::from_str(event.data).map_err(|error| {
            DecodeError::json(event.data, event.data_offset, &error, TERMINATOR)
        })?;
        self.chunk(chunk, event.offset, out)
    }

    fn chunk(
        &mut self,
        chunk: ChatCompletionChunk,
        offset: usize,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if let Some(error) = chunk.error {
            return Err(DecodeError::new(
                offset,
                DecodeErrorKind::Backend(error_message(&error)),
            ));
        }
        for choice in chunk.choices {
            if choice.index != 0 {
                return Err(DecodeError::protocol(
                    offset,
                    format!(
                        "choice {} received: only one choice (n = 1) is supported",
                        choice.index
                    ),
                ));
            }
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish(finish_reason(&reason, choice.stop_reason), offset, out)?;
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamEvent::Usage(usage.usage()));
        }
        Ok(())
    }

    fn finish(
        &mut self,
        reason: FinishReason,
        offset: usize,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        self.calls
            .finish(reason, out)
            .map_err(|problem| DecodeError::protocol(offset, problem))
    }

    /// Reasoning first, then text, then calls: a delta carrying text and a call yields both.
    fn delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) {
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !reasoning.is_empty() {
                out.push(StreamEvent::ReasoningDelta(reasoning));
            }
        }
        if let Some(content) = delta.content.filter(|text| !text.is_empty()) {
            out.push(StreamEvent::TextDelta(content));
        }
        for fragment in delta.tool_calls.into_iter().flatten() {
            self.fragment(fragment, out);
        }
    }

    fn fragment(&mut self, fragment: WireToolCall, out: &mut Vec<StreamEvent>) {
        let name = fragment.function.name.as_deref();
        let ours = match self.continues(&fragment) {
            Some(ours) => {
                if let Some(name) = name {
                    self.calls.name(ours, name, out);
                }
                ours
            }
            None => {
                let ours = self.calls.open(fragment.id.as_deref(), name, out);
                self.server_ids.push(fragment.id.clone());
                if let Some(index) = fragment.index {
                    self.by_index.insert(index, ours);
                }
                ours
            }
        };
        if let Some(arguments) = &fragment.function.arguments {
            self.calls.arguments(ours, arguments, out);
        }
    }

    /// The open call this fragment continues, if any. A fragment starts a new call when its
    /// index is new, or when it carries an id other than that call's (servers that send
    /// `index: 0` for every parallel call).
    fn continues(&self, fragment: &WireToolCall) -> Option<usize> {
        let candidate = match fragment.index {
            Some(index) => *self.by_index.get(&index)?,
            None => self.server_ids.len().checked_sub(1)?,
        };
        if !self.calls.is_open(candidate) {
            return None;
        }
        let server_id = self.server_ids.get(candidate)?.as_deref();
        match fragment.id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) if server_id != Some(id) => None,
            // Without an index or an id, a second name can only be a second call.
            None if fragment.index.is_none()
                && fragment.function.name.is_some()
                && server_id.is_none() =>
            {
                None
            }
            _ => Some(candidate),
        }
    }
}

/// Events of a non-streaming `chat.completion` body, normalised exactly as a stream is.
pub fn body_events(body: &[u8], ids: IdSource) -> Result<Vec<StreamEvent>, DecodeError> {
    let text = std::str::from_utf8(body)
        .map_err(|error| DecodeError::new(error.valid_up_to(), DecodeErrorKind::InvalidUtf8))?;
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|error| DecodeError::json(text, 0, &error, "the end of the JSON body"))?;
    if let Some(error) = value.get("error") {
        return Err(DecodeError::new(
            0,
            DecodeErrorKind::Backend(error_message(error)),
        ));
    }
    let completion: ChatCompletion = serde_json::from_value(value)
        .map_err(|error| DecodeError::json(text, 0, &error, "the end of the JSON body"))?;
    let mut state = State::new(ids);
    let mut out = Vec::new();
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(DecodeError::protocol(0, "the response has no choices"));
    };
    let message = choice.message;
    let tool_calls = message.tool_calls.map(|calls| {
        calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| WireToolCall {
                index: u32::try_from(position).ok(),
                ..call
            })
            .collect()
    });
    state.delta(
        Delta {
            role: None,
            content: message.content,
            reasoning_content: message.reasoning_content,
            reasoning: message.reasoning,
            tool_calls,
        },
        &mut out,
    );
    let reason = choice
        .finish_reason
        .as_deref()
        .map_or(FinishReason::Stop, |reason| {
            finish_reason(reason, choice.stop_reason.clone())
        });
    state.finish(reason, 0, &mut out)?;
    if let Some(usage) = completion.usage {
        out.push(StreamEvent::Usage(usage.usage()));
    }
    Ok(out)
}

/// A finish reason, made precise by vLLM's `stop_reason` when a stop string ended the
/// answer (a token id there says nothing a client asked for).
fn finish_reason(reason: &str, stop_reason: Option<Value>) -> FinishReason {
    match (FinishReason::from_openai(reason), stop_reason) {
        (FinishReason::Stop, Some(Value::String(sequence))) => FinishReason::StopSequence(sequence),
        (reason, _) => reason,
    }
}
