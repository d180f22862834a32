//! The upstream MCP servers the configuration names, running: a tool source whose tools the
//! gateway serves at `/mcp` and offers to characters. Each server's tools are checked with
//! the gateway's own validator (arguments against `inputSchema` before a call leaves,
//! `structuredContent` against `outputSchema` when it comes back), and every call is
//! counted and timed per server and tool, under a span that carries the trace to the
//! server. What reaches the servers, and how, is `switchboard-mcp-client`'s business; this
//! part knows neither the configuration file (it is built from [`McpServerConfig`]s) nor
//! the front-ends.

mod filter;
mod settings;
mod toolbox;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::{Map, Value, json};
use switchboard_characters::Character;
use switchboard_mcp_client::{
    CallOutput, Transport, Upstream, UpstreamConfig, UpstreamError, UpstreamState, UpstreamTool,
};
use switchboard_tools::{CompiledTool, Profile, Toolset, schema_size};
use tracing::Instrument;
use tracing::field::Empty;

use crate::allowed_urls::Allowed;
use crate::tools::compile_off_serving_threads;
use crate::trace_context::{TARGET, current_traceparent};

pub use filter::ToolFilter;
pub use settings::{DEFAULT_MAX_CONCURRENT_CALLS, McpServerConfig, check_servers};
pub use toolbox::CharacterToolbox;

/// The `mcp_server` metric label of every server a request names by URL.
const REQUEST_NAMED_LABEL: &str = "request";

/// Why a server a request named is unavailable, as its client reads it: what the server
/// answered instead (an internal service's page, a credential it quoted) is for the
/// gateway's log alone.
const UNREACHABLE: &str =
    "it could not be reached, or did not answer as an MCP server (the gateway's log has why)";

/// The configured servers, in file order.
#[derive(Debug, Default)]
pub struct ToolServers {
    servers: Vec<Arc<ToolServer>>,
}

/// The most bytes one tool of a server may take as listed (its schemas, name and
/// description), checked before its schemas are compiled: compiling costs hundreds of
/// times a schema's size when combinators nest.
pub const MAX_TOOL_BYTES: usize = 256 * 1024;
/// The most subschemas one tool's schemas may hold together.
pub const MAX_TOOL_SUBSCHEMAS: usize = 10_000;
/// How deep `anyOf`, `allOf` and `oneOf` may nest in one of a tool's schemas.
pub const MAX_COMBINATOR_DEPTH: usize = 8;

/// One configured server and its connection.
#[derive(Debug)]
pub struct ToolServer {
    pub name: String,
    /// What it was started from, credentials read: a reload that changes neither keeps the
    /// running connection.
    started_from: UpstreamConfig,
    upstream: Upstream,
    /// Named by a request's URL rather than configured: the client chose its name and its
    /// address, so neither its name becomes a metric label nor its failures reach the
    /// client verbatim (an internal service's error page would).
    request_named: bool,
    /// Its tool list as offered, compiled for checks; rebuilt when the list changes.
    offered: Mutex<Option<(u64, Arc<[Offered]>)>>,
    /// `max_concurrent_calls` permits: a call to the server runs holding one.
    turns: tokio::sync::Semaphore,
    max_concurrent_calls: usize,
}

/// One tool of a server as the gateway offers it.
#[derive(Debug, Clone)]
pub struct Offered {
    /// The server's own name for it.
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    /// As the server sent them (`readOnlyHint`, …).
    pub annotations: Option<Value>,
    checks: CompiledTool,
}

impl Offered {
    /// Whether the server says the tool changes nothing (`readOnlyHint`).
    pub fn read_only(&self) -> bool {
        self.annotations
            .as_ref()
            .and_then(|annotations| annotations.get("readOnlyHint"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// A call's outcome as the model reads it: a tool's own failure, a bad argument and an
/// unreachable server alike are `Error: …` texts with `is_error`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    pub text: String,
    pub is_error: bool,
    /// `structuredContent`, checked against the tool's `outputSchema`.
    pub structured: Option<Value>,
}

impl ToolServers {
    /// Starts the servers `configs` name (reading `${VAR}`s through `env`); on a reload,
    /// a server whose settings did not change keeps `previous`'s running connection. Every
    /// problem is named.
    pub fn build(
        configs: &[McpServerConfig],
        env: &dyn Fn(&str) -> Option<String>,
        previous: Option<&ToolServers>,
    ) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut servers = Vec::with_capacity(configs.len());
        for (index, config) in configs.iter().enumerate() {
            let place = format!("mcp_server[{index}] (\"{}\")", config.name);
            let started_from = match config.upstream(env) {
                Ok(started_from) => started_from,
                Err(problem) => {
                    problems.push(format!("{place}.{problem}"));
                    continue;
                }
            };
            let kept = previous
                .and_then(|previous| previous.get(&config.name))
                .filter(|running| {
                    running.started_from == started_from
                        && running.max_concurrent_calls == config.max_concurrent_calls
                });
            if let Some(kept) = kept {
                servers.push(Arc::clone(kept));
                continue;
            }
            match Upstream::start(started_from.clone()) {
                Ok(upstream) => servers.push(Arc::new(ToolServer::new(
                    &config.name,
                    started_from,
                    upstream,
                    config.max_concurrent_calls,
                    false,
                ))),
                Err(error) => problems.push(format!("{place}: {error}")),
            }
        }
        if problems.is_empty() {
            Ok(Self { servers })
        } else {
            Err(problems)
        }
    }

    pub fn all(&self) -> &[Arc<ToolServer>] {
        &self.servers
    }

    pub fn get(&self, name: &str) -> Option<&Arc<ToolServer>> {
        self.servers.iter().find(|server| server.name == name)
    }

    /// The servers `character` declares in `MCP_SERVERS` that are configured.
    pub fn declared_by(&self, character: &Character) -> Vec<Arc<ToolServer>> {
        character
            .mcp_servers()
            .iter()
            .filter_map(|declared| self.get(&declared.server).cloned())
            .collect()
    }

    /// Each server's state, for `/healthz`.
    pub fn health(&self) -> Vec<Value> {
        self.servers
            .iter()
            .map(|server| {
                let state = server.upstream.state();
                let (label, detail) = match &state {
                    UpstreamState::Starting => ("starting", None),
                    UpstreamState::Ready {
                        protocol_version, ..
                    } => ("ready", Some(protocol_version.clone())),
                    UpstreamState::Down { error, .. } => ("down", Some(error.clone())),
                    UpstreamState::Restarting { last_error, .. } => {
                        ("restarting", Some(last_error.clone()))
                    }
                };
                let mut entry = json!({
                    "name": server.name,
                    "state": label,
                    "tools": server.offered().len(),
                });
                match (&state, detail) {
                    (UpstreamState::Ready { .. }, Some(version)) => {
                        entry["protocol_version"] = json!(version);
                    }
                    (_, Some(error)) => entry["error"] = json!(error),
                    (_, None) => {}
                }
                entry
            })
            .collect()
    }
}

impl ToolServer {
    /// A server a request names by URL (one the operator's `mcp_allowed_urls` let through),
    /// connected for that request alone, at the addresses checked, with the request's own
    /// headers; it closes when the request drops it. `label` is the request's name for it.
    pub fn for_request(
        label: &str,
        allowed: Allowed,
        headers: &[(String, String)],
    ) -> Result<Arc<Self>, UpstreamError> {
        let transport = Transport::Http {
            url: allowed.url.into(),
            headers: headers.iter().cloned().collect(),
        };
        let mut started_from = UpstreamConfig::new(label, transport);
        started_from.resolved = allowed.resolved;
        let upstream = Upstream::start(started_from.clone())?;
        Ok(Arc::new(Self::new(
            label,
            started_from,
            upstream,
            DEFAULT_MAX_CONCURRENT_CALLS,
            true,
        )))
    }

    fn new(
        name: &str,
        started_from: UpstreamConfig,
        upstream: Upstream,
        max_concurrent_calls: usize,
        request_named: bool,
    ) -> Self {
        Self {
            name: name.to_owned(),
            started_from,
            upstream,
            request_named,
            offered: Mutex::new(None),
            turns: tokio::sync::Semaphore::new(max_concurrent_calls),
            max_concurrent_calls,
        }
    }

    /// Its Streamable HTTP endpoint; `None` for a spawned server.
    pub fn url(&self) -> Option<&str> {
        match &self.started_from.transport {
            Transport::Http { url, .. } => Some(url),
            Transport::Stdio { .. } => None,
        }
    }

    /// Its tools as offered: those its allow-list lets through whose schemas the gateway
    /// can check (one it cannot, or one past the schema bounds, is left out with a
    /// warning: a model API would refuse it too, or compiling it would cost the gateway
    /// more than any tool is worth).
    pub fn offered(&self) -> Arc<[Offered]> {
        let version = *self.upstream.changes().borrow();
        if let Some((built, offered)) =
            &*self.offered.lock().unwrap_or_else(PoisonError::into_inner)
            && *built == version
        {
            return Arc::clone(offered);
        }
        // Built without the slot locked: a large list compiles off the serving threads,
        // and nothing else that asks (`/healthz`) waits on a lock meanwhile.
        let tools: Vec<UpstreamTool> = self
            .upstream
            .tools()
            .into_iter()
            .filter(|tool| match schema_bounds(tool) {
                Ok(()) => true,
                Err(why) => {
                    tracing::warn!(mcp_server = %self.name, tool = %tool.name, why, "tool left out: its schemas are past the bounds");
                    false
                }
            })
            .collect();
        let source_bytes = tools.iter().map(|tool| tool.listed_bytes).sum();
        let offered: Arc<[Offered]> = compile_off_serving_threads(source_bytes, || {
            tools
                .into_iter()
                .filter_map(|tool| self.compile(tool))
                .collect()
        });
        let mut slot = self.offered.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(built, _)| *built <= version) {
            *slot = Some((version, Arc::clone(&offered)));
        }
        offered
    }

    /// `tool` with its schemas compiled for checks; `None`, with a warning, when they
    /// cannot be.
    fn compile(&self, tool: UpstreamTool) -> Option<Offered> {
        let mut function = json!({"name": "tool", "parameters": tool.input_schema});
        if let Some(schema) = &tool.output_schema {
            function["output_schema"] = schema.clone();
        }
        let definition = json!([{"type": "function", "function": function}]);
        match Toolset::from_json(&definition, &Profile::api()) {
            Ok(compiled) => Some(Offered {
                checks: compiled.tools().first()?.clone(),
                name: tool.name,
                description: tool.description,
                input_schema: tool.input_schema,
                output_schema: tool.output_schema,
                annotations: tool.annotations,
            }),
            Err(problems) => {
                tracing::warn!(mcp_server = %self.name, tool = %tool.name, %problems, "tool left out: its schemas cannot be checked");
                None
            }
        }
    }

    /// Waits for the first connection to be made or to fail (a command that uses the
    /// server once, rather than a gateway that serves on regardless).
    pub async fn ready(&self) -> Result<(), UpstreamError> {
        self.upstream.ready().await
    }

    /// Why calls to it fail now, when they do: it is down, restarting, or not connected
    /// yet.
    pub fn unavailable(&self) -> Option<String> {
        let why = match self.upstream.state() {
            UpstreamState::Ready { .. } => return None,
            UpstreamState::Starting => "it has not connected yet".to_owned(),
            UpstreamState::Down { .. } | UpstreamState::Restarting { .. } if self.request_named => {
                UNREACHABLE.to_owned()
            }
            UpstreamState::Down { error, .. } => error,
            UpstreamState::Restarting { last_error, .. } => {
                format!("it is restarting after: {last_error}")
            }
        };
        Some(format!(
            "Error: {}",
            UpstreamError::Unavailable {
                name: self.name.clone(),
                why,
            }
        ))
    }

    /// Changes whenever the server's tool list may have changed.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.upstream.changes()
    }

    /// Runs `tool` (the server's own name) with the model's or client's raw `arguments`:
    /// checked first (a bad one never leaves the gateway), then called under the server's
    /// deadline. `call_id` is the model's id for the call, where a model made it;
    /// `character` names the character whose conversation made the call, for the metrics.
    ///
    /// The call is an `execute_tool` span exported beside a character's tool spans (same
    /// target, same attributes), and the server is sent that span's trace context, so its
    /// own spans continue the trace beneath it.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &str,
        call_id: Option<&str>,
        character: Option<&str>,
    ) -> ToolReply {
        let span = tracing::trace_span!(
            target: TARGET,
            "execute_tool",
            otel.name = %format_args!("execute_tool {tool}"),
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %tool,
            gen_ai.tool.call.id = call_id,
            switchboard.mcp_server = %self.name,
            switchboard.character = character,
            switchboard.tool.outcome = Empty,
            error.type = Empty,
        );
        let traceparent = span.in_scope(current_traceparent);
        let started = Instant::now();
        let (reply, outcome) = self
            .run(tool, arguments, traceparent.as_deref())
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            span.record("switchboard.tool.outcome", outcome);
            if outcome != "ok" {
                span.record("error.type", outcome);
                span.record("otel.status_code", "error");
            }
        }
        let labels = [
            ("mcp_server", self.metric_label().to_owned()),
            ("tool", tool.to_owned()),
            ("character", character.unwrap_or("-").to_owned()),
        ];
        metrics::counter!("gateway_mcp_tool_calls_total", &labels).increment(1);
        if outcome != "ok" {
            let mut labels = labels.to_vec();
            labels.push(("kind", outcome.to_owned()));
            metrics::counter!("gateway_mcp_tool_errors_total", &labels).increment(1);
        }
        metrics::histogram!("gateway_mcp_tool_latency_seconds", &labels)
            .record(started.elapsed().as_secs_f64());
        reply
    }

    /// Its name in metrics: servers a request names by URL count as one, `request`, since
    /// each client picks its own label.
    fn metric_label(&self) -> &str {
        if self.request_named {
            REQUEST_NAMED_LABEL
        } else {
            &self.name
        }
    }

    async fn run(
        &self,
        tool: &str,
        arguments: &str,
        traceparent: Option<&str>,
    ) -> (ToolReply, &'static str) {
        let offered = self.offered();
        let Some(found) = offered.iter().find(|offered| offered.name == tool) else {
            return (
                error_reply(format!(
                    "Error: tool server {} has no tool named {tool:?}",
                    self.name
                )),
                "unknown_tool",
            );
        };
        let arguments: Map<String, Value> = match found.checks.check_arguments(arguments) {
            Ok(arguments) => arguments,
            Err(error) => return (error_reply(error.to_string()), error.kind()),
        };
        // The wait for a turn has the call's own deadline; the call then has all of it.
        let wait = self.started_from.call_timeout;
        let Ok(Ok(_turn)) = tokio::time::timeout(wait, self.turns.acquire()).await else {
            return (
                error_reply(format!(
                    "Error: tool server {} is busy: {} calls ran on it for all of the {} s this call could wait (max_concurrent_calls)",
                    self.name,
                    self.max_concurrent_calls,
                    wait.as_secs_f64()
                )),
                "busy",
            );
        };
        match self.upstream.call(tool, arguments, traceparent).await {
            Ok(output) => self.reply(found, output),
            Err(UpstreamError::Unavailable { name, .. }) if self.request_named => (
                error_reply(format!(
                    "Error: {}",
                    UpstreamError::Unavailable {
                        name,
                        why: UNREACHABLE.to_owned(),
                    }
                )),
                "unavailable",
            ),
            Err(error) => {
                let kind = match &error {
                    UpstreamError::Unavailable { .. } => "unavailable",
                    UpstreamError::Timeout { .. } => "timeout",
                    UpstreamError::UnknownTool { .. } => "unknown_tool",
                    UpstreamError::Rejected { .. } => "rejected",
                    UpstreamError::Config { .. } => "config",
                };
                (error_reply(format!("Error: {error}")), kind)
            }
        }
    }

    fn reply(&self, tool: &Offered, output: CallOutput) -> (ToolReply, &'static str) {
        if output.is_error {
            let text = if output.text.starts_with("Error:") {
                output.text
            } else {
                format!("Error: {}", output.text)
            };
            return (error_reply(text), "tool_error");
        }
        if let Some(structured) = &output.structured
            && let Err(error) = tool.checks.check_result(structured)
        {
            return (error_reply(error.to_string()), error.kind());
        }
        // A tool with an `outputSchema` promises structured content, and clients hold it to
        // that (the Python SDK refuses a success without it): a result that lost it (past
        // `max_result_bytes`) or never had it is an error, its text kept for the reader.
        if tool.output_schema.is_some() && output.structured.is_none() {
            return (
                error_reply(format!(
                    "Error: Invalid result - {} declares an outputSchema but its result has no structured content (structured content past max_result_bytes, {} bytes, is left out); its text:\n{}",
                    tool.name, self.started_from.max_result_bytes, output.text
                )),
                "bad_return",
            );
        }
        (
            ToolReply {
                text: output.text,
                is_error: false,
                structured: output.structured,
            },
            "ok",
        )
    }
}

/// Whether `tool`'s schemas are within the bounds that keep compiling them cheap; why not.
fn schema_bounds(tool: &UpstreamTool) -> Result<(), String> {
    if tool.listed_bytes > MAX_TOOL_BYTES {
        return Err(format!(
            "it takes {} bytes as listed, at most {MAX_TOOL_BYTES} allowed",
            tool.listed_bytes
        ));
    }
    let mut subschemas = 0;
    for schema in std::iter::once(&tool.input_schema).chain(&tool.output_schema) {
        let size = schema_size(schema);
        if size.combinator_depth > MAX_COMBINATOR_DEPTH {
            return Err(format!(
                "anyOf/allOf/oneOf nest {} deep, at most {MAX_COMBINATOR_DEPTH} allowed",
                size.combinator_depth
            ));
        }
        subschemas += size.subschemas;
    }
    if subschemas > MAX_TOOL_SUBSCHEMAS {
        return Err(format!(
            "its schemas hold {subschemas} subschemas, at most {MAX_TOOL_SUBSCHEMAS} allowed"
        ));
    }
    Ok(())
}

fn error_reply(text: String) -> ToolReply {
    ToolReply {
        text,
        is_error: true,
        structured: None,
    }
}
