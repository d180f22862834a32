//! What a parser reports while it reads model output, and the final result those reports add
//! up to. Streaming clients consume the events; everyone else folds them with [`collect`], so
//! a streamed parse and a whole parse cannot disagree.

use serde::Serialize;
use serde_json::{Map, Value};

/// One thing a parser found, in output order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ParseEvent {
    /// User-visible text.
    Content { delta: String },
    /// Reasoning text (`<think>`, harmony's analysis channel, ...).
    Reasoning { delta: String },
    /// A call begins. `known` is false when the request offered tools and none has this name:
    /// the call is still reported (flagged, never dropped) so the caller can answer it.
    ToolCallStart {
        index: usize,
        name: String,
        known: bool,
    },
    /// A fragment of the call's arguments; the fragments of one call concatenate to the JSON
    /// text of its arguments object (`{}` when the model gave none).
    ToolCallArguments { index: usize, delta: String },
    /// The call is complete and its arguments are a valid JSON object.
    ToolCallEnd { index: usize },
    /// A call, or markup that opened one, was malformed or cut off. It is not a tool call:
    /// when `index` is set, a `ToolCallStart` with that index was already sent and the client
    /// must discard that call. `text` is the raw markup, for logs and error messages.
    Invalid {
        index: Option<usize>,
        reason: String,
        text: String,
    },
}

/// One valid tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedCall {
    pub name: String,
    /// Always a JSON object.
    pub arguments: Value,
    /// False when the request offered tools and none has this name.
    #[serde(skip_serializing_if = "is_true")]
    pub known: bool,
}

fn is_true(value: &bool) -> bool {
    *value
}

/// A malformed or truncated call that was not returned as a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParseIssue {
    pub reason: String,
    pub text: String,
}

/// The whole result of parsing one model output.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Parsed {
    pub content: Option<String>,
    pub reasoning_content: Option<String>,
    pub tool_calls: Vec<ParsedCall>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<ParseIssue>,
}

/// Folds a parser's events into the final result. Empty text becomes `None`.
pub fn collect<I: IntoIterator<Item = ParseEvent>>(events: I) -> Parsed {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut open: Vec<(usize, String, bool, String)> = Vec::new();
    let mut done: Vec<(usize, ParsedCall)> = Vec::new();
    let mut issues = Vec::new();
    for event in events {
        match event {
            ParseEvent::Content { delta } => content.push_str(&delta),
            ParseEvent::Reasoning { delta } => reasoning.push_str(&delta),
            ParseEvent::ToolCallStart { index, name, known } => {
                open.push((index, name, known, String::new()))
            }
            ParseEvent::ToolCallArguments { index, delta } => {
                if let Some(call) = open.iter_mut().find(|call| call.0 == index) {
                    call.3.push_str(&delta);
                }
            }
            ParseEvent::ToolCallEnd { index } => {
                if let Some(at) = open.iter().position(|call| call.0 == index) {
                    let (index, name, known, text) = open.remove(at);
                    let arguments = serde_json::from_str::<Map<String, Value>>(&text)
                        .map(Value::Object)
                        .unwrap_or_else(|_| Value::Object(Map::new()));
                    done.push((
                        index,
                        ParsedCall {
                            name,
                            arguments,
                            known,
                        },
                    ));
                }
            }
            ParseEvent::Invalid {
                index,
                reason,
                text,
            } => {
                if let Some(index) = index {
                    open.retain(|call| call.0 != index);
                }
                issues.push(ParseIssue { reason, text });
            }
        }
    }
    done.sort_by_key(|(index, _)| *index);
    Parsed {
        content: (!content.is_empty()).then_some(content),
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls: done.into_iter().map(|(_, call)| call).collect(),
        issues,
    }
}
