//! `POST /v1/responses` request body. Input items are read into their types where they
//! stand, each keeping its problem for the conversion to name by its path
//! (`input[4].call_id`); tools stay JSON values here, because the response echoes them as
//! sent, and the conversion moves each into its kind's type with its path.

use std::fmt;

use serde::de::{DeserializeOwned, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::items::InputItem;

#[derive(Debug)]
pub struct ResponsesRequest {
    pub model: String,
    pub input: Input,
    pub instructions: Option<String>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning: Option<ReasoningConfig>,
    pub text: Option<TextConfig>,
    /// Absent means `true`, as on OpenAI.
    pub store: Option<bool>,
    pub stream: Option<bool>,
    pub previous_response_id: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub user: Option<String>,
    /// Every other field (`include`, `prompt_cache_key`, `client_metadata`, …), kept verbatim.
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
#[derive(Debug)]
pub enum Input {
    Text(String),
    Items(Vec<InputItem>),
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape;

        impl<'de> Visitor<'de> for Shape {
            type Value = Input;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string or a list of items")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Input, E> {
                Ok(Input::Text(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Input, E> {
                Ok(Input::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Input, A::Error> {
                let mut list = Vec::new();
                while let Some(item) = items.next_element()? {
                    list.push(item);
                }
                Ok(Input::Items(list))
            }
        }

        deserializer.deserialize_any(Shape)
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
