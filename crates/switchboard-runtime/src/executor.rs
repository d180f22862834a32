//! What a tool loop needs from a set of tools: their definitions and one way to run a call.

use futures::future::BoxFuture;
use switchboard_tools::{ToolCall, ToolDefinition, ToolResult};

/// Tools a tool loop can call. `call` never fails: every problem is an `Error: …` result
/// for the model to read.
pub trait ToolExecutor: Send + Sync {
    fn definitions(&self) -> Vec<ToolDefinition>;

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult>;
}
