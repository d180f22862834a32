//! What a turn reports while it runs, in the order it happens.

use serde::Serialize;

/// One thing that happened during a turn; the caller shows it as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// Words of the reply.
    Text(String),
    /// Reasoning the model showed beside its reply.
    Reasoning(String),
    /// A tool call about to run, or run.
    Tool(ToolEvent),
    /// A new request to the model begins (after tool results, or without tools at the bound).
    Round { number: usize, with_tools: bool },
}

/// A tool call's progress, as a conversation reports it and clients are shown it (the
/// gateway's character events, the playground's tool cards): serialized with its `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolEvent {
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
        duration_ms: f64,
    },
}
