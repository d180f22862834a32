//! Rust functions as tools: the `Tool` trait that `#[tool]` implements, and the `Toolbox`
//! that validates each call, runs the function and checks its result.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::problem::Problems;
use crate::problem::truncate_message;
use crate::toolset::{CallError, MAX_MESSAGE_CHARS};
use crate::{Profile, ToolCall, ToolDefinition, ToolResult, Toolset};

/// A failure inside a tool, shown to the model as `Error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl fmt::Display) -> Self {
        Self(message.to_string())
    }
}

/// Something the model can call.
pub trait Tool: Send + Sync {
    fn definition(&self) -> ToolDefinition;

    /// Runs the tool on arguments already validated against its parameters schema.
    fn call(&self, arguments: Map<String, Value>) -> BoxFuture<'_, Result<Value, ToolError>>;
}

type Handler =
    dyn Fn(Map<String, Value>) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A tool made of a definition and a closure; what `#[tool]` generates.
pub struct FnTool {
    definition: ToolDefinition,
    handler: Box<Handler>,
}

impl FnTool {
    pub fn new(
        definition: ToolDefinition,
        handler: impl Fn(Map<String, Value>) -> BoxFuture<'static, Result<Value, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            definition,
            handler: Box::new(handler),
        }
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

impl Tool for FnTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call(&self, arguments: Map<String, Value>) -> BoxFuture<'_, Result<Value, ToolError>> {
        (self.handler)(arguments)
    }
}

/// Tools with their compiled validators: the one path every call of a Rust tool takes.
pub struct Toolbox {
    toolset: Toolset,
    tools: HashMap<String, Arc<dyn Tool>>,
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolbox")
            .field("toolset", &self.toolset)
            .finish_non_exhaustive()
    }
}

impl Toolbox {
    /// Validates every tool's definition under `profile`; all problems are reported at once.
    pub fn new(tools: Vec<Arc<dyn Tool>>, profile: &Profile) -> Result<Self, Problems> {
        let definitions: Vec<ToolDefinition> = tools.iter().map(|tool| tool.definition()).collect();
        let toolset = Toolset::from_definitions(&definitions, profile)?;
        let tools = definitions
            .into_iter()
            .zip(tools)
            .map(|(definition, tool)| (definition.function.name, tool))
            .collect();
        Ok(Self { toolset, tools })
    }

    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// Validates, runs and checks one call. Every failure becomes an `Error: …` result.
    pub async fn call(&self, call: &ToolCall) -> ToolResult {
        let outcome = self.run(call).await;
        let (content, is_error) = match outcome {
            Ok(content) => (content, false),
            Err(message) => (truncate_message(message, MAX_MESSAGE_CHARS), true),
        };
        ToolResult {
            call_id: call.id.clone(),
            content,
            is_error,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<String, String> {
        let arguments = self
            .toolset
            .check_call(&call.name, &call.arguments)
            .map_err(|error| error.to_string())?;
        let tool = self
            .tools
            .get(&call.name)
            .ok_or_else(|| CallError::UnknownTool(call.name.clone()).to_string())?;
        let result = tool
            .call(arguments)
            .await
            .map_err(|error| format!("Error: {error}"))?;
        if let Some(compiled) = self.toolset.get(&call.name) {
            compiled
                .check_result(&result)
                .map_err(|error| error.to_string())?;
        }
        Ok(match result {
            Value::String(text) => text,
            Value::Null => String::new(),
            other => other.to_string(),
        })
    }
}
