//! What a client may send to `POST /v1/chat/completions`, as types shaped for naming its
//! problems: the body is read once, from its bytes, into these (a shape problem is a 400
//! naming its path, `messages[1].content`), and `validate` checks their values and turns
//! them into the pipeline's request. They are not the wire crate's `ChatCompletionRequest`,
//! which is what the gateway writes to OpenAI-format backends: a client's request may be
//! wrong in ways that type cannot hold, and each wrong field must be named.
//!
//! Top-level scalars are [`Sent`], so every wrong one is listed in one answer; fields
//! that must be there to make sense (`role`, a call's `id`) are optional here so that
//! their absence is named at their path. Fields this type does not name stay in `extra`,
//! forwarded as they came.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_tools::Content;
use switchboard_wire::mcp::OpenAiTool;
use switchboard_wire::openai::Stop;

use crate::api::fields::{self, Sent, refuse_other_types};

/// The body of `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a JSON object")]
pub struct ChatBody {
    #[serde(default)]
    pub model: Sent<String>,
    #[serde(default, deserialize_with = "fields::array")]
    pub messages: Option<Vec<ClientMessage>>,
    /// Function definitions (JSON Schema documents, compiled and checked as such), the
    /// gateway's tool search, and `{"type": "mcp"}` servers for the gateway to run, each
    /// read into its type.
    #[serde(default, deserialize_with = "fields::array")]
    pub tools: Option<Vec<OpenAiTool>>,
    #[serde(default)]
    pub tool_choice: Sent<ClientToolChoice>,
    #[serde(default)]
    pub parallel_tool_calls: Sent<bool>,
    #[serde(default)]
    pub temperature: Sent<f64>,
    #[serde(default)]
    pub top_p: Sent<f64>,
    #[serde(default)]
    pub max_tokens: Sent<u64>,
    #[serde(default)]
    pub max_completion_tokens: Sent<u64>,
    #[serde(default)]
    pub stop: Sent<Stop>,
    #[serde(default)]
    pub stream: Sent<bool>,
    #[serde(default)]
    pub stream_options: Sent<StreamOptions>,
    #[serde(default)]
    pub reasoning_effort: Sent<String>,
    /// Passed on to each backend's structured-output control; its shape is checked.
    #[serde(default)]
    pub response_format: Option<Value>,
    #[serde(default)]
    pub seed: Sent<i64>,
    #[serde(default)]
    pub top_k: Sent<u32>,
    /// The OpenAI API's other fields (`n`, `logit_bias`, `user`, …) and vendor extensions:
    /// forwarded as sent, so kept as sent; the standard ones are checked first.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of the conversation, whatever its role.
#[derive(Debug, Deserialize)]
pub struct ClientMessage {
    #[serde(default)]
    pub role: Sent<Role>,
    #[serde(default, deserialize_with = "content")]
    pub content: Option<Content>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "fields::array")]
    pub tool_calls: Option<Vec<ClientToolCall>>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// Every role, as a problem names them.
    pub const NAMES: &[&str] = &["system", "developer", "user", "assistant", "tool"];
}

/// A call in an assistant message of the history.
#[derive(Debug, Deserialize)]
pub struct ClientToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: Sent<String>,
    #[serde(default)]
    pub function: Option<ClientFunctionCall>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a function call object")]
pub struct ClientFunctionCall {
    #[serde(default)]
    pub name: Option<String>,
    /// JSON text.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// `"auto"`, `"none"`, `"required"`, or `{"type": "function", "function": {"name": …}}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ClientToolChoice {
    Mode(String),
    Named {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        function: Option<NamedFunction>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct NamedFunction {
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// `content`: null, a string, or an array of parts (kept as sent: parts other than text
/// pass through to backends untouched).
fn content<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Content>, D::Error> {
    struct ContentVisitor;
    impl<'de> Visitor<'de> for ContentVisitor {
        type Value = Option<Content>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str(WHAT_CONTENT_IS)
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Some(Content::Text(text.to_owned())))
        }

        fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
            Ok(Some(Content::Text(text)))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            fields::collect(seq).map(|parts| Some(Content::Parts(parts)))
        }

        refuse_other_types!(WHAT_CONTENT_IS);
    }
    deserializer.deserialize_any(ContentVisitor)
}

const WHAT_CONTENT_IS: &str = "must be a string or an array of content parts";
