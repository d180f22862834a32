//! The one event model every backend stream is decoded into and every served stream is
//! encoded from: what the runtime and gateway see, whatever format is on the wire.

use serde::{Deserialize, Serialize};

/// One step of a model's answer as it streams.
///
/// Tool call indices are dense and in order of appearance (0, 1, 2, …) whatever the backend
/// sent; a call's arguments are the concatenation of its `ToolCallArguments` deltas, and a
/// call without arguments gets `{}` before its `ToolCallEnd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The signature of the reasoning streamed so far (Anthropic's `signature_delta`): it
    /// must travel back with exactly that reasoning for Anthropic to accept a later turn.
    ReasoningSignature(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        delta: String,
    },
    ToolCallEnd {
        index: usize,
    },
    Usage(Usage),
    Finish(FinishReason),
}

impl StreamEvent {
    /// Bytes of text the event carries (words, reasoning, a call's name or arguments): what
    /// an answer that is kept whole accumulates, and what its bounds count.
    pub fn text_len(&self) -> usize {
        match self {
            StreamEvent::TextDelta(text)
            | StreamEvent::ReasoningDelta(text)
            | StreamEvent::ReasoningSignature(text) => text.len(),
            StreamEvent::ToolCallStart { id, name, .. } => id.len() + name.len(),
            StreamEvent::ToolCallArguments { delta, .. } => delta.len(),
            StreamEvent::ToolCallEnd { .. } | StreamEvent::Usage(_) | StreamEvent::Finish(_) => 0,
        }
    }
}

/// Token counts; `total_tokens` is always the sum of the prompt's and the completion's.
/// Counts come from backends, so sums saturate at `u64::MAX` rather than overflow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Of `completion_tokens`, those the model spent reasoning, where the backend says
    /// (OpenAI's `completion_tokens_details.reasoning_tokens`); 0 when it does not.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens.saturating_add(completion_tokens),
            reasoning_tokens: 0,
        }
    }

    /// With `reasoning_tokens` of the completion spent reasoning (at most all of it).
    pub fn with_reasoning(self, reasoning_tokens: u64) -> Self {
        Self {
            reasoning_tokens: reasoning_tokens.min(self.completion_tokens),
            ..self
        }
    }

    /// The usage of two requests together.
    pub fn plus(self, other: Usage) -> Self {
        Self::new(
            self.prompt_tokens.saturating_add(other.prompt_tokens),
            self.completion_tokens
                .saturating_add(other.completion_tokens),
        )
        .with_reasoning(self.reasoning_tokens.saturating_add(other.reasoning_tokens))
    }
}

/// Why the model stopped, in OpenAI's vocabulary; each format maps to and from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// The gateway ran tools for the model as many rounds (or calls) as the request allows
    /// and stopped with the model's turn unfinished: Chat's `length`, Messages'
    /// `pause_turn`, Responses' `incomplete` for `max_tool_calls`.
    ToolLimit,
    /// One of the request's stop sequences ended the answer, this one (Anthropic and vLLM
    /// say which; OpenAI's own name for it is plain `stop`).
    StopSequence(String),
    /// A reason none of the above covers, kept verbatim.
    Other(String),
}

impl FinishReason {
    /// Makes the reason agree with what was actually produced: servers send `stop` after
    /// tool calls (Ollama always, vLLM with named tool choice) and `tool_calls` with none,
    /// and clients loop or drop calls on either.
    pub fn reconcile(self, had_tool_calls: bool) -> Self {
        match (self, had_tool_calls) {
            (FinishReason::Stop | FinishReason::StopSequence(_), true) => FinishReason::ToolCalls,
            (FinishReason::ToolCalls, false) => FinishReason::Stop,
            (reason, _) => reason,
        }
    }

    /// OpenAI's name for the reason.
    pub fn as_openai(&self) -> &str {
        match self {
            FinishReason::Stop | FinishReason::StopSequence(_) => "stop",
            FinishReason::Length | FinishReason::ToolLimit => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other,
        }
    }

    pub fn from_openai(name: &str) -> Self {
        match name {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            // `function_call` is the legacy name of the same thing.
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_follows_the_calls() {
        assert_eq!(FinishReason::Stop.reconcile(true), FinishReason::ToolCalls);
        assert_eq!(FinishReason::ToolCalls.reconcile(false), FinishReason::Stop);
        assert_eq!(FinishReason::Length.reconcile(true), FinishReason::Length);
        assert_eq!(FinishReason::Stop.reconcile(false), FinishReason::Stop);
    }

    #[test]
    fn openai_names_round_trip() {
        for name in ["stop", "length", "tool_calls", "content_filter", "weird"] {
            assert_eq!(FinishReason::from_openai(name).as_openai(), name);
        }
        assert_eq!(
            FinishReason::from_openai("function_call"),
            FinishReason::ToolCalls
        );
    }

    #[test]
    fn usage_total_is_the_sum() {
        assert_eq!(Usage::new(3, 4).total_tokens, 7);
        assert_eq!(Usage::new(u64::MAX, 1).total_tokens, u64::MAX);
        assert_eq!(Usage::new(1, 2).plus(Usage::new(3, 4)), Usage::new(4, 6));
        assert_eq!(
            Usage::new(u64::MAX, 0).plus(Usage::new(1, 1)),
            Usage::new(u64::MAX, 1)
        );
        assert_eq!(
            Usage::new(1, 5)
                .with_reasoning(3)
                .plus(Usage::new(1, 5).with_reasoning(2))
                .reasoning_tokens,
            5
        );
        assert_eq!(Usage::new(1, 2).with_reasoning(9).reasoning_tokens, 2);
    }
}
