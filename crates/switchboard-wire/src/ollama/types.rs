//! Ollama's JSON shapes as our own serde types. Tools use OpenAI's definition shape; a
//! call's `arguments` is a JSON object, not text.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_tools::ToolDefinition;

/// `POST /api/chat` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OllamaChatRequest {
    pub model: String,
    pub messages: Vec<OllamaMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Arc<[ToolDefinition]>>,
    /// Ollama streams unless told otherwise, so this is always sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Sampling settings: `temperature`, `top_p`, `num_predict`, `stop`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
    /// Every field not named above (`format`, `think`, `keep_alive`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OllamaMessage {
    pub role: String,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Base64 images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<OllamaToolCall>>,
    /// On `tool` messages: which function produced the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Not read by Ollama (it ignores unknown fields); sent so ids survive a round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OllamaToolCall {
    /// Ollama sends none; kept when present (history we sent, newer servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub function: OllamaFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OllamaFunction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    pub name: String,
    /// A JSON object (some models' output arrives as a string of JSON; it is accepted).
    #[serde(default)]
    pub arguments: Value,
}

/// One NDJSON line of a stream, or a whole non-streaming answer (the same shape with
/// `done: true`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OllamaChunk {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<OllamaMessage>,
    #[serde(default)]
    pub done: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_duration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_duration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_eval_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_eval_duration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_duration: Option<u64>,
    /// Ollama's way of reporting a failure, in a body or mid-stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
