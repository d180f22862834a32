//! What a tool call reports while it runs, in the order it happens.

use serde::Serialize;

/// A tool call's progress, as a tool loop reports it and clients are shown it (the
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
