//! The one catalog of the tools the gateway runs: characters' own tools and the upstream
//! MCP servers' tools, listed for a scope (every tool, one character's, one server's) under
//! a caller's [`ToolFilter`]. `/mcp` serves what it lists, a character's toolbox offers
//! it to the model, and a request's gateway tools take each named server's part of it: one
//! rule for which tools a key may use and what they are called, so that no path offers
//! what another hides.
//!
//! Every tool has one catalog name, `{character file stem}_{tool}` or `{server}_{tool}`:
//! the name a key's `tools` globs judge (as `/mcp` serves it, see [`ToolFilter`]) and, cut
//! to what a client accepts ([`Entry::served`]), the name it is served under wherever it
//! is served with its prefix.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use switchboard_characters::Character;
use switchboard_tools::names;

use crate::target::CharacterId;
#[cfg(doc)]
use crate::tool_servers::ToolServers;
use crate::tool_servers::{Offered, ToolFilter, ToolServer};

/// Which part of the catalog to list.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// The tools of these characters (in their order: the caller decides which it may
    /// see) and of every configured server.
    All(&'a [Arc<Character>]),
    /// One character's own tools and those of the servers it declares, as its
    /// `MCP_SERVERS` entries allow: what its model is offered.
    Character(&'a Arc<Character>),
    /// One server's tools (configured, or one a request connected).
    Server(&'a Arc<ToolServer>),
}

/// One tool of the catalog.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `{character file stem}_{tool}` or `{server}_{tool}`.
    pub catalog_name: String,
    /// Where it lives and what runs it.
    pub source: Source,
}

/// What runs a tool of the catalog.
#[derive(Debug, Clone)]
pub enum Source {
    /// A character's own tool, run in its sandbox.
    Character {
        character: Arc<Character>,
        tool: String,
    },
    /// A server's tool, as the server offers it.
    Server {
        server: Arc<ToolServer>,
        tool: Box<Offered>,
    },
}

impl Source {
    /// The tool's own name where it lives.
    pub fn tool(&self) -> &str {
        match self {
            Self::Character { tool, .. } => tool,
            Self::Server { tool, .. } => &tool.name,
        }
    }

    /// Where it lives, for warnings.
    fn describe(&self) -> String {
        match self {
            Self::Character { character, tool } => {
                format!("character {} tool {tool:?}", character.name())
            }
            Self::Server { server, tool } => {
                format!("MCP server {} tool {:?}", server.name, tool.name)
            }
        }
    }
}

impl Entry {
    /// Its catalog name as served where names may be `max` characters long (shortened with
    /// a hash past that, see [`names::served`]).
    pub fn served(&self, max: usize) -> Cow<'_, str> {
        names::served(&self.catalog_name, max)
    }
}

/// The catalog over servers: one configuration's
/// ([`ToolServers::all`](crate::tool_servers::ToolServers::all)), or those a character
/// declares ([`ToolServers::declared_by`](crate::tool_servers::ToolServers::declared_by)).
#[derive(Debug, Clone, Copy)]
pub struct Catalog<'a> {
    pub servers: &'a [Arc<ToolServer>],
}

impl<'a> Catalog<'a> {
    pub fn new(servers: &'a [Arc<ToolServer>]) -> Self {
        Self { servers }
    }

    /// The tools of `scope` that `filter` allows, in order: characters' before servers',
    /// each source's in its own order.
    pub fn list(&self, scope: Scope<'_>, filter: &ToolFilter) -> Vec<Entry> {
        let mut entries = Vec::new();
        match scope {
            Scope::All(characters) => {
                for character in characters {
                    character_tools(character, &mut entries);
                }
                for server in self.servers {
                    server_tools(server, |_| true, &mut entries);
                }
            }
            Scope::Character(character) => {
                character_tools(character, &mut entries);
                // In the character's order of `MCP_SERVERS`, as `declared_by` gives them.
                for declared in character.mcp_servers() {
                    let Some(server) = self
                        .servers
                        .iter()
                        .find(|server| server.name == declared.server)
                    else {
                        continue;
                    };
                    server_tools(server, |tool| declared.allows(tool), &mut entries);
                }
            }
            Scope::Server(server) => server_tools(server, |_| true, &mut entries),
        }
        entries.retain(|entry| filter.allows(&entry.catalog_name));
        entries
    }
}

/// `entries` without those whose names, as `name` spells them, meet: either would run a
/// tool the caller did not mean, so both are left out, with a warning naming both.
pub fn apart(entries: Vec<Entry>, name: impl Fn(&Entry) -> String) -> Vec<Entry> {
    let mut seen = HashSet::new();
    let met: HashSet<String> = entries
        .iter()
        .map(&name)
        .filter(|served| !seen.insert(served.clone()))
        .collect();
    for served in &met {
        let sources: Vec<String> = entries
            .iter()
            .filter(|entry| name(entry) == *served)
            .map(|entry| entry.source.describe())
            .collect();
        tracing::warn!(tool = %served, sources = %sources.join(", "), "tools left out: their served names meet; rename one");
    }
    entries
        .into_iter()
        .filter(|entry| !met.contains(&name(entry)))
        .collect()
}

/// The catalog name of `character`'s own tool `tool`: prefixed with its file stem (its name
/// when it has none).
pub fn character_tool_name(character: &Character, tool: &str) -> String {
    match CharacterId::of(character) {
        Some(id) => format!("{}_{tool}", id.name()),
        None => format!("{}_{tool}", character.name()),
    }
}

/// A character's own tools, by their catalog names.
fn character_tools(character: &Arc<Character>, entries: &mut Vec<Entry>) {
    for tool in character.tools().tools() {
        entries.push(Entry {
            catalog_name: character_tool_name(character, tool.name()),
            source: Source::Character {
                character: Arc::clone(character),
                tool: tool.name().to_owned(),
            },
        });
    }
}

/// The tools `server` offers that `allows` lets through, prefixed with its name.
fn server_tools(server: &Arc<ToolServer>, allows: impl Fn(&str) -> bool, entries: &mut Vec<Entry>) {
    for tool in server.offered().iter().filter(|tool| allows(&tool.name)) {
        entries.push(Entry {
            catalog_name: format!("{}_{}", server.name, tool.name),
            source: Source::Server {
                server: Arc::clone(server),
                tool: Box::new(tool.clone()),
            },
        });
    }
}
