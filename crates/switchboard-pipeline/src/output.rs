//! The pipeline's output vocabulary, shared by its stages and read by every front-end: what
//! an answer is made of ([`Output`]), the channel it travels in, what a character did
//! besides speaking, and where the tools it ran live.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_runtime::ToolEvent;
use switchboard_wire::StreamEvent;
use tokio::sync::mpsc;

use crate::error::PipelineError;
use crate::tool_checks::ToolCallProblem;

/// What the pipeline hands the responder.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Event(StreamEvent),
    /// Problems with the model's calls; sent just before the finish.
    CallProblems(Vec<ToolCallProblem>),
    /// What the gateway did besides passing the model's words on (a character's prompt,
    /// tools it ran); each front-end shows it in its API's terms, or only to clients that
    /// ask.
    Gateway(GatewayEvent),
}

/// One item of [`Outputs`].
type Item = Result<Output, PipelineError>;

/// The outputs of one answer, in order, ending with an error where it failed.
///
/// Each is boxed in the channel: an unbounded channel holds its messages in blocks of 32,
/// the first allocated with the channel and held for as long as the answer streams, and an
/// output is over a hundred bytes (a block of 4 KiB for every open stream) where a box is
/// eight.
#[derive(Debug)]
pub struct Outputs(mpsc::UnboundedReceiver<Box<Item>>);

/// The stages' end of [`Outputs`].
#[derive(Debug, Clone)]
pub struct Sender(mpsc::UnboundedSender<Box<Item>>);

/// The receiver is gone: the client went away.
#[derive(Debug)]
pub struct Closed;

/// A new answer's channel.
pub fn channel() -> (Sender, Outputs) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (Sender(sender), Outputs(receiver))
}

impl Sender {
    pub fn send(&self, item: Item) -> Result<(), Closed> {
        self.0.send(Box::new(item)).map_err(|_| Closed)
    }

    /// Resolves once the receiver is gone.
    pub async fn closed(&self) {
        self.0.closed().await;
    }
}

impl Outputs {
    pub async fn recv(&mut self) -> Option<Item> {
        self.0.recv().await.map(|item| *item)
    }

    pub fn try_recv(&mut self) -> Result<Item, mpsc::error::TryRecvError> {
        self.0.try_recv().map(|item| *item)
    }
}

/// Sends outputs in order; an error once the receiver (the client) is gone.
pub async fn send(sender: &Sender, outputs: Vec<Output>) -> Result<(), PipelineError> {
    for output in outputs {
        if sender.send(Ok(output)).is_err() {
            return Err(PipelineError::ClientGone);
        }
    }
    Ok(())
}

/// What the gateway did for the model besides passing its words on, in the order it
/// happened: a character's system prompt, the tools it listed and ran, and calls it holds
/// for the client's approval.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayEvent {
    /// The system prompt the character built for this turn's conversation.
    SystemPrompt { content: String },
    /// A tool call the gateway is running or ran; `source` names the MCP server a server's
    /// tool came from (none for a character's own tools).
    Tool {
        event: ToolEvent,
        source: Option<ToolSource>,
    },
    /// The tools of one MCP server the request named, as offered to the model, before its
    /// first answer (or why they could not be listed).
    ToolList(Arc<Listing>),
    /// A call held for the client's approval: the answer ends with it.
    ApprovalRequest {
        id: String,
        source: ToolSource,
        arguments: String,
    },
    /// A tool search the gateway ran (`tool_search.rs`): the model's call (by the search
    /// tool's name) and the names of the tools found, best first, or why it did not run.
    ToolSearch {
        id: String,
        name: String,
        arguments: String,
        found: Result<Vec<String>, String>,
    },
}

/// Each event as one object with its `type` (`system_prompt`, `tool_started`,
/// `tool_finished`, `tool_list`, `approval_request`, `tool_search`); a server's tool names its `server`
/// and `tool` beside the name the model called.
impl Serialize for GatewayEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            Self::SystemPrompt { content } => json!({"type": "system_prompt", "content": content}),
            Self::Tool { event, source } => {
                let mut value = serde_json::to_value(event).map_err(serde::ser::Error::custom)?;
                if let (Some(source), Some(object)) = (source, value.as_object_mut()) {
                    object.insert("server".into(), json!(source.server));
                    object.insert("tool".into(), json!(source.tool));
                }
                value
            }
            Self::ToolList(listing) => json!({"type": "tool_list", "server": listing.label,
                "tools": listing.tools.iter().map(|tool| &tool.name).collect::<Vec<_>>(),
                "error": listing.error}),
            Self::ApprovalRequest {
                id,
                source,
                arguments,
            } => json!({"type": "approval_request", "id": id, "server": source.server,
                "tool": source.tool, "arguments": arguments}),
            Self::ToolSearch {
                id,
                name,
                arguments,
                found,
            } => match found {
                Ok(found) => json!({"type": "tool_search", "id": id, "name": name,
                    "arguments": arguments, "found": found}),
                Err(error) => json!({"type": "tool_search", "id": id, "name": name,
                    "arguments": arguments, "error": error}),
            },
        };
        value.serialize(serializer)
    }
}

/// Where a gateway-run tool lives: the server as the request named it, and the server's
/// own name for the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSource {
    pub server: String,
    pub tool: String,
}

/// One named server's tools as offered, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub label: String,
    pub tools: Vec<ListedTool>,
    pub error: Option<String>,
}

/// A tool as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    pub annotations: Option<Value>,
}
