//! Ollama `/api/chat`: NDJSON streaming, whole tool calls with object arguments, no ids,
//! no `tool_choice`.

mod decode;
mod encode;
mod from_client;
mod to_backend;
mod types;

pub use decode::{Decoder, body_events};
pub use encode::{NdjsonEncoder, response};
pub use from_client::parse_request;
pub use to_backend::build_request;
pub use types::*;

use crate::FinishReason;

/// Ollama's `done_reason` for a finish reason. Ollama says `stop` after tool calls too.
pub fn done_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop
        | FinishReason::StopSequence(_)
        | FinishReason::ToolCalls
        | FinishReason::ContentFilter => "stop",
        FinishReason::Length | FinishReason::ToolLimit => "length",
        FinishReason::Other(other) => other,
    }
}

/// The finish reason of an Ollama `done_reason` (before reconciling with the calls made).
pub fn finish_reason(done_reason: &str) -> FinishReason {
    match done_reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}
