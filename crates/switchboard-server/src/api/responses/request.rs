//! What a client may send to `POST /v1/responses`, as types shaped for naming its problems:
//! the body is read once, from its bytes, into these, `validate` checks them and moves them
//! into the wire crate's `ResponsesRequest`. Top-level scalars are [`Sent`], so every
//! wrong one is listed in one answer. `input`'s items are read into their types here, each
//! keeping its problem for the conversion to name by its path (`input[4].call_id`);
//! `tools` stay JSON, which the response echoes as sent, and the conversion moves each into
//! its kind's type with its path.

use serde::Deserialize;
use serde_json::{Map, Value};

use switchboard_wire::responses::InputItem;

use crate::api::fields::{Sent, TextOrList};

/// The body of `POST /v1/responses`.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a JSON object")]
pub struct ResponsesBody {
    #[serde(default)]
    pub model: Sent<String>,
    #[serde(default)]
    pub input: Option<TextOrList<InputItem>>,
    #[serde(default)]
    pub instructions: Sent<String>,
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Sent<bool>,
    #[serde(default)]
    pub max_output_tokens: Sent<u64>,
    #[serde(default)]
    pub temperature: Sent<f64>,
    #[serde(default)]
    pub top_p: Sent<f64>,
    #[serde(default)]
    pub reasoning: Sent<Map<String, Value>>,
    #[serde(default)]
    pub text: Sent<Map<String, Value>>,
    #[serde(default)]
    pub store: Sent<bool>,
    #[serde(default)]
    pub stream: Sent<bool>,
    #[serde(default)]
    pub previous_response_id: Sent<String>,
    #[serde(default)]
    pub metadata: Sent<Map<String, Value>>,
    #[serde(default)]
    pub user: Sent<String>,
    /// Every other field (`include`, `prompt_cache_key`, `client_metadata`, …), kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
