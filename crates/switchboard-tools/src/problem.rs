//! One thing wrong with a tool list, located by its JSON path. Tool lists come from API
//! clients, so whatever a problem quotes of them is cut to a bounded length: a 400 KB
//! pattern must not come back as a 400 KB error.

use std::fmt;

use serde_json::Value;

/// Cuts `text` to `max` characters, ending with `…` when anything was cut.
pub fn truncate_message(text: String, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > max => format!("{}…", &text[..cut]),
        _ => text,
    }
}

/// Characters of client input quoted in a message.
pub const MAX_QUOTED_CHARS: usize = 100;
/// Characters of a problem's message, whatever it quotes.
const MAX_PROBLEM_CHARS: usize = 300;
/// Characters of a problem's path (object keys come from the client too).
const MAX_PATH_CHARS: usize = 200;

/// A problem found while validating tool definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON Pointer into the validated document, e.g. `/2/function/parameters/type`.
    pub path: String,
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: truncate_message(path.into(), MAX_PATH_CHARS),
            message: truncate_message(message.into(), MAX_PROBLEM_CHARS),
        }
    }
}

/// Client text as a message quotes it: `"text"`, or its start and its length when longer
/// than [`MAX_QUOTED_CHARS`].
pub fn quote(text: &str) -> String {
    let length = text.chars().count();
    if length <= MAX_QUOTED_CHARS {
        format!("\"{text}\"")
    } else {
        let start = truncate_message(text.to_owned(), MAX_QUOTED_CHARS);
        format!("\"{start}\" ({length} characters)")
    }
}

/// A client's JSON value as a message quotes it: strings as [`quote`] does, other values as
/// JSON, cut the same way.
pub fn quote_value(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        other => {
            let text = other.to_string();
            let length = text.chars().count();
            if length <= MAX_QUOTED_CHARS {
                text
            } else {
                format!(
                    "{} ({length} characters)",
                    truncate_message(text, MAX_QUOTED_CHARS)
                )
            }
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Every problem found in one document; validation never stops at the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join_lines(.0))]
pub struct Problems(pub Vec<Problem>);

fn join_lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Appends one segment to a JSON Pointer, escaping `~` and `/` as RFC 6901 asks.
pub(crate) fn pointer(base: &str, segment: impl fmt::Display) -> String {
    let segment = segment.to_string().replace('~', "~0").replace('/', "~1");
    format!("{base}/{segment}")
}
