//! Our request model: what the runtime and gateway ask of any backend, in one shape that
//! each format's conversion translates to and from.

use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_tools::{Message, ToolDefinition};

/// A chat request, independent of the wire format it will travel in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// Shared: a request is copied for each backend attempt and kept while its answer
    /// streams, and a coding agent's tool list is the largest part of it.
    pub tools: Arc<[ToolDefinition]>,
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stop: Vec<String>,
    /// How hard a reasoning model thinks: OpenAI's `reasoning_effort` (`none`, `minimal`,
    /// `low`, `medium`, `high`, `xhigh`); each backend format maps it to its own control.
    pub reasoning_effort: Option<String>,
    /// OpenAI's `response_format` (`{"type": "json_object"}` or a `json_schema`), mapped to
    /// each backend's structured-output control.
    pub response_format: Option<Value>,
    pub seed: Option<i64>,
    /// Sampling from the k most likely tokens: native to Anthropic and Ollama, a vendor
    /// extension on OpenAI-compatible servers.
    pub top_k: Option<u32>,
    /// Whether the backend is asked to stream. Results are the same either way; streaming
    /// only changes when they arrive.
    pub stream: bool,
    /// Fields of an OpenAI request this model does not name (`logit_bias`, `user`, …).
    /// OpenAI-format backends receive them as they are; the other formats translate the
    /// OpenAI API's own fields where they have a counterpart and drop the rest.
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// A streaming request with no tools and default sampling.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            stream: true,
            ..Self::default()
        }
    }
}

/// OpenAI's `reasoning_effort` levels, least to most.
pub const REASONING_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// Notes a request field a backend format has no counterpart for. Dropping is the only
/// choice (the backend would refuse an unknown field), and an operator debugging an answer
/// can see it.
pub(crate) fn dropped(format: &str, field: &str, why: &str) {
    tracing::debug!(format, field, "request field not sent: {why}");
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    /// At least one call, any tool.
    Required,
    /// This tool, by name.
    Function(String),
}
