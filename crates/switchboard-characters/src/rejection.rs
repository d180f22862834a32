//! Why a character file was not loaded: every reason, each naming the export it concerns, so
//! that a developer fixes the file in one pass.

use std::fmt;
use std::path::PathBuf;

/// A character file that was not loaded, with every reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub file: PathBuf,
    pub problems: Vec<String>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{file}: {problem}")?;
        }
        Ok(())
    }
}

/// One reason, with the label it is counted under in
/// `character_tool_validation_errors_total{error_type}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadProblem {
    pub kind: &'static str,
    pub message: String,
}

impl LoadProblem {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Labels of load problems.
pub(crate) mod kind {
    pub const UNREADABLE: &str = "unreadable";
    pub const SYNTAX_ERROR: &str = "syntax_error";
    pub const MODULE_ERROR: &str = "module_error";
    pub const MISSING_EXPORT: &str = "missing_export";
    pub const INVALID_EXPORT: &str = "invalid_export";
    pub const TOOLS_NOT_ARRAY: &str = "tools_not_array";
    pub const INVALID_SCHEMA: &str = "invalid_schema";
    pub const MISSING_HANDLER: &str = "missing_handler";
    pub const DUPLICATE_NAME: &str = "duplicate_name";
}
