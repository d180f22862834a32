//! Characters' tools over MCP: the catalog the `switchboard-mcp` server serves, at `/mcp`
//! (every character's tools, named `{file stem}_{tool}`) and `/mcp/characters/{name}` (one
//! character's, unprefixed), and over stdio (`switchboard mcp`). A call runs exactly as the
//! characters API runs it ([`Character::run_tool`]). Over HTTP, the caller's key decides
//! which characters' tools it sees and may call; one beyond its reach is an unknown tool.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request};
use axum::http::{Extensions, StatusCode};
use axum::routing::any;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_characters::{Character, CharacterRegistry};
use switchboard_mcp::{
    CallError, CatalogTool, HttpEndpoint, HttpOptions, McpServer, ServerOptions, SessionLimits,
    SessionOptions, SessionOwner, SharedSessions, ToolCatalog, ToolOutput,
};
use switchboard_tools::{ToolCall, names};
use tokio::sync::watch;
use tracing::Instrument;

use super::front_end::RequestId;
use super::log::{RequestLog, Tally};
use crate::api::caller::Caller;
use crate::config::Config;
use crate::mcp_sessions::RedisSessions;
use crate::state::{AppState, Snapshot};
use switchboard_pipeline::catalog::{self, Catalog, Source};
use switchboard_pipeline::{CharacterId, Target, ToolFilter};

/// The pipeline's catalog of tools as MCP serves it: the characters' tools and, over HTTP,
/// the upstream MCP servers' tools.
#[derive(Debug)]
pub struct McpCatalog {
    registry: Arc<CharacterRegistry>,
    /// Each configuration as a reload swaps it in, over HTTP (the servers it runs).
    configurations: Option<watch::Receiver<Arc<Snapshot>>>,
    /// Bumped when any tool list may have changed: the characters', a server's, or the set
    /// of servers (a reload).
    changes: watch::Sender<u64>,
    /// Whether the tasks that bump `changes` run: started by the first client that listens,
    /// within the runtime that serves it (a router may be built outside one).
    following: std::sync::Mutex<bool>,
}

/// The part of the catalog a request's URL names: one character's tools
/// (`/mcp/characters/{name}`) or one server's (`/mcp/servers/{name}`), unprefixed.
#[derive(Debug, Clone)]
enum Scope {
    Character(String),
    Server(String),
}

/// A tool as one request sees it: the name it is offered under, and what runs it.
struct Entry {
    name: String,
    source: Source,
}

impl McpCatalog {
    /// The characters' tools alone (`switchboard mcp` over stdio).
    pub fn new(registry: Arc<CharacterRegistry>) -> Self {
        Self {
            registry,
            configurations: None,
            changes: watch::Sender::new(0),
            following: std::sync::Mutex::new(false),
        }
    }

    /// The characters' tools and the servers' of each configuration swapped in.
    fn serving(
        registry: Arc<CharacterRegistry>,
        configurations: watch::Receiver<Arc<Snapshot>>,
    ) -> Self {
        Self {
            configurations: Some(configurations),
            ..Self::new(registry)
        }
    }

    /// The tools a request may see, from the pipeline's catalog: characters by file stem,
    /// then servers in file order, each in its own order, as far as the caller's key
    /// allows (its `routes` for characters, its `tools` for each tool). `/mcp` serves each
    /// by its catalog name; one character's or one server's endpoint its own tools
    /// unprefixed (a character's servers' tools keep their catalog names, as its model is
    /// offered them). A name met twice (stem `a` with tool `b_c` and stem `a_b` with tool
    /// `c`; a character and a server of one name) names no tool: both are left out with a
    /// warning, since either choice would run a tool the client did not mean.
    fn entries(&self, request: &Extensions) -> Vec<Entry> {
        let caller = request.get::<Caller>();
        let scope = request.get::<Scope>();
        let filter = caller.map_or_else(ToolFilter::all, Caller::tool_filter);
        // Over stdio the catalog is the characters' alone.
        let servers = caller.map_or(&[][..], |caller| {
            caller.snapshot().pipeline.tool_servers.all()
        });
        let catalog = Catalog::new(servers);
        let loaded = self.registry.current();
        let mut characters: Vec<(CharacterId, &Arc<Character>)> = loaded
            .characters
            .iter()
            .filter(|character| match scope {
                Some(Scope::Character(name)) => character.is_named(name),
                _ => true,
            })
            .filter_map(|character| {
                let id = CharacterId::of(character)?;
                caller
                    .is_none_or(|caller| caller.may_use(id.as_str()))
                    .then_some((id, character))
            })
            .collect();
        characters.sort_by(|a, b| a.0.name().cmp(b.0.name()));
        let listed = match scope {
            None => {
                let characters: Vec<Arc<Character>> = characters
                    .into_iter()
                    .map(|(_, character)| Arc::clone(character))
                    .collect();
                catalog.list(catalog::Scope::All(&characters), &filter)
            }
            // `/mcp/characters/{name}` serves one character: the first by stem.
            Some(Scope::Character(_)) => {
                characters.first().map_or_else(Vec::new, |(_, character)| {
                    catalog.list(catalog::Scope::Character(character), &filter)
                })
            }
            Some(Scope::Server(name)) => servers
                .iter()
                .find(|server| server.name == *name)
                .map_or_else(Vec::new, |server| {
                    catalog.list(catalog::Scope::Server(server), &filter)
                }),
        };
        let name = |entry: &catalog::Entry| match (scope, &entry.source) {
            (None, _) | (Some(Scope::Character(_)), Source::Server { .. }) => {
                entry.catalog_name.clone()
            }
            (Some(_), source) => source.tool().to_owned(),
        };
        // Over HTTP, names meet as served (shortened): a tool that is literally another's
        // shortened name is no less ambiguous.
        let max = caller.map(|caller| caller.snapshot().config.mcp_tool_name_max_chars);
        let served = |entry: &catalog::Entry| match max {
            Some(max) => names::served(&name(entry), max).into_owned(),
            None => name(entry),
        };
        catalog::apart(listed, served)
            .into_iter()
            .map(|entry| Entry {
                name: name(&entry),
                source: entry.source,
            })
            .collect()
    }
}

/// MCP's structured results are objects; a character's result is text, so its declared
/// schema is served as the schema of `{"result": …}`, the shape SDKs give non-object
/// results.
fn wrapped(schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    })
}

/// Bumps `to` whenever `from` changes, for as long as `from`'s sender lives.
fn forward(mut from: watch::Receiver<u64>, to: watch::Sender<u64>) {
    tokio::spawn(async move {
        while from.changed().await.is_ok() {
            to.send_modify(|version| *version += 1);
        }
    });
}

/// Bumps `to` whenever a server's tool list may have changed, or a reload swapped the
/// configuration (servers added or removed), for as long as the gateway runs.
fn follow_servers(mut configurations: watch::Receiver<Arc<Snapshot>>, to: watch::Sender<u64>) {
    tokio::spawn(async move {
        loop {
            let mut lists: Vec<watch::Receiver<u64>> = configurations
                .borrow_and_update()
                .pipeline
                .tool_servers
                .all()
                .iter()
                .map(|server| server.changes())
                .collect();
            // A list whose server is gone waits for the next swap instead.
            let mut waits: Vec<BoxFuture<'_, ()>> = lists
                .iter_mut()
                .map(|list| -> BoxFuture<'_, ()> {
                    Box::pin(async move {
                        if list.changed().await.is_err() {
                            futures::future::pending::<()>().await;
                        }
                    })
                })
                .collect();
            waits.push(Box::pin(futures::future::pending()));
            let any_list = futures::future::select_all(waits);
            tokio::select! {
                swapped = configurations.changed() => {
                    if swapped.is_err() {
                        break;
                    }
                }
                _ = any_list => {}
            }
            to.send_modify(|version| *version += 1);
        }
    });
}

impl ToolCatalog for McpCatalog {
    fn tools(&self, request: &Extensions) -> Vec<CatalogTool> {
        self.entries(request)
            .into_iter()
            .filter_map(|entry| match entry.source {
                Source::Character { character, tool } => {
                    let function = &character.tools().get(&tool)?.definition().function;
                    Some(CatalogTool {
                        name: entry.name,
                        description: function.description.clone(),
                        input_schema: function.parameters.clone(),
                        output_schema: function.output_schema.clone().map(wrapped),
                    })
                }
                Source::Server { tool, .. } => Some(CatalogTool {
                    name: entry.name,
                    description: tool.description,
                    input_schema: Some(tool.input_schema),
                    output_schema: tool.output_schema,
                }),
            })
            .collect()
    }

    fn call(
        &self,
        request: &Extensions,
        name: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, Result<ToolOutput, CallError>> {
        let found = self
            .entries(request)
            .into_iter()
            .find(|entry| entry.name == name);
        let Some(Entry { source, .. }) = found else {
            let unknown = CallError::UnknownTool(name.to_owned());
            return Box::pin(async move { Err(unknown) });
        };
        // The request's log line, as the characters API writes one for each call.
        let log = request.get::<RequestId>().map(|RequestId(id)| {
            let log = RequestLog::new(id.clone(), "mcp_tool");
            match request.get::<Caller>() {
                Some(caller) => log.with_caller(caller),
                None => log,
            }
        });
        let arguments = Value::Object(arguments).to_string();
        match source {
            Source::Character { character, tool } => {
                let structured = character
                    .tools()
                    .get(&tool)
                    .is_some_and(|compiled| compiled.definition().function.output_schema.is_some());
                let call = ToolCall {
                    id: "call_mcp".to_owned(),
                    name: tool,
                    arguments,
                };
                Box::pin(async move {
                    let route = Target::character_label(&character);
                    let outcome = character.run_tool(&call).await;
                    let status = match &outcome {
                        Ok(_) => StatusCode::OK,
                        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
                    };
                    if let Some(log) = &log {
                        log.finish(&route, status, Tally::default(), false);
                    }
                    let result =
                        outcome.map_err(|error| CallError::Unavailable(error.to_string()))?;
                    Ok(ToolOutput {
                        structured: (structured && !result.is_error)
                            .then(|| json!({"result": result.content})),
                        text: result.content,
                        is_error: result.is_error,
                    })
                })
            }
            Source::Server { server, tool } => {
                // Under the MCP request's span, wherever the call is polled: its
                // `execute_tool` span belongs beneath it.
                let request = tracing::Span::current();
                Box::pin(async move {
                    let reply = server
                        .call(&tool.name, &arguments, None, None)
                        .instrument(request)
                        .await;
                    if let Some(log) = &log {
                        log.finish(
                            &format!("mcp/{}", server.name),
                            StatusCode::OK,
                            Tally::default(),
                            false,
                        );
                    }
                    Ok(ToolOutput {
                        structured: reply.structured,
                        text: reply.text,
                        is_error: reply.is_error,
                    })
                })
            }
        }
    }

    fn changes(&self) -> watch::Receiver<u64> {
        let mut following = self
            .following
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*following && tokio::runtime::Handle::try_current().is_ok() {
            forward(self.registry.subscribe(), self.changes.clone());
            if let Some(configurations) = &self.configurations {
                follow_servers(configurations.clone(), self.changes.clone());
            }
            *following = true;
        }
        self.changes.subscribe()
    }
}

/// What the gateway says of itself to MCP clients, naming tools within `max_name_chars`.
pub fn server_options(max_name_chars: usize) -> ServerOptions {
    ServerOptions {
        name: "switchboard".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        instructions: Some(
            "Tools of Switchboard characters, run in the gateway's sandbox under each character's deadline."
                .to_owned(),
        ),
        max_name_chars,
    }
}

/// Characters' tools over MCP. Errors answered before the MCP endpoint runs (401, 429)
/// keep OpenAI's HTTP shape: MCP clients read the status and `WWW-Authenticate`.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes,
    owns: |path| path == "/mcp" || path.starts_with("/mcp/"),
    error: axum::response::IntoResponse::into_response,
};

/// `/mcp` and `/mcp/characters/{name}`, for the gateway's router (behind its access layer,
/// which puts the caller in the request).
pub fn routes(state: &AppState) -> Router<AppState> {
    let snapshot = state.snapshot();
    let config = &snapshot.config;
    let tools = McpCatalog::serving(Arc::clone(&state.characters), state.configurations());
    let server = McpServer::new(
        Arc::new(tools),
        server_options(config.mcp_tool_name_max_chars),
    );
    let endpoint =
        HttpEndpoint::with_sessions(server, http_options(config), session_options(config));
    let scoped = endpoint.clone();
    let servers = endpoint.clone();
    Router::new()
        .route(
            "/mcp",
            any(move |request: Request| answer(endpoint.clone(), request)),
        )
        .route(
            "/mcp/characters/{name}",
            any(move |Path(name): Path<String>, mut request: Request| {
                request.extensions_mut().insert(Scope::Character(name));
                answer(scoped.clone(), request)
            }),
        )
        .route(
            "/mcp/servers/{name}",
            any(move |Path(name): Path<String>, mut request: Request| {
                request.extensions_mut().insert(Scope::Server(name));
                answer(servers.clone(), request)
            }),
        )
}

/// Answers one MCP request: a session it opens is its key's, and only its key may use it.
async fn answer(
    endpoint: HttpEndpoint<McpCatalog>,
    mut request: Request,
) -> axum::http::Response<Body> {
    let owner = request
        .extensions()
        .get::<Caller>()
        .and_then(Caller::name)
        .map(|name| SessionOwner(name.into()));
    if let Some(owner) = owner {
        request.extensions_mut().insert(owner);
    }
    endpoint.handle(request).await.map(Body::new)
}

/// Loopback gateways accept the loopback names in `Host` (against DNS rebinding) and pages
/// of loopback origins; one listening beyond loopback takes any `Host` (its public names
/// are not known here) and refuses every browser origin. Non-browser clients send no
/// `Origin`.
fn http_options(config: &Config) -> HttpOptions {
    let (allowed_hosts, allowed_origins) = if config.listen.ip().is_loopback() {
        (
            vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
            ],
            vec![
                "http://localhost:*".to_owned(),
                "http://127.0.0.1:*".to_owned(),
                "http://[::1]:*".to_owned(),
            ],
        )
    } else {
        (Vec::new(), Vec::new())
    };
    HttpOptions {
        allowed_hosts,
        allowed_origins,
        max_body_bytes: config.max_body_bytes,
    }
}

/// Sessions bounded as configured; a session's GET stream that carries nothing ends as an
/// idle connection would. With `state`, sessions are shared through Redis by every replica.
fn session_options(config: &Config) -> SessionOptions {
    let idle = Duration::from_secs(config.mcp_session_idle_timeout_secs);
    // The URL was checked with the rest of the configuration.
    let shared = config
        .state
        .as_deref()
        .and_then(|url| RedisSessions::new(url).ok())
        .map(|directory| SharedSessions {
            directory: Arc::new(directory),
            idle,
        });
    SessionOptions {
        limits: SessionLimits {
            overall: config.mcp_max_sessions,
            per_owner: config.mcp_max_sessions_per_key,
        },
        idle,
        stream_idle: Duration::from_secs(config.idle_timeout_secs),
        shared,
    }
}
