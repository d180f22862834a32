//! What a client may send to `POST /api/chat` and `POST /api/generate`, as types shaped for
//! naming its problems: the body is read once into these (a shape problem is a 400 naming
//! its path, `messages[1].tool_calls[0].function.name`), and `validate` checks their values
//! and turns them into the pipeline's request through the wire crate's Ollama reader.
//! Top-level scalars are [`Sent`], so every wrong one is listed in one answer. Fields Ollama
//! has and the gateway has no use for (`keep_alive`, `template`, `context`) are read only as
//! far as their meaning needs; unknown fields are ignored, as Ollama ignores them.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::api::fields::{self, Sent};

/// The body of `POST /api/chat`.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a JSON object")]
pub struct ChatBody {
    #[serde(default)]
    pub model: Sent<String>,
    #[serde(default, deserialize_with = "fields::array")]
    pub messages: Option<Vec<ClientMessage>>,
    /// Function tools in OpenAI's definition shape (compiled and checked as such).
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(flatten)]
    pub common: Common,
}

/// The body of `POST /api/generate`.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a JSON object")]
pub struct GenerateBody {
    #[serde(default)]
    pub model: Sent<String>,
    #[serde(default)]
    pub prompt: Sent<String>,
    #[serde(default)]
    pub system: Sent<String>,
    /// Fill-in-the-middle text: refused, no route completes around a suffix.
    #[serde(default)]
    pub suffix: Sent<String>,
    #[serde(default)]
    pub raw: Sent<bool>,
    #[serde(default, deserialize_with = "fields::array")]
    pub images: Option<Vec<String>>,
    #[serde(flatten)]
    pub common: Common,
}

/// What `/api/chat` and `/api/generate` share.
#[derive(Debug, Deserialize)]
pub struct Common {
    /// `"json"` or a JSON Schema object.
    #[serde(default)]
    pub format: Option<Value>,
    /// Sampling settings by name; the known ones are checked by type, the rest ignored.
    #[serde(default)]
    pub options: Sent<Map<String, Value>>,
    #[serde(default)]
    pub think: Sent<Think>,
    /// How long Ollama keeps the model loaded: a number of seconds or a duration string.
    /// Routes are always ready, so only `0` means something (an unload request).
    #[serde(default)]
    pub keep_alive: Option<Value>,
    /// Ollama streams unless told otherwise.
    #[serde(default)]
    pub stream: Sent<bool>,
}

/// `think`: on or off, or a level.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Think {
    On(bool),
    Level(String),
}

/// One message of the conversation.
#[derive(Debug, Deserialize)]
pub struct ClientMessage {
    #[serde(default)]
    pub role: Sent<String>,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub thinking: Option<String>,
    /// Base64 images.
    #[serde(default, deserialize_with = "fields::array")]
    pub images: Option<Vec<String>>,
    #[serde(default, deserialize_with = "fields::array")]
    pub tool_calls: Option<Vec<ClientToolCall>>,
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Not Ollama's, but sent by clients that keep OpenAI's ids (Open WebUI).
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// A call in an assistant message of the history. Ollama's own clients drop `id`;
/// Home Assistant sends neither `id` nor `index`.
#[derive(Debug, Deserialize)]
pub struct ClientToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: ClientFunction,
}

#[derive(Debug, Deserialize)]
pub struct ClientFunction {
    #[serde(default)]
    pub index: Option<u32>,
    pub name: String,
    /// A JSON object; a string of JSON is accepted, as Ollama accepts it.
    #[serde(default)]
    pub arguments: Value,
}
