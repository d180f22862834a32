//! A tool call the model made, and the result that answers it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A call as the model made it. `arguments` is kept as the raw text the model wrote:
/// validation decides what it means, and the text is what goes back into history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The outcome of one call, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// OpenAI's wire shape: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Serialize, Deserialize)]
struct WireCall<'a> {
    id: std::borrow::Cow<'a, str>,
    #[serde(rename = "type")]
    kind: std::borrow::Cow<'a, str>,
    function: WireFunction<'a>,
}

#[derive(Serialize, Deserialize)]
struct WireFunction<'a> {
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: std::borrow::Cow<'a, str>,
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireCall {
            id: self.id.as_str().into(),
            kind: "function".into(),
            function: WireFunction {
                name: self.name.as_str().into(),
                arguments: self.arguments.as_str().into(),
            },
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireCall::deserialize(deserializer)?;
        if wire.kind != "function" {
            return Err(serde::de::Error::custom(format!(
                "tool call type must be \"function\", got \"{}\"",
                wire.kind
            )));
        }
        Ok(ToolCall {
            id: wire.id.into_owned(),
            name: wire.function.name.into_owned(),
            arguments: wire.function.arguments.into_owned(),
        })
    }
}
