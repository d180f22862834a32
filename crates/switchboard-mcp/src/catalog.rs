//! What a source of tools offers to MCP: the tools a request may see, a call under the
//! tool's deadline, and a signal when the list changes.

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::watch;

/// A catalog of tools served over MCP. `request` carries the HTTP request's extensions
/// (what the layers in front of the MCP endpoint put there: who is calling, which part of
/// the catalog the URL names); over stdio it is empty.
pub trait ToolCatalog: Send + Sync + 'static {
    /// The tools this request may see, in the same order every time (clients' prompt
    /// caches depend on it). Names as the catalog knows them; [`switchboard_tools::names`] makes them
    /// fit clients.
    fn tools(&self, request: &http::Extensions) -> Vec<CatalogTool>;

    /// Runs one call with the arguments the client sent (not yet validated), under the
    /// tool's deadline. A tool the request may not see is [`CallError::UnknownTool`], and
    /// never runs.
    fn call(
        &self,
        request: &http::Extensions,
        name: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, Result<ToolOutput, CallError>>;

    /// Changes whenever the tool list may have changed; clients that listen are told.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// One tool as a catalog describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogTool {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the arguments object as declared; an empty object schema stands
    /// in when there is none.
    pub input_schema: Option<Value>,
    /// The JSON Schema (of an object) its `structuredContent` conforms to, when it
    /// declares one.
    pub output_schema: Option<Value>,
}

/// A call's result: the text a model reads. Failures of the tool itself (bad arguments,
/// a throw, a timeout) are results with `is_error`, so that a model can correct itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// `structuredContent` (an object), checked against the tool's output schema.
    pub structured: Option<Value>,
}

/// Why a call produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No tool of that name, or one the request may not see.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// The tool exists but could not be run at all.
    #[error("{0}")]
    Unavailable(String),
}
