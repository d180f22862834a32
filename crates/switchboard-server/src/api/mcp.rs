//! Characters' tools over MCP: the catalog the `switchboard-mcp` server serves, at `/mcp`
//! (every character's tools, named `{file stem}_{tool}`) and `/mcp/characters/{name}` (one
//! character's, unprefixed), and over stdio (`switchboard mcp`). A call runs exactly as the
//! characters API runs it ([`Character::run_tool`]). Over HTTP, the caller's key decides
//! which characters' tools it sees and may call; one beyond its reach is an unknown tool.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request};
use axum::http::{Extensions, StatusCode};
use axum::routing::any;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use switchboard_characters::{Character, CharacterRegistry};
use switchboard_mcp::{
    CallError, CatalogTool, HttpEndpoint, HttpOptions, McpServer, ServerOptions, ToolCatalog,
    ToolOutput,
};
use switchboard_tools::ToolCall;
use tokio::sync::watch;

use super::RequestId;
use super::log::{RequestLog, Tally};
use crate::api::caller::Caller;
use crate::pipeline::{CHARACTER_PREFIX, character_id};
use crate::state::AppState;

/// The characters' tools as one catalog.
#[derive(Debug)]
pub struct CharacterTools {
    registry: Arc<CharacterRegistry>,
}

/// The one character a request's URL names (`/mcp/characters/{name}`): its tools only,
/// without the prefix.
#[derive(Debug, Clone)]
struct Scope(String);

/// A tool as one request sees it: the name it is offered under, and what runs it.
struct Entry {
    name: String,
    character: Arc<Character>,
    tool: String,
}

impl CharacterTools {
    pub fn new(registry: Arc<CharacterRegistry>) -> Self {
        Self { registry }
    }

    /// The tools `request` may see, by character file stem then in the character's order;
    /// a name met twice (stem `a` with tool `b_c`, stem `a_b` with tool `c`) is the first's.
    fn entries(&self, request: &Extensions) -> Vec<Entry> {
        let caller = request.get::<Caller>();
        let scope = request.get::<Scope>();
        let loaded = self.registry.current();
        let mut characters: Vec<(String, &Arc<Character>)> = loaded
            .characters
            .iter()
            .filter(|character| match scope {
                Some(Scope(name)) => character.is_named(name),
                None => true,
            })
            .filter_map(|character| {
                let id = character_id(character)?;
                caller
                    .is_none_or(|caller| caller.may_use(&id))
                    .then(|| (id[CHARACTER_PREFIX.len()..].to_owned(), character))
            })
            .collect();
        characters.sort_by(|a, b| a.0.cmp(&b.0));
        // `/mcp/characters/{name}` serves one character: the first by stem.
        if scope.is_some() {
            characters.truncate(1);
        }
        let mut seen = HashSet::new();
        let mut entries = Vec::new();
        for (stem, character) in characters {
            for tool in character.tools().tools() {
                let name = match scope {
                    Some(_) => tool.name().to_owned(),
                    None => format!("{stem}_{}", tool.name()),
                };
                if seen.insert(name.clone()) {
                    entries.push(Entry {
                        name,
                        character: Arc::clone(character),
                        tool: tool.name().to_owned(),
                    });
                }
            }
        }
        entries
    }
}

impl ToolCatalog for CharacterTools {
    fn tools(&self, request: &Extensions) -> Vec<CatalogTool> {
        self.entries(request)
            .into_iter()
            .filter_map(|entry| {
                let function = &entry
                    .character
                    .tools()
                    .get(&entry.tool)?
                    .definition()
                    .function;
                Some(CatalogTool {
                    name: entry.name,
                    description: function.description.clone(),
                    input_schema: function.parameters.clone(),
                    result_schema: function.output_schema.clone(),
                })
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
        let Some(Entry {
            character, tool, ..
        }) = found
        else {
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
        let structured = character
            .tools()
            .get(&tool)
            .is_some_and(|compiled| compiled.definition().function.output_schema.is_some());
        let call = ToolCall {
            id: "call_mcp".to_owned(),
            name: tool,
            arguments: Value::Object(arguments).to_string(),
        };
        Box::pin(async move {
            let route = format!("{CHARACTER_PREFIX}{}", character.name());
            let outcome = character.run_tool(&call).await;
            let status = match &outcome {
                Ok(_) => StatusCode::OK,
                Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            if let Some(log) = &log {
                log.finish(&route, status, Tally::default(), false);
            }
            let result = outcome.map_err(|error| CallError::Unavailable(error.to_string()))?;
            Ok(ToolOutput {
                structured: structured && !result.is_error,
                text: result.content,
                is_error: result.is_error,
            })
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.registry.subscribe()
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
pub const FRONT_END: super::FrontEnd = super::FrontEnd {
    routes,
    owns: |path| path == "/mcp" || path.starts_with("/mcp/"),
    error: axum::response::IntoResponse::into_response,
};

/// `/mcp` and `/mcp/characters/{name}`, for the gateway's router (behind its access layer,
/// which puts the caller in the request).
pub fn routes(state: &AppState) -> Router<AppState> {
    let config = &state.live().config;
    let server = McpServer::new(
        Arc::new(CharacterTools::new(Arc::clone(&state.characters))),
        server_options(config.mcp_tool_name_max_chars),
    );
    let endpoint = HttpEndpoint::new(server, http_options(config.listen, config.max_body_bytes));
    let scoped = endpoint.clone();
    Router::new()
        .route(
            "/mcp",
            any(move |request: Request| {
                let endpoint = endpoint.clone();
                async move { endpoint.handle(request).await.map(Body::new) }
            }),
        )
        .route(
            "/mcp/characters/{name}",
            any(move |Path(name): Path<String>, mut request: Request| {
                let endpoint = scoped.clone();
                async move {
                    request.extensions_mut().insert(Scope(name));
                    endpoint.handle(request).await.map(Body::new)
                }
            }),
        )
}

/// Loopback gateways accept the loopback names in `Host` (against DNS rebinding) and pages
/// of loopback origins; one listening beyond loopback takes any `Host` (its public names
/// are not known here) and refuses every browser origin. Non-browser clients send no
/// `Origin`.
fn http_options(listen: SocketAddr, max_body_bytes: usize) -> HttpOptions {
    let (allowed_hosts, allowed_origins) = if listen.ip().is_loopback() {
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
        max_body_bytes,
    }
}
