//! The tools the gateway runs itself inside one request: the MCP servers the request names
//! (OpenAI's `mcp` tool, Anthropic's MCP connector) and those its route offers on every
//! request (`mcp_servers`), or a character's toolbox, resolved once into the tools offered
//! to the model and how each call reaches what runs it.
//!
//! Only servers the gateway knows run: `[[mcp_server]]` entries, named by label or by URL
//! (theirs, or the gateway's own `/mcp/servers/{name}` for one), and URLs the operator
//! allows in `mcp_allowed_urls`. Any other URL is refused: a gateway that fetched whatever
//! URL a request names would reach into the network behind it for anyone. A request's own
//! credentials go only to a server it named by an allowed URL.

pub use crate::tool_servers::ToolFilter;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use switchboard_runtime::ToolExecutor;
use switchboard_tools::names::{self, MODEL_MAX_CHARS};
use switchboard_tools::{CallError, ToolCall, ToolDefinition, ToolResult};
use switchboard_wire::mcp::McpServerRequest;

use crate::allowed_urls;
use crate::catalog::{Catalog, Scope, Source};
use crate::error::PipelineError;
use crate::output::{ListedTool, Listing, ToolSource};
use crate::tool_search::ToolSearch;
use crate::tool_servers::{CharacterToolbox, ToolServer, ToolServers};
use switchboard_upstream::ToolLoopSettings;

/// How long a request waits for the servers it named by URL to connect, all together (and
/// never past the request's own timeout).
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// The most servers one request may name by URL: each is a connection made for it alone.
pub const MAX_URL_SERVERS: usize = 8;

/// The gateway-run tools of one request, and the bounds of running them.
#[derive(Debug, Clone)]
pub struct GatewayTools {
    pub tools: Vec<GatewayTool>,
    /// The tools of each server the request named, in its order, for APIs that show the
    /// listing.
    pub listings: Vec<Arc<Listing>>,
    /// Calls the client answered an approval request for, to act on before the model's
    /// first answer.
    pub approvals: Vec<ApprovalAnswer>,
    pub max_rounds: usize,
    /// At the round bound the model is asked once more without tools, to answer in words,
    /// instead of the answer ending with `ToolLimit`: a character's turn ends in its words.
    pub answer_at_bound: bool,
    /// Calls in all (OpenAI's `max_tool_calls`); rounds alone bound them when absent.
    pub max_calls: Option<usize>,
    pub max_tool_time: Duration,
    /// Bytes the rounds may add to the conversation (the route's
    /// `max_tool_conversation_bytes`).
    pub max_conversation_bytes: usize,
    /// Calls one round may run; each past it is answered with an error, unrun.
    pub max_calls_per_round: usize,
    /// Calls of the request running at once; the rest wait their turn.
    pub max_concurrent_calls: usize,
    /// What answers a call to a tool no one offered when the client offered no tools of
    /// its own, so that the call has nowhere else to go: a character's toolbox, which says
    /// why (a server that was down, no such tool); otherwise the model reads that there is
    /// no such tool.
    pub strays: Runner,
    /// The request's tool search over its deferred tools, which the loop runs itself.
    pub search: Option<Arc<ToolSearch>>,
}

/// One tool the gateway runs.
#[derive(Debug, Clone)]
pub struct GatewayTool {
    /// The name the model calls it by.
    pub name: String,
    /// The MCP server it lives on; none for a character's own tools.
    pub source: Option<ToolSource>,
    pub runner: Runner,
    /// Calls wait for the client's approval.
    pub needs_approval: bool,
    /// Offered only once the request's tool search finds it (`defer_loading`).
    pub deferred: bool,
    pub definition: ToolDefinition,
}

/// What runs a call. Each checks the call's arguments against the tool's schema and
/// answers every failure with an `Error: …` result for the model.
#[derive(Clone)]
pub enum Runner {
    /// An MCP server, called by its own name for the tool.
    Server {
        server: Arc<ToolServer>,
        tool: String,
    },
    /// A tool source of its own, called by the name the model used: a character's toolbox
    /// (its sandboxed tools and its MCP servers' tools).
    Source(Arc<dyn ToolExecutor>),
    /// Nothing: the model called a tool no one offered.
    Unknown,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Server { server, tool } => f
                .debug_struct("Server")
                .field("server", &server.name)
                .field("tool", tool)
                .finish(),
            Self::Source(_) => f.write_str("Source"),
            Self::Unknown => f.write_str("Unknown"),
        }
    }
}

impl Runner {
    /// Runs one call to the end; never fails (see [`Runner`]).
    pub async fn run(&self, call: &ToolCall) -> ToolResult {
        match self {
            Self::Server { server, tool } => {
                let reply = server
                    .call(tool, &call.arguments, Some(&call.id), None)
                    .await;
                ToolResult {
                    call_id: call.id.clone(),
                    content: reply.text,
                    is_error: reply.is_error,
                }
            }
            Self::Source(source) => source.call(call).await,
            Self::Unknown => ToolResult {
                call_id: call.id.clone(),
                content: CallError::UnknownTool(call.name.clone()).to_string(),
                is_error: true,
            },
        }
    }
}

/// The client's answer to an approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAnswer {
    /// The approval request's id, which the call's result answers.
    pub id: String,
    pub label: String,
    pub tool: String,
    pub arguments: String,
    pub approve: bool,
    pub reason: Option<String>,
}

/// What a request asks to run, and what limits it.
pub struct Asked<'a> {
    pub servers: &'a [McpServerRequest],
    /// Names the request's own tools take.
    pub taken: HashSet<String>,
    /// Which tools the caller's key may use, by their catalog names (`{server}_{tool}`,
    /// the server by its configured name or, for one the request connected, its label).
    pub filter: ToolFilter,
    /// OpenAI's `max_tool_calls`.
    pub max_calls: Option<usize>,
}

impl std::fmt::Debug for Asked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asked")
            .field("servers", &self.servers)
            .field("max_calls", &self.max_calls)
            .finish_non_exhaustive()
    }
}

impl GatewayTools {
    /// The tool the model calls `name`, when the gateway runs it.
    pub fn get(&self, name: &str) -> Option<&GatewayTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// Whether the gateway answers calls to `name`: one of its tools, or the tool search.
    pub fn runs(&self, name: &str) -> bool {
        self.get(name).is_some()
            || self
                .search
                .as_ref()
                .is_some_and(|search| search.name == name)
    }

    /// The tool a server (by the request's label) calls `tool`.
    pub fn find(&self, label: &str, tool: &str) -> Option<&GatewayTool> {
        self.tools.iter().find(|known| {
            known
                .source
                .as_ref()
                .is_some_and(|source| source.server == label && source.tool == tool)
        })
    }

    /// A character's tools: its toolbox runs every call, and its turn ends in words.
    pub fn character(toolbox: Arc<CharacterToolbox>, route: &ToolLoopSettings) -> Self {
        let runner = Runner::Source(Arc::clone(&toolbox) as Arc<dyn ToolExecutor>);
        let strays = runner.clone();
        let tools = toolbox
            .definitions()
            .into_iter()
            .map(|definition| GatewayTool {
                name: definition.name().to_owned(),
                source: toolbox
                    .source(definition.name())
                    .map(|(server, tool)| ToolSource { server, tool }),
                runner: runner.clone(),
                needs_approval: false,
                deferred: false,
                definition,
            })
            .collect();
        Self {
            tools,
            listings: Vec::new(),
            approvals: Vec::new(),
            max_rounds: route.max_rounds,
            answer_at_bound: true,
            max_calls: None,
            max_tool_time: route.max_tool_time,
            max_conversation_bytes: route.max_conversation_bytes,
            max_calls_per_round: route.max_calls_per_round,
            max_concurrent_calls: route.max_concurrent_calls,
            strays,
            search: None,
        }
    }

    /// `tools` (the request's MCP servers' tools, if any) with a tool search: a request
    /// that names no server runs the loop for the search alone, under its route's bounds
    /// (`tool_search_max_results` where the API sets no number of its own). The servers'
    /// deferred tools join the search's, after the request's own.
    pub fn with_search(
        tools: Option<Self>,
        route: &ToolLoopSettings,
        mut search: ToolSearch,
    ) -> Self {
        let deferred: Vec<ToolDefinition> = tools
            .iter()
            .flat_map(|tools| &tools.tools)
            .filter(|tool| tool.deferred)
            .map(|tool| tool.definition.clone())
            .collect();
        search.defer(deferred);
        search.max_results.get_or_insert(route.search_max_results);
        let mut tools = tools.unwrap_or_else(|| Self {
            tools: Vec::new(),
            listings: Vec::new(),
            approvals: Vec::new(),
            max_rounds: route.max_rounds,
            answer_at_bound: false,
            max_calls: None,
            max_tool_time: route.max_tool_time,
            max_conversation_bytes: route.max_conversation_bytes,
            max_calls_per_round: route.max_calls_per_round,
            max_concurrent_calls: route.max_concurrent_calls,
            strays: Runner::Unknown,
            search: None,
        });
        tools.search = Some(Arc::new(search));
        tools
    }

    /// The tools offered to the model from the start: all but the deferred ones, which
    /// the search offers once it finds them.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools
            .iter()
            .filter(|tool| !tool.deferred)
            .map(|tool| &tool.definition)
    }

    /// What the model is offered from the start: the client's `tools`, then the gateway's
    /// own that wait for no search, then the search tool.
    pub fn offered_beside(&self, client: &[ToolDefinition]) -> Vec<ToolDefinition> {
        let search = self.search.as_ref().map(|search| search.definition());
        client
            .iter()
            .chain(self.definitions())
            .cloned()
            .chain(search)
            .collect()
    }

    /// Leaves the tools `deferred` picks to the request's search as well (a Responses
    /// `mcp` server marked `defer_loading`); nothing without a search.
    pub fn defer(&mut self, deferred: impl Fn(&GatewayTool) -> bool) {
        let Some(search) = &mut self.search else {
            return;
        };
        let mut more = Vec::new();
        for tool in &mut self.tools {
            if !tool.deferred && deferred(tool) {
                tool.deferred = true;
                more.push(tool.definition.clone());
            }
        }
        Arc::make_mut(search).defer(more);
    }

    /// The servers the request names and those `route` offers, resolved; `None` when
    /// there are none. Servers named by URLs the operator allows (at most
    /// [`MAX_URL_SERVERS`]) are connected for this request (and closed with it), all at
    /// once, waited for together within `request_timeout`.
    pub async fn resolve(
        servers: &ToolServers,
        allowed_urls: &[String],
        route: &ToolLoopSettings,
        asked: Asked<'_>,
        request_timeout: Duration,
    ) -> Result<Option<Self>, PipelineError> {
        if asked.servers.is_empty() && route.servers.is_empty() {
            return Ok(None);
        }
        let mut resolved = Self {
            tools: Vec::new(),
            listings: Vec::new(),
            approvals: Vec::new(),
            max_rounds: route.max_rounds,
            answer_at_bound: false,
            max_calls: asked.max_calls,
            max_tool_time: route.max_tool_time,
            max_conversation_bytes: route.max_conversation_bytes,
            max_calls_per_round: route.max_calls_per_round,
            max_concurrent_calls: route.max_concurrent_calls,
            strays: Runner::Unknown,
            search: None,
        };
        let mut taken = asked.taken;
        let mut found = Vec::with_capacity(asked.servers.len());
        for (index, request) in asked.servers.iter().enumerate() {
            if asked.servers[..index]
                .iter()
                .any(|other| other.label == request.label)
            {
                return Err(invalid(
                    &request.path,
                    format!("two MCP servers are labelled \"{}\"", request.label),
                ));
            }
            found.push(configured(servers, request)?.cloned());
        }
        // Counted before any is connected: past the bound the gateway reaches none.
        if let Some(past) = asked
            .servers
            .iter()
            .zip(&found)
            .filter(|(_, server)| server.is_none())
            .nth(MAX_URL_SERVERS)
        {
            return Err(invalid(
                &past.0.path,
                format!("a request may name at most {MAX_URL_SERVERS} MCP servers by URL"),
            ));
        }
        // Each URL is checked (its name resolved, under its own wait) side by side too.
        let named: Vec<(Arc<ToolServer>, bool)> =
            futures::future::try_join_all(asked.servers.iter().zip(found).map(
                |(request, server)| async move {
                    Ok::<_, PipelineError>(match server {
                        Some(server) => (server, false),
                        None => (connect(request, allowed_urls).await?, true),
                    })
                },
            ))
            .await?;
        // They connect in the background, side by side: one wait covers them all. One that
        // has not connected by then is listed with why.
        let waited_until = tokio::time::Instant::now() + CONNECT_WAIT.min(request_timeout);
        for (server, _) in named.iter().filter(|(_, dynamic)| *dynamic) {
            let _ = tokio::time::timeout_at(waited_until, server.ready()).await;
        }
        let catalog = Catalog::new(servers.all());
        for ((server, _), request) in named.iter().zip(asked.servers) {
            let listing = resolved.offer(catalog, server, request, &mut taken, &asked.filter);
            resolved.listings.push(Arc::new(listing));
        }
        for name in &route.servers {
            // Checked against the configuration when it was loaded.
            let Some(server) = servers.get(name) else {
                continue;
            };
            if named.iter().any(|(known, _)| Arc::ptr_eq(known, server)) {
                continue;
            }
            let request = McpServerRequest {
                label: name.clone(),
                url: None,
                description: None,
                allowed_tools: None,
                excluded_tools: Vec::new(),
                deferred: Default::default(),
                read_only: false,
                approval: switchboard_wire::mcp::Approval::Never,
                headers: Vec::new(),
                path: "mcp_servers".into(),
            };
            resolved.offer(catalog, server, &request, &mut taken, &asked.filter);
        }
        Ok(Some(resolved))
    }

    /// Adds what `server` offers under `request`'s filters and the key's (the catalog's
    /// part for the server), and returns its listing.
    fn offer(
        &mut self,
        catalog: Catalog<'_>,
        server: &Arc<ToolServer>,
        request: &McpServerRequest,
        taken: &mut HashSet<String>,
        filter: &ToolFilter,
    ) -> Listing {
        let mut listing = Listing {
            label: request.label.clone(),
            tools: Vec::new(),
            error: None,
        };
        if server.offered().is_empty()
            && let Some(why) = server.unavailable()
        {
            listing.error = Some(why);
            return listing;
        }
        // Keys name a configured server's tools as `/mcp` does; a request's own server by
        // the label the request gave it (its name).
        for entry in catalog.list(Scope::Server(server), filter) {
            let Source::Server { tool, .. } = entry.source else {
                continue;
            };
            let read_only = tool.read_only();
            if !request.allows(&tool.name, read_only) {
                continue;
            }
            let name = if names::fits(&tool.name, MODEL_MAX_CHARS) && !taken.contains(&tool.name) {
                tool.name.clone()
            } else {
                names::served(&format!("{}_{}", request.label, tool.name), MODEL_MAX_CHARS)
                    .into_owned()
            };
            if !taken.insert(name.clone()) {
                // Only a name the request itself gave twice (a tool of its own, a label)
                // gets here: configured servers' names cannot meet (see `check_servers`).
                tracing::warn!(mcp_server = %request.label, tool = %tool.name, name = %name, "tool left out: its name is taken in this request");
                continue;
            }
            let mut definition =
                ToolDefinition::function(name.clone(), String::new(), tool.input_schema.clone());
            definition.function.description = tool.description.clone();
            self.tools.push(GatewayTool {
                name,
                source: Some(ToolSource {
                    server: request.label.clone(),
                    tool: tool.name.clone(),
                }),
                runner: Runner::Server {
                    server: Arc::clone(server),
                    tool: tool.name.clone(),
                },
                needs_approval: request.approval.required(&tool.name, read_only),
                deferred: request.deferred.defers(&tool.name),
                definition,
            });
            listing.tools.push(ListedTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
                annotations: tool.annotations.clone(),
            });
        }
        listing
    }
}

/// The configured server `request` names by label or URL; `None` when it names none.
fn configured<'a>(
    servers: &'a ToolServers,
    request: &McpServerRequest,
) -> Result<Option<&'a Arc<ToolServer>>, PipelineError> {
    let by_label = servers.get(&request.label);
    let by_url = request.url.as_deref().and_then(|url| {
        servers.all().iter().find(|server| {
            server.url() == Some(url) || gateway_path(url) == Some(server.name.as_str())
        })
    });
    match (by_label, by_url) {
        (Some(label), Some(url)) if !Arc::ptr_eq(label, url) => Err(invalid(
            &request.path,
            format!(
                "the label \"{}\" names the MCP server {} and the URL names {}; name one server",
                request.label, label.name, url.name
            ),
        )),
        // A label of one server with a URL that is none of them: the client means a
        // server somewhere else, not the one configured under that name.
        (Some(server), None) if request.url.is_some() => Err(invalid(
            &request.path,
            format!(
                "the label \"{}\" names the MCP server {} but the URL is not its URL; leave the URL out or give its own",
                request.label, server.name
            ),
        )),
        (Some(server), _) | (None, Some(server)) => Ok(Some(server)),
        (None, None) => Ok(None),
    }
}

/// The server name in the gateway's own `…/mcp/servers/{name}` URL.
fn gateway_path(url: &str) -> Option<&str> {
    let path = url.split_once("://")?.1;
    let path = &path[path.find('/')?..];
    let path = path.split(['?', '#']).next()?.trim_end_matches('/');
    path.strip_prefix("/mcp/servers/")
        .filter(|name| !name.is_empty() && !name.contains('/'))
}

/// A server the request names by a URL the operator allows, connecting for the request.
async fn connect(
    request: &McpServerRequest,
    allowed_urls: &[String],
) -> Result<Arc<ToolServer>, PipelineError> {
    let Some(url) = &request.url else {
        return Err(invalid(
            &request.path,
            format!(
                "no MCP server here is named \"{}\"; name one of the gateway's MCP servers",
                request.label
            ),
        ));
    };
    // The URL and addresses as checked are the ones connected to.
    let allowed = allowed_urls::check(url, allowed_urls, CONNECT_WAIT)
        .await
        .map_err(|refused| invalid(&request.path, refused.to_string()))?;
    // It connects in the background; the caller waits for every such server at once.
    ToolServer::for_request(&request.label, allowed, &request.headers)
        .map_err(|error| invalid(&request.path, error.to_string()))
}

fn invalid(path: &str, message: String) -> PipelineError {
    PipelineError::invalid(format!("{path}: {message}"), Some(path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateways_own_server_urls_name_their_server() {
        assert_eq!(
            gateway_path("http://127.0.0.1:8080/mcp/servers/fs"),
            Some("fs")
        );
        assert_eq!(
            gateway_path("https://gw.example/mcp/servers/fs/"),
            Some("fs")
        );
        assert_eq!(gateway_path("http://h/mcp/servers/"), None);
        assert_eq!(gateway_path("http://h/mcp"), None);
        assert_eq!(gateway_path("http://h/mcp/servers/a/b"), None);
    }

    #[test]
    fn a_search_alone_is_offered_beside_the_clients_tools_and_hides_the_deferred() {
        let tool = |name: &str| ToolDefinition {
            kind: switchboard_tools::ToolKind::Function,
            function: switchboard_tools::FunctionDefinition {
                name: name.into(),
                description: None,
                parameters: Some(serde_json::json!({"type": "object"})),
                strict: None,
                output_schema: None,
            },
        };
        let route = ToolLoopSettings {
            servers: Vec::new(),
            max_rounds: 4,
            max_tool_time: std::time::Duration::from_secs(1),
            max_conversation_bytes: 1 << 20,
            max_calls_per_round: 4,
            max_concurrent_calls: 4,
            search_max_results: 5,
        };
        let search = ToolSearch::new(
            "tool_search",
            crate::tool_search::SearchMode::Bm25,
            None,
            vec![tool("archive")],
        );
        let tools = GatewayTools::with_search(None, &route, search);
        let offered = tools.offered_beside(&[tool("list")]);
        let names: Vec<&str> = offered.iter().map(|tool| tool.name()).collect();
        assert_eq!(names, ["list", "tool_search"]);
    }
}
