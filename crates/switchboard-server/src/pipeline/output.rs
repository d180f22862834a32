//! The pipeline's output vocabulary, shared by its stages and read by every front-end: what
//! an answer is made of ([`Output`]), the channel it travels in, what a character did
//! besides speaking.

use serde::Serialize;
use switchboard_wire::StreamEvent;
use tokio::sync::mpsc;

use super::tool_checks::ToolCallProblem;
use crate::error::ApiError;

/// What the pipeline hands the responder.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Event(StreamEvent),
    /// Problems with the model's calls; sent just before the finish.
    Problems(Vec<ToolCallProblem>),
    /// What a character did besides speaking (its prompt, its own tool calls); front-ends
    /// show it only to clients that ask.
    Character(CharacterEvent),
}

/// The outputs of one answer, in order, ending with an error where it failed.
pub type Outputs = mpsc::UnboundedReceiver<Result<Output, ApiError>>;
/// The stages' end of [`Outputs`].
pub type Sender = mpsc::UnboundedSender<Result<Output, ApiError>>;

/// Sends outputs in order; an error once the receiver (the client) is gone.
pub async fn send(sender: &Sender, outputs: Vec<Output>) -> Result<(), ApiError> {
    for output in outputs {
        if sender.send(Ok(output)).is_err() {
            return Err(ApiError::invalid_request("the client went away", None));
        }
    }
    Ok(())
}

/// Something a character did during a turn besides speaking, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CharacterEvent {
    /// The system prompt the character built for this turn's conversation.
    SystemPrompt { content: String },
    /// A complete tool call the model made, about to run.
    ToolStarted {
        id: String,
        name: String,
        arguments: String,
    },
    /// The call's result as the model reads it (an `Error: …` string when it failed).
    ToolFinished {
        id: String,
        name: String,
        content: String,
        is_error: bool,
        duration_ms: f64,
    },
}
