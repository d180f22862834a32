//! The limits a character runs under. Defaults are the documented ones; tests and operators
//! override them.

use std::time::Duration;

/// How characters are loaded and the limits their code runs under.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Memory one character's runtime may use, shared by all its conversations.
    pub memory_limit: usize,
    /// Time a tool call (or the start of a conversation) may run unless the character
    /// declares `TOOL_TIMEOUT_MS`.
    pub default_timeout: Duration,
    /// Time the module's top-level code may run when it is loaded.
    pub load_timeout: Duration,
    /// The directory may be absent (a default nobody configured): then no character is
    /// loaded and nothing is rejected, rather than the directory itself.
    pub optional_dir: bool,
    /// The names of the MCP servers the gateway's configuration defines (its
    /// `[[mcp_server]]` entries): a character whose `MCP_SERVERS` names another is refused.
    /// `None` (a caller without a configuration): the names are not checked against a list.
    pub mcp_servers: Option<Vec<String>>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            memory_limit: 64 * 1024 * 1024,
            default_timeout: Duration::from_millis(100),
            load_timeout: Duration::from_secs(1),
            optional_dir: false,
            mcp_servers: None,
        }
    }
}
