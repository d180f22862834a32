//! OpenAI's JSON shapes as our own serde types. Requests keep unknown fields aside so a
//! gateway passes them through; chunk types accept what real servers send (missing
//! `object`, `null` deltas and choices, arguments as an object) rather than what the
//! specification promises.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use switchboard_tools::{Message, ToolDefinition};

use crate::Usage;

/// `POST /chat/completions` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Arc<[ToolDefinition]>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<WireToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// OpenAI's newer name for `max_tokens`; preferred when both are present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Every field not named above, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `stop` is a string or a list of strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `"auto"`, `"none"`, `"required"`, or `{"type": "function", "function": {"name": …}}`.
/// Kept as sent; its meaning is checked when converting to [`crate::ToolChoice`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WireToolChoice {
    Mode(String),
    Named(NamedToolChoice),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedToolChoice {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: NamedFunction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedFunction {
    pub name: String,
}

/// A non-streaming `chat.completion` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    #[serde(default)]
    pub id: String,
    #[serde(default = "completion_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: u32,
    pub message: ResponseMessage,
    pub finish_reason: Option<String>,
    /// vLLM's extension: the stop string (or token id) that ended the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
}

/// The assistant message of a non-streaming answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseMessage {
    #[serde(default = "assistant_role")]
    pub role: String,
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// OpenRouter's and newer vLLM's name for `reasoning_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

/// A tool call in a response, or a fragment of one in a stream's delta: in a stream only
/// the first fragment carries `id`, `type` and `name`, later ones only `arguments`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub function: WireFunctionCall,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFunctionCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// JSON text. Some servers send an object instead; it is taken as its JSON text.
    #[serde(
        default,
        deserialize_with = "arguments_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub arguments: Option<String>,
}

/// Token counts as OpenAI reports them; fields servers omit count as zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    /// Where the completion's tokens went; only the reasoning count is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// `usage.completion_tokens_details`: OpenAI's reasoning models, and the servers that
/// copy them, count the tokens spent reasoning here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionTokensDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// The counts in the event model.
    pub fn usage(&self) -> Usage {
        let reasoning = self
            .completion_tokens_details
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or(0);
        Usage::new(self.prompt_tokens, self.completion_tokens).with_reasoning(reasoning)
    }
}

impl From<&Usage> for WireUsage {
    /// The reasoning count is written only where there is one, as OpenAI writes it.
    fn from(usage: &Usage) -> Self {
        Self {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            completion_tokens_details: (usage.reasoning_tokens > 0).then_some(
                CompletionTokensDetails {
                    reasoning_tokens: Some(usage.reasoning_tokens),
                },
            ),
        }
    }
}

/// One `chat.completion.chunk` of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    #[serde(default)]
    pub id: String,
    #[serde(default = "chunk_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    /// Empty on usage-only chunks (and on OpenRouter's keep-alive chunks).
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// An error some servers send in place of a chunk mid-stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

fn chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    /// llama.cpp sends `null` on its final chunk.
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// vLLM's extension: the stop string (or token id) that ended the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn arguments_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => Some(other.to_string()),
    })
}

/// The human-readable message of an OpenAI-style error value (`{"message": …}` or a string).
pub(crate) fn error_message(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_round_trips_with_unknown_fields() {
        let body = json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "parallel_tool_calls": false,
            "stop": "END",
            "stream": true,
            "stream_options": {"include_usage": true},
            "seed": 7,
            "response_format": {"type": "json_object"},
            "logit_bias": {"50256": -100}
        });
        let request: ChatCompletionRequest = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(request.seed, Some(7));
        assert_eq!(
            request.extra.get("logit_bias"),
            Some(&json!({"50256": -100}))
        );
        assert_eq!(serde_json::to_value(&request).unwrap(), body);
    }

    #[test]
    fn chunks_accept_what_servers_send() {
        let chunk: ChatCompletionChunk = serde_json::from_str(
            r#"{"choices":[{"index":0,"delta":null,"finish_reason":"stop"},{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}],"usage":null}"#,
        )
        .unwrap();
        assert_eq!(chunk.object, "chat.completion.chunk");
        assert_eq!(chunk.choices[0].delta, None);
        let calls = chunk.choices[1]
            .delta
            .as_ref()
            .unwrap()
            .tool_calls
            .as_ref()
            .unwrap();
        assert_eq!(calls[0].function.arguments.as_deref(), Some(r#"{"a":1}"#));
        let empty: ChatCompletionChunk = serde_json::from_str(r#"{"choices":null}"#).unwrap();
        assert!(empty.choices.is_empty());
    }

    #[test]
    fn usage_carries_the_reasoning_count_both_ways() {
        let wire: WireUsage = serde_json::from_value(json!({"prompt_tokens": 2,
            "completion_tokens": 9, "total_tokens": 11,
            "completion_tokens_details": {"reasoning_tokens": 5, "accepted_prediction_tokens": 0}}))
        .unwrap();
        let usage = wire.usage();
        assert_eq!((usage.completion_tokens, usage.reasoning_tokens), (9, 5));
        assert_eq!(WireUsage::from(&usage), wire);
        let plain = Usage::new(2, 9);
        assert_eq!(
            serde_json::to_value(WireUsage::from(&plain)).unwrap(),
            json!({"prompt_tokens": 2, "completion_tokens": 9, "total_tokens": 11})
        );
        for details in [json!(null), json!({}), json!({"reasoning_tokens": null})] {
            let wire: WireUsage = serde_json::from_value(json!({"prompt_tokens": 2,
                "completion_tokens": 9, "completion_tokens_details": details}))
            .unwrap();
            assert_eq!(wire.usage(), plain);
        }
    }
}
