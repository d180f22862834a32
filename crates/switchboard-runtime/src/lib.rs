//! Conversations between a user, a backend and a set of tools: the reply streams as it
//! arrives, each tool call runs as soon as it is complete, results go back to the model,
//! and history keeps every call and result.
//!
//! It must not know HTTP front-ends or the gateway's configuration: a conversation takes a
//! backend and one tool source.

mod conversation;
mod events;
mod executor;
mod history;
mod metrics;
mod summary;

pub use conversation::{Conversation, ConversationOptions, TurnError};
pub use events::{ToolEvent, TurnEvent};
pub use executor::ToolExecutor;
pub use history::History;
pub use summary::TurnSummary;
