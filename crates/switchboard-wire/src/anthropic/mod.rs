//! Anthropic Messages: a backend format, and one the gateway serves to Anthropic clients.

mod decode;
mod encode;
mod fold;
pub mod from_client;
mod to_backend;
pub mod tool_search;
mod types;

pub use decode::{Decoder, body_events};
pub use encode::{SseEncoder, message, push_sse_event};
pub use fold::MessageBuilder;
pub use to_backend::build_request;
pub use types::*;

use crate::FinishReason;

/// Anthropic's `stop_reason` for a finish reason.
pub fn stop_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "end_turn",
        FinishReason::StopSequence(_) => "stop_sequence",
        FinishReason::Length => "max_tokens",
        FinishReason::ToolLimit => "pause_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
        FinishReason::Other(other) => other,
    }
}

/// The finish reason of an Anthropic `stop_reason` and `stop_sequence`.
pub fn finish_reason_with(stop_reason: &str, stop_sequence: Option<String>) -> FinishReason {
    match (stop_reason, stop_sequence) {
        ("stop_sequence", Some(sequence)) => FinishReason::StopSequence(sequence),
        (other, _) => finish_reason(other),
    }
}

/// The finish reason of an Anthropic `stop_reason`.
pub fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}
