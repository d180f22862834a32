//! A character's conversation runs one tool source: its own tools (`TOOLS`, in its sandbox)
//! and the tools of the MCP servers it declares (`MCP_SERVERS`), offered to the model as
//! `{server}_{tool}` (shortened to what model APIs accept, and mapped back on the call).
//! Every call goes to whichever runs it, with the same `Error: …` texts for every failure.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use switchboard_characters::CharacterSession;
use switchboard_runtime::ToolExecutor;
use switchboard_tools::names::MODEL_MAX_CHARS;
use switchboard_tools::{CallError, ToolCall, ToolDefinition, ToolResult};

use super::ToolFilter;
use super::ToolServer;
use crate::catalog::{self, Catalog, Entry, Scope, Source};

/// A character's tools and its MCP servers' tools.
#[derive(Debug)]
pub struct CharacterToolbox {
    session: CharacterSession,
    /// The servers the character declares that are configured, running or not.
    servers: Vec<Arc<ToolServer>>,
    definitions: Vec<ToolDefinition>,
    /// The name offered to the model, the server, and the server's own name for the tool.
    offered: Vec<(String, Arc<ToolServer>, String)>,
    /// The character's own tools the caller's key may not use, or whose names meet another
    /// tool's: a call to one is answered as a call to no tool.
    refused: HashSet<String>,
}

impl CharacterToolbox {
    /// The character's part of the catalog ([`Scope::Character`]) over `servers` (see
    /// [`ToolServers::declared_by`](super::ToolServers::declared_by)): the session's tools
    /// and, for each server the character declares, the tools its entry allows; of all
    /// these, those `filter` allows, as on every other path. Tools whose
    /// names meet (an own tool `fs_read` and server `fs`'s `read`) are all left out, with a
    /// warning: either choice would run a tool the model did not mean.
    pub fn new(
        session: CharacterSession,
        servers: &[Arc<ToolServer>],
        filter: &ToolFilter,
    ) -> Self {
        let character = Arc::clone(session.character());
        // The character's own tools keep their names; its servers' are offered under their
        // catalog names, cut to what model APIs accept.
        let offered_as = |entry: &Entry| match &entry.source {
            Source::Character { tool, .. } => tool.clone(),
            Source::Server { .. } => entry.served(MODEL_MAX_CHARS).into_owned(),
        };
        let listed = Catalog::new(servers).list(Scope::Character(&character), filter);
        let mut definitions = Vec::with_capacity(listed.len());
        let mut offered = Vec::new();
        for entry in catalog::apart(listed, offered_as) {
            let name = offered_as(&entry);
            match entry.source {
                Source::Character { tool, .. } => {
                    if let Some(compiled) = character.tools().get(&tool) {
                        definitions.push(compiled.definition().clone());
                    }
                }
                Source::Server { server, tool } => {
                    let mut definition = ToolDefinition::function(
                        name.clone(),
                        tool.description.clone().unwrap_or_default(),
                        tool.input_schema.clone(),
                    );
                    definition.function.description = tool.description.clone();
                    definitions.push(definition);
                    offered.push((name, server, tool.name));
                }
            }
        }
        let refused = character
            .tools()
            .definitions()
            .map(|definition| definition.name())
            .filter(|name| !definitions.iter().any(|kept| kept.name() == *name))
            .map(str::to_owned)
            .collect();
        Self {
            session,
            servers: servers.to_vec(),
            definitions,
            offered,
            refused,
        }
    }
}

impl CharacterToolbox {
    /// The server and its own name for the tool the model calls `name`; `None` for the
    /// character's own tools.
    pub fn source(&self, name: &str) -> Option<(String, String)> {
        self.offered
            .iter()
            .find(|(offered, ..)| offered == name)
            .map(|(_, server, tool)| (server.name.clone(), tool.clone()))
    }
}

impl ToolExecutor for CharacterToolbox {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.definitions.clone()
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult> {
        let Some((_, server, tool)) = self.offered.iter().find(|(name, ..)| *name == call.name)
        else {
            // A tool of a server that was down when the conversation began (none of its
            // tools could be offered) fails with why, not as a tool that never was.
            let down = self
                .servers
                .iter()
                .filter(|server| call.name.starts_with(&format!("{}_", server.name)))
                .find_map(|server| server.unavailable());
            let refused = self
                .refused
                .contains(&call.name)
                .then(|| CallError::UnknownTool(call.name.clone()).to_string());
            if let Some(text) = down.or(refused) {
                let result = ToolResult {
                    call_id: call.id.clone(),
                    content: text,
                    is_error: true,
                };
                return Box::pin(async move { result });
            }
            return Box::pin(self.session.call_tool(call));
        };
        let character = self.session.character().name().to_owned();
        Box::pin(async move {
            let reply = server
                .call(tool, &call.arguments, Some(&call.id), Some(&character))
                .await;
            ToolResult {
                call_id: call.id.clone(),
                content: reply.text,
                is_error: reply.is_error,
            }
        })
    }
}
