//! What every tool source and tool loop shares: the [`ToolExecutor`] a tool source
//! implements, the [`ToolEvent`]s a call reports as it runs, and a conversation's
//! [`History`], bounded by whole turns. The one tool loop is `switchboard-pipeline`'s
//! (the gateway's and `switchboard chat`'s alike).
//!
//! It must not know HTTP front-ends, backends or the gateway's configuration.

mod events;
mod executor;
mod history;

pub use events::ToolEvent;
pub use executor::ToolExecutor;
pub use history::History;
