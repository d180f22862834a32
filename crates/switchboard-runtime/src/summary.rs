//! What one turn of a conversation did: its reply, its tool rounds and calls, its usage,
//! how soon its first token came and why it ended.

use std::time::Duration;

use switchboard_wire::{FinishReason, Usage};

/// What one turn did, for logs and metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    pub reply: String,
    pub tool_rounds: usize,
    pub tool_calls: usize,
    pub usage: Usage,
    pub time_to_first_token: Option<Duration>,
    /// Why the turn ended: the last answer's reason, or `Length` when a length limit (the
    /// backend's or the turn's `max_tokens`) cut it.
    pub finish_reason: FinishReason,
}

impl Default for TurnSummary {
    fn default() -> Self {
        Self {
            reply: String::new(),
            tool_rounds: 0,
            tool_calls: 0,
            usage: Usage::default(),
            time_to_first_token: None,
            finish_reason: FinishReason::Stop,
        }
    }
}
