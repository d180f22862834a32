//! `POST /v1/responses` request body. Input items and tools stay JSON values here: the
//! conversion parses each with its own path (`input[4].call_id`), so that an error names
//! exactly what was wrong.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponsesRequest {
    pub model: String,
    pub input: Input,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig>,
    /// Absent means `true`, as on OpenAI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other field (`include`, `prompt_cache_key`, `client_metadata`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponsesRequest {
    /// The request from its JSON object, each known field taken out and the rest kept as
    /// `extra`. Not through serde's `flatten`, which would copy every value (the tools and
    /// the whole input among them) into a buffer and out again.
    pub fn from_object(mut object: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let model = take(&mut object, "model")?;
        let input = take(&mut object, "input")?;
        Ok(Self {
            model: model.ok_or_else(|| serde_json::Error::missing_field("model"))?,
            input: input.ok_or_else(|| serde_json::Error::missing_field("input"))?,
            instructions: take(&mut object, "instructions")?,
            tools: take(&mut object, "tools")?,
            tool_choice: take(&mut object, "tool_choice")?,
            parallel_tool_calls: take(&mut object, "parallel_tool_calls")?,
            max_output_tokens: take(&mut object, "max_output_tokens")?,
            temperature: take(&mut object, "temperature")?,
            top_p: take(&mut object, "top_p")?,
            reasoning: take(&mut object, "reasoning")?,
            text: take(&mut object, "text")?,
            store: take(&mut object, "store")?,
            stream: take(&mut object, "stream")?,
            previous_response_id: take(&mut object, "previous_response_id")?,
            metadata: take(&mut object, "metadata")?,
            user: take(&mut object, "user")?,
            extra: object,
        })
    }
}

impl<'de> Deserialize<'de> for ResponsesRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Map::deserialize(deserializer)?;
        Self::from_object(object).map_err(D::Error::custom)
    }
}

/// A field taken out of the object; absent and `null` are both `None`. An error names the
/// field.
fn take<T: DeserializeOwned>(
    object: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<T>, serde_json::Error> {
    match object.shift_remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value)
            .map(Some)
            .map_err(|error| serde_json::Error::custom(format!("{field}: {error}"))),
    }
}

/// `input`: a string (one user message) or a list of items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Items(Vec<Value>),
}

impl<'de> Deserialize<'de> for Input {
    /// By the value's own type: an untagged enum would copy the whole input into a buffer
    /// to try each variant.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Input::Text(text)),
            Value::Array(items) => Ok(Input::Items(items)),
            _ => Err(D::Error::custom("expected a string or a list of items")),
        }
    }
}

/// `reasoning`: how hard to think, and whether to summarise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `text`: the answer's format and verbosity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
