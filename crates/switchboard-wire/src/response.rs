//! A whole answer, and the collector that folds a stream of events into one. Every
//! non-streaming result is built by this collector, so it cannot disagree with the stream.

use switchboard_tools::{Content, Message, ToolCall};

use crate::{FinishReason, StreamEvent, Usage};

/// A model's complete answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// None when the model produced no text at all.
    pub content: Option<String>,
    pub reasoning_content: Option<String>,
    /// Anthropic's signature of `reasoning_content`, when the backend gave one.
    pub reasoning_signature: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    pub usage: Option<Usage>,
}

impl ChatResponse {
    /// The assistant message that records this answer in a conversation.
    pub fn message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone().map(Content::Text),
            reasoning_content: self.reasoning_content.clone(),
            reasoning_signature: self.reasoning_signature.clone(),
            tool_calls: self.tool_calls.clone(),
            name: None,
        }
    }

    /// The answer as a stream: what a server encodes when it has a whole answer to send.
    pub fn events(&self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        if let Some(reasoning) = self
            .reasoning_content
            .as_ref()
            .filter(|text| !text.is_empty())
        {
            events.push(StreamEvent::ReasoningDelta(reasoning.clone()));
        }
        if let Some(signature) = &self.reasoning_signature {
            events.push(StreamEvent::ReasoningSignature(signature.clone()));
        }
        if let Some(content) = self.content.as_ref().filter(|text| !text.is_empty()) {
            events.push(StreamEvent::TextDelta(content.clone()));
        }
        for (index, call) in self.tool_calls.iter().enumerate() {
            events.push(StreamEvent::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            events.push(StreamEvent::ToolCallArguments {
                index,
                delta: call.arguments.clone(),
            });
            events.push(StreamEvent::ToolCallEnd { index });
        }
        if let Some(usage) = self.usage {
            events.push(StreamEvent::Usage(usage));
        }
        events.push(StreamEvent::Finish(self.finish_reason.clone()));
        events
    }
}

/// Events that do not form an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectError {
    #[error("the stream has no finish reason")]
    NoFinish,
    #[error("tool call {index} started out of order (expected index {expected})")]
    OutOfOrder { index: usize, expected: usize },
    #[error("tool call {index} received {what} but was never started")]
    Unknown { index: usize, what: &'static str },
    #[error("tool call {index} received {what} after it ended")]
    AfterEnd { index: usize, what: &'static str },
    #[error("tool call {index} never ended")]
    Unended { index: usize },
}

#[derive(Debug)]
struct PartialCall {
    call: ToolCall,
    ended: bool,
}

/// Folds events into a [`ChatResponse`]. `push` never fails so that a caller can forward
/// each event as it collects; the first problem is reported by `finish`.
#[derive(Debug, Default)]
pub struct Collector {
    content: String,
    reasoning: String,
    signature: Option<String>,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    error: Option<CollectError>,
}

impl Collector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) {
        if self.error.is_some() {
            return;
        }
        if let Err(error) = self.apply(event) {
            self.error = Some(error);
        }
    }

    fn apply(&mut self, event: &StreamEvent) -> Result<(), CollectError> {
        match event {
            StreamEvent::TextDelta(text) => self.content.push_str(text),
            StreamEvent::ReasoningDelta(text) => self.reasoning.push_str(text),
            StreamEvent::ReasoningSignature(signature) => self.signature = Some(signature.clone()),
            StreamEvent::ToolCallStart { index, id, name } => {
                let expected = self.calls.len();
                if *index != expected {
                    return Err(CollectError::OutOfOrder {
                        index: *index,
                        expected,
                    });
                }
                let call = ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                };
                self.calls.push(PartialCall { call, ended: false });
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                self.open_call(*index, "arguments")?
                    .call
                    .arguments
                    .push_str(delta);
            }
            StreamEvent::ToolCallEnd { index } => self.open_call(*index, "its end")?.ended = true,
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Finish(reason) => self.finish = Some(reason.clone()),
        }
        Ok(())
    }

    fn open_call(
        &mut self,
        index: usize,
        what: &'static str,
    ) -> Result<&mut PartialCall, CollectError> {
        let call = self
            .calls
            .get_mut(index)
            .ok_or(CollectError::Unknown { index, what })?;
        if call.ended {
            return Err(CollectError::AfterEnd { index, what });
        }
        Ok(call)
    }

    /// The call at `index`, once its end has been pushed: a caller that runs each call as
    /// soon as it is complete takes it here rather than assembling fragments itself.
    pub fn ended_call(&self, index: usize) -> Option<&ToolCall> {
        self.calls
            .get(index)
            .filter(|partial| partial.ended)
            .map(|partial| &partial.call)
    }

    /// The call begun at `index`, as far as it has arrived.
    pub fn call(&self, index: usize) -> Option<&ToolCall> {
        self.calls.get(index).map(|partial| &partial.call)
    }

    /// The calls begun and not ended, in order.
    pub fn open_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.calls
            .iter()
            .filter(|partial| !partial.ended)
            .map(|partial| &partial.call)
    }

    pub fn finish(self) -> Result<ChatResponse, CollectError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let finish_reason = self.finish.ok_or(CollectError::NoFinish)?;
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, partial) in self.calls.into_iter().enumerate() {
            if !partial.ended {
                return Err(CollectError::Unended { index });
            }
            tool_calls.push(partial.call);
        }
        Ok(ChatResponse {
            content: (!self.content.is_empty()).then_some(self.content),
            reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
            reasoning_signature: self.signature,
            tool_calls,
            finish_reason,
            usage: self.usage,
        })
    }
}

/// Collects a finished list of events.
pub fn collect<'a>(
    events: impl IntoIterator<Item = &'a StreamEvent>,
) -> Result<ChatResponse, CollectError> {
    let mut collector = Collector::new();
    for event in events {
        collector.push(event);
    }
    collector.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChatResponse {
        ChatResponse {
            content: Some("Let me look.".into()),
            reasoning_content: Some("need weather".into()),
            reasoning_signature: Some("c2lnbmVk".into()),
            tool_calls: vec![
                ToolCall {
                    id: "a".into(),
                    name: "weather".into(),
                    arguments: "{\"city\":\"Paris\"}".into(),
                },
                ToolCall {
                    id: "b".into(),
                    name: "time".into(),
                    arguments: "{}".into(),
                },
            ],
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage::new(10, 5)),
        }
    }

    #[test]
    fn events_collect_back_to_the_response() {
        let response = sample();
        assert_eq!(collect(&response.events()).unwrap(), response);
    }

    #[test]
    fn broken_sequences_are_reported() {
        let start = |index| StreamEvent::ToolCallStart {
            index,
            id: "x".into(),
            name: "f".into(),
        };
        let finish = StreamEvent::Finish(FinishReason::Stop);
        assert_eq!(
            collect(&[start(1), finish.clone()]),
            Err(CollectError::OutOfOrder {
                index: 1,
                expected: 0
            })
        );
        assert_eq!(
            collect(&[start(0), finish.clone()]),
            Err(CollectError::Unended { index: 0 })
        );
        assert_eq!(
            collect(&[
                StreamEvent::ToolCallArguments {
                    index: 0,
                    delta: "{}".into()
                },
                finish.clone()
            ]),
            Err(CollectError::Unknown {
                index: 0,
                what: "arguments"
            })
        );
        assert_eq!(
            collect(&[
                start(0),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallEnd { index: 0 }
            ]),
            Err(CollectError::AfterEnd {
                index: 0,
                what: "its end"
            })
        );
        assert_eq!(
            collect(&[StreamEvent::TextDelta("hi".into())]),
            Err(CollectError::NoFinish)
        );
    }

    #[test]
    fn no_text_means_no_content() {
        let response = collect(&[StreamEvent::Finish(FinishReason::Stop)]).unwrap();
        assert_eq!(response.content, None);
        assert_eq!(response.message().role(), "assistant");
    }
}
