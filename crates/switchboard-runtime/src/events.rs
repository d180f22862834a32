//! What a turn reports while it runs, in the order it happens.

use std::time::Duration;

/// One thing that happened during a turn; the caller shows it as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// Words of the reply.
    Text(String),
    /// Reasoning the model showed beside its reply.
    Reasoning(String),
    /// A complete tool call is about to run.
    ToolStarted {
        id: String,
        name: String,
        arguments: String,
    },
    /// A tool call finished; `content` is what the model will read.
    ToolFinished {
        id: String,
        name: String,
        content: String,
        is_error: bool,
        latency: Duration,
    },
    /// A new request to the model begins (after tool results, or without tools at the bound).
    Round { number: usize, with_tools: bool },
}
