//! The response object: what `POST /v1/responses` answers whole, what `response.completed`
//! carries when streamed, and what `GET /v1/responses/{id}` returns.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::items::Item;
use crate::Usage;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    pub object: String,
    pub created_at: u64,
    pub status: Status,
    pub error: Option<ResponseError>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub instructions: Option<Value>,
    pub max_output_tokens: Option<u32>,
    pub model: String,
    pub output: Vec<Item>,
    pub parallel_tool_calls: bool,
    pub previous_response_id: Option<String>,
    pub reasoning: Value,
    pub store: bool,
    pub temperature: Option<f64>,
    pub text: Value,
    pub tool_choice: Value,
    pub tools: EchoedTools,
    pub top_p: Option<f64>,
    pub truncation: String,
    pub usage: Option<ResponseUsage>,
    pub user: Option<String>,
    pub metadata: Map<String, Value>,
    /// Problems with the model's calls (ours, not OpenAI's), when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_errors: Option<Value>,
}

/// The request's tools as the response echoes them. A streamed response carries them in
/// `response.created`, `.in_progress` and `.completed`, and a stored one is copied: their
/// JSON is written once, when the response is made, and shared from then on.
#[derive(Debug, Clone)]
pub struct EchoedTools(Arc<RawValue>);

impl EchoedTools {
    pub fn new(tools: &[Value]) -> Self {
        // A list of JSON values always serialises; the empty list stands in all the same.
        match serde_json::value::to_raw_value(tools) {
            Ok(raw) => Self(Arc::from(raw)),
            Err(_) => Self::default(),
        }
    }

    /// The tools as JSON text.
    pub fn json(&self) -> &str {
        self.0.get()
    }
}

impl Default for EchoedTools {
    fn default() -> Self {
        Self::new(&[])
    }
}

impl PartialEq for EchoedTools {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

impl Serialize for EchoedTools {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EchoedTools {
    /// Through a list of values, so that any deserialiser (not only one reading JSON text)
    /// can make one.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Value>::deserialize(deserializer).map(|tools| Self::new(&tools))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseError {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncompleteDetails {
    pub reason: String,
}

/// Token counts in the Responses vocabulary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseUsage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

impl From<Usage> for ResponseUsage {
    /// Backends report no cached token counts through our model: that is 0.
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
            total_tokens: usage.total_tokens,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn echoed_tools_are_written_as_given_and_read_back_from_text_or_values() {
        let list = vec![
            json!({"type": "function", "name": "get_weather", "parameters": {"type": "object"}}),
        ];
        let tools = EchoedTools::new(&list);
        assert_eq!(
            tools.json(),
            r#"[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]"#
        );
        let wrapped = json!({"tools": tools});
        assert_eq!(wrapped["tools"], Value::from(list.clone()));
        let from_value: EchoedTools = serde_json::from_value(Value::from(list)).unwrap();
        let from_text: EchoedTools = serde_json::from_str(tools.json()).unwrap();
        assert_eq!(from_value, tools);
        assert_eq!(from_text, tools);
        assert_eq!(EchoedTools::default().json(), "[]");
    }
}
