//! The pipeline's output vocabulary, shared by its stages and read by every front-end: what
//! an answer is made of ([`Output`]), the channel it travels in, what a character did
//! besides speaking.

use serde::Serialize;
use serde::ser::SerializeStruct;
use switchboard_runtime::ToolEvent;
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

/// Something a character did during a turn besides speaking, in the order it happened:
/// the system prompt it built, and its tool calls as the tool loop reports them.
#[derive(Debug, Clone, PartialEq)]
pub enum CharacterEvent {
    /// The system prompt the character built for this turn's conversation.
    SystemPrompt {
        content: String,
    },
    Tool(ToolEvent),
}

/// Each event as one object with its `type` (`system_prompt`, `tool_started`,
/// `tool_finished`).
impl Serialize for CharacterEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::SystemPrompt { content } => {
                let mut event = serializer.serialize_struct("CharacterEvent", 2)?;
                event.serialize_field("type", "system_prompt")?;
                event.serialize_field("content", content)?;
                event.end()
            }
            Self::Tool(event) => event.serialize(serializer),
        }
    }
}
