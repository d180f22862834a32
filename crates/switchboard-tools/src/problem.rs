//! One thing wrong with a tool list, located by its JSON path.

use std::fmt;

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
            path: path.into(),
            message: message.into(),
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
