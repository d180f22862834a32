//! A loaded character: what its file declares, shared read-only by every conversation, and
//! the handle of the thread that runs its code.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use switchboard_tools::{ToolCall, ToolResult, Toolset};
use tokio::sync::oneshot;

use crate::engine::{EngineHandle, Job, LogScope};
use crate::inspect::Declaration;
use crate::mcp::McpServerUse;
use crate::session::{CharacterSession, SessionError};

/// One character, loaded once. Conversations hold it in an `Arc`, so a reload never changes
/// the character of a conversation already running.
#[derive(Debug)]
pub struct Character {
    declaration: Declaration,
    file: PathBuf,
    memory_limit: usize,
    engine: EngineHandle,
    next_session: AtomicU64,
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

    /// Starts a conversation: one `new PromptGenerator(INSTRUCTIONS)` that keeps its state
    /// across turns, and the system prompt it makes now.
    pub async fn start_conversation(self: &Arc<Self>) -> Result<CharacterSession, SessionError> {
        let session = self.next_session.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        if !self.engine.send(Job::Start {
            session,
            scope: LogScope::current(),
            reply,
        }) {
            return Err(SessionError::Stopped {
                character: self.name().to_owned(),
            });
        }
        match answer.await {
            Ok(Ok(system_prompt)) => Ok(CharacterSession::new(
                Arc::clone(self),
                session,
                system_prompt,
            )),
            Ok(Err(reason)) => Err(SessionError::Start {
                character: self.name().to_owned(),
                reason,
            }),
            Err(_) => Err(SessionError::Stopped {
                character: self.name().to_owned(),
            }),
        }
    }

    /// Runs one tool call on a fresh conversation, through exactly the path a conversation's
    /// calls take (validation with defaults, sandbox, deadline, result schema, truncation,
    /// metrics and the `execute_tool` span). The one way a tool runs outside a
    /// conversation: the characters API, `switchboard call` and MCP clients all come here.
    pub async fn run_tool(self: &Arc<Self>, call: &ToolCall) -> Result<ToolResult, SessionError> {
        let session = self.start_conversation().await?;
        Ok(session.call_tool(call).await)
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
