//! What the loop needs from a set of tools: their definitions and one way to run a call.
//! Characters and `#[tool]` Rust tools both provide it.

use futures::future::BoxFuture;
use switchboard_characters::CharacterSession;
use switchboard_tools::{ToolCall, ToolDefinition, ToolResult, Toolbox};

/// Tools a conversation can call. `call` never fails: every problem is an `Error: …`
/// result for the model to read.
pub trait ToolExecutor: Send + Sync {
    fn definitions(&self) -> Vec<ToolDefinition>;

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult>;
}

impl ToolExecutor for Toolbox {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.toolset().definitions().cloned().collect()
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult> {
        Box::pin(Toolbox::call(self, call))
    }
}

impl ToolExecutor for CharacterSession {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.character().tools().definitions().cloned().collect()
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.call_tool(call))
    }
}
