//! Why a character file was not loaded: every reason, each naming the export it concerns
//! (and the line and column where the engine knows them), so that a developer fixes the
//! file in one pass, in a terminal or on the playground page.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// A character file that was not loaded, with every reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub file: PathBuf,
    pub problems: Vec<Problem>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{file}: {}", problem.message)?;
        }
        Ok(())
    }
}

/// One reason a file was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The label it is counted under in `character_tool_validation_errors_total{error_type}`.
    pub kind: &'static str,
    /// The whole sentence, as `switchboard check` prints it (it repeats the path and the
    /// location when there are any).
    pub message: String,
    /// The export it concerns, as a path into it: `TOOLS/0/function/name`,
    /// `INSTRUCTIONS.language`.
    pub path: Option<String>,
    /// Where in the source, for problems the engine can place (syntax errors, exceptions
    /// thrown while the module loaded).
    #[serde(flatten)]
    pub location: Option<Location>,
}

/// A place in a file of the characters directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The file's path relative to the characters directory (an imported module's, when
    /// the problem is there).
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl Problem {
    pub(crate) fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            path: None,
            location: None,
        }
    }

    /// A problem with one export: the message is `PATH: detail`.
    pub(crate) fn at_export(kind: &'static str, path: impl Into<String>, detail: &str) -> Self {
        let path = path.into();
        Self {
            kind,
            message: format!("{path}: {detail}"),
            path: Some(path),
            location: None,
        }
    }

    pub(crate) fn located(mut self, location: Option<Location>) -> Self {
        self.location = location;
        self
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
    /// `MCP_SERVERS` (or one of its entries) is not what the format allows.
    pub const INVALID_MCP_SERVERS: &str = "invalid_mcp_servers";
    /// `MCP_SERVERS` names a server the gateway's configuration does not define.
    pub const UNKNOWN_MCP_SERVER: &str = "unknown_mcp_server";
}

/// How a problem names the JSON type of a value it did not expect.
pub(crate) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
