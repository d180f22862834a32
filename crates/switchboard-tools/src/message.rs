//! Chat messages in OpenAI's shape, tool calls and tool results included.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolCall;

/// One message of a conversation, tagged by `role` as OpenAI does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Developer {
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    User {
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Assistant {
        /// Null when the reply is only tool calls.
        #[serde(default)]
        content: Option<Content>,
        /// Reasoning text some servers return beside the answer (vLLM, DeepSeek); kept so
        /// that reasoning models see their own reasoning between tool rounds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// The signature Anthropic gave `reasoning_content`, which it requires back with
        /// exactly that text before it accepts a later turn. Not part of OpenAI's shape, so
        /// never serialised: only the Anthropic conversions read and write it.
        #[serde(skip)]
        reasoning_signature: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Tool {
        tool_call_id: String,
        content: Content,
    },
}

/// Message content: a plain string, or OpenAI's list of parts (text, images, …).
/// Parts other than text are kept as they came so that they pass through untouched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Value>),
}

impl Content {
    /// The text of the content; parts that are not text are skipped.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect(),
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Message::System {
            content: Content::Text(text.into()),
            name: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: Content::Text(text.into()),
            name: None,
        }
    }

    /// An assistant turn; empty text becomes a null content, as OpenAI sends it.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        Message::Assistant {
            content: (!text.is_empty()).then_some(Content::Text(text)),
            reasoning_content: None,
            reasoning_signature: None,
            tool_calls,
            name: None,
        }
    }

    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: Content::Text(content.into()),
        }
    }

    /// The role name as it appears on the wire.
    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::Developer { .. } => "developer",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each message as OpenAI documents it must come back byte for byte.
    #[test]
    fn openai_messages_round_trip_exactly() {
        let conversation = json!([
            {"role": "system", "content": "You are the narrator."},
            {"role": "developer", "content": "Be brief.", "name": "ops"},
            {"role": "user", "content": [{"type": "text", "text": "Look: "}, {"type": "image_url", "image_url": {"url": "data:,"}}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "log_story_event", "arguments": "{\"event\":\"x\"}"}}]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Logged story event: x"},
            {"role": "assistant", "content": "Done.", "reasoning_content": "The log worked."}
        ]);
        let messages: Vec<Message> = serde_json::from_value(conversation.clone()).unwrap();
        assert_eq!(serde_json::to_value(&messages).unwrap(), conversation);
        assert_eq!(messages[2].role(), "user");
        if let Message::User { content, .. } = &messages[2] {
            assert_eq!(content.text(), "Look: ");
        }
    }

    #[test]
    fn unknown_role_and_wrong_call_type_are_rejected() {
        assert!(
            serde_json::from_value::<Message>(json!({"role": "robot", "content": "x"})).is_err()
        );
        let error = serde_json::from_value::<Message>(json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "c", "type": "browser", "function": {"name": "f", "arguments": ""}}]}))
        .unwrap_err();
        assert!(error.to_string().contains("\"browser\""), "{error}");
    }
}
