//! A loaded character: what its file declares, shared read-only by every conversation, and
//! the handle of the thread that runs its code.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde_json::Value;
use switchboard_tools::Toolset;

use crate::engine::EngineHandle;
use crate::inspect::Declaration;
use crate::mcp::McpServerUse;

/// One character, loaded once. Conversations hold it in an `Arc`, so a reload never changes
/// the character of a conversation already running.
#[derive(Debug)]
pub struct Character {
    declaration: Declaration,
    file: PathBuf,
    memory_limit: usize,
    engine: EngineHandle,
    /// The id the next conversation gets (see `session.rs`, which starts them).
    pub(crate) next_session: AtomicU64,
}

impl Character {
    pub(crate) fn new(
        declaration: Declaration,
        file: PathBuf,
        memory_limit: usize,
        engine: EngineHandle,
    ) -> Self {
        Self {
            declaration,
            file,
            memory_limit,
            engine,
            next_session: AtomicU64::new(1),
        }
    }

    /// `CHARACTER_NAME`.
    pub fn name(&self) -> &str {
        &self.declaration.name
    }

    /// The file the character was loaded from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The validated `TOOLS`, whose definitions go into the LLM request.
    pub fn tools(&self) -> &Toolset {
        &self.declaration.tools
    }

    /// `VOICE_SOURCE`, as JSON.
    pub fn voice_source(&self) -> &Value {
        &self.declaration.voice_source
    }

    /// `INSTRUCTIONS`, as JSON.
    pub fn instructions(&self) -> &Value {
        &self.declaration.instructions
    }

    /// `METADATA`, when the file exports it.
    pub fn metadata(&self) -> Option<&Value> {
        self.declaration.metadata.as_ref()
    }

    /// `false` when `METADATA.good === false`: the character loads but is not listed.
    pub fn is_listed(&self) -> bool {
        self.declaration.listed
    }

    /// `MCP_SERVERS`: the upstream MCP servers the character may use, in the order declared;
    /// their tools are offered beside [`tools`](Self::tools). Empty when it declares none.
    pub fn mcp_servers(&self) -> &[McpServerUse] {
        &self.declaration.mcp_servers
    }

    /// The character's use of the MCP server named `server`, when it declares one.
    pub fn mcp_server(&self, server: &str) -> Option<&McpServerUse> {
        self.mcp_servers().iter().find(|used| used.server == server)
    }

    /// How long one tool call may run: `TOOL_TIMEOUT_MS` or the default.
    pub fn tool_timeout(&self) -> Duration {
        self.declaration.timeout
    }

    /// The memory limit of the character's runtime, in bytes.
    pub fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    /// Whether `query` names this character: its `CHARACTER_NAME` or its file stem,
    /// ignoring case.
    pub fn is_named(&self, query: &str) -> bool {
        self.name().eq_ignore_ascii_case(query)
            || self
                .file
                .file_stem()
                .is_some_and(|stem| stem.to_string_lossy().eq_ignore_ascii_case(query))
    }

    pub(crate) fn engine(&self) -> &EngineHandle {
        &self.engine
    }
}

/// The character `query` names: by `CHARACTER_NAME` first, then by file stem, ignoring case.
pub(crate) fn find<'a>(
    characters: &'a [Arc<Character>],
    query: &str,
) -> Option<&'a Arc<Character>> {
    characters
        .iter()
        .find(|character| character.name().eq_ignore_ascii_case(query))
        .or_else(|| {
            characters
                .iter()
                .find(|character| character.is_named(query))
        })
}
