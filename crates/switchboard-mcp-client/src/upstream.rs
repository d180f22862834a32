//! One upstream MCP server as the gateway holds it: a connection kept by a supervisor task
//! (started, restarted with a growing back-off when it ends, its tool list refreshed when
//! the server says it changed), and calls made on it under a deadline.
//!
//! Calls never wait for a server that is down: they fail at once, so a model's turn is not
//! held up by a crashed tool server. They only wait for the very first connection, and for
//! the reopening of an HTTP session lost under them (then the call is retried once).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, MetaObject, PaginatedRequestParams, ProtocolVersion,
    RequestMetaObject, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};
use switchboard_wire::secrets::Secrets;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::config::{MAX_LIST_PAGES, Transport, UpstreamConfig};
use crate::error::UpstreamError;
use crate::fault::Fault;
use crate::handler::Handler;
use crate::output::CallOutput;
use crate::session_client::SessionAwareClient;
use crate::stdio;

/// The first wait before reconnecting; it doubles on each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lasted this long was healthy: the next failure starts the back-off anew.
const HEALTHY: Duration = Duration::from_secs(60);
/// How long a call that lost its stdio connection waits to learn why, for its error's text.
const LEARN_WHY: Duration = Duration::from_secs(1);

/// A tool of the upstream, as it lists it (its own name; the gateway prefixes it).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamTool {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the arguments (an object schema; never null). Not checked here:
    /// the gateway validates arguments itself.
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    /// `annotations` as sent (`readOnlyHint`, `destructiveHint`, …).
    pub annotations: Option<Value>,
    /// Its size as listed, in bytes of JSON: what compiling its schemas can cost grows
    /// with it.
    pub listed_bytes: usize,
}

/// Where the connection stands, for a health page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamState {
    /// The first connection is being made.
    Starting,
    /// Connected; `protocol_version` tells the era (`2026-07-28` stateless, older ones with
    /// an `initialize` session).
    Ready {
        since: SystemTime,
        protocol_version: String,
    },
    /// The connection ended or could not be made; another try follows after a back-off.
    Down { since: SystemTime, error: String },
    /// Reconnecting (attempt counts from 1 since the last healthy connection).
    Restarting { attempt: u32, last_error: String },
}

/// One upstream server. Cheap to clone; the connection ends (a child is killed) when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub struct Upstream {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    /// Dropped with the last clone, which ends the supervisor.
    _stop: watch::Sender<()>,
}

#[derive(Debug)]
struct Shared {
    config: UpstreamConfig,
    name: Arc<str>,
    state: watch::Sender<UpstreamState>,
    /// The connection calls go to, with its generation (one more for every connection).
    peer: Mutex<Option<(u64, Peer<RoleClient>)>>,
    tools: Mutex<Arc<Vec<UpstreamTool>>>,
    changes: watch::Sender<u64>,
    tools_changed: Arc<Notify>,
    /// A call lost its HTTP connection: drop it and open another now, without back-off.
    reconnect: Notify,
    /// The generation of the connection lost, so a late request does not drop a newer one.
    lost_generation: Mutex<u64>,
    http_headers: Option<http::HeaderMap>,
    /// Its credentials (header and `env` values), cut out of every text that comes from it.
    secrets: Secrets,
    /// Why the last HTTP answer could not be used (its HTTP connections share it).
    http_fault: Arc<Fault>,
}

impl Upstream {
    /// Checks `config` and starts connecting in the background; returns at once (a slow or
    /// missing server must not hold up the gateway's start). Must be called within a Tokio
    /// runtime.
    pub fn start(config: UpstreamConfig) -> Result<Self, UpstreamError> {
        let misconfigured = |why: &str| UpstreamError::Config {
            name: config.name.clone(),
            why: why.to_owned(),
        };
        let http_headers = match &config.transport {
            Transport::Stdio { command, .. } => {
                if command.is_empty() {
                    return Err(misconfigured("the command is empty"));
                }
                None
            }
            Transport::Http { url, headers } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(misconfigured("the URL is not http:// or https://"));
                }
                Some(header_map(headers).map_err(|why| misconfigured(&why))?)
            }
        };
        let (stop, stop_rx) = watch::channel(());
        let shared = Arc::new(Shared {
            secrets: config.secrets(),
            http_fault: Arc::new(Fault::default()),
            name: Arc::from(config.name.as_str()),
            config,
            state: watch::Sender::new(UpstreamState::Starting),
            peer: Mutex::new(None),
            tools: Mutex::new(Arc::new(Vec::new())),
            changes: watch::Sender::new(0),
            tools_changed: Arc::new(Notify::new()),
            reconnect: Notify::new(),
            lost_generation: Mutex::new(0),
            http_headers,
        });
        tokio::spawn(supervise(shared.clone(), stop_rx));
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                _stop: stop,
            }),
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.inner.shared.config.name
    }

    /// Waits for the first connection attempt to end: `Ok` when connected.
    pub async fn ready(&self) -> Result<(), UpstreamError> {
        let mut state = self.inner.shared.state.subscribe();
        let settled = state
            .wait_for(|state| {
                matches!(
                    state,
                    UpstreamState::Ready { .. } | UpstreamState::Down { .. }
                )
            })
            .await
            .map(|state| state.clone());
        match settled {
            Ok(UpstreamState::Ready { .. }) => Ok(()),
            Ok(UpstreamState::Down { error, .. }) => Err(self.unavailable(error)),
            _ => Err(self.unavailable("it was shut down".to_owned())),
        }
    }

    /// The tools last listed, less those the allow-list leaves out; the server's
    /// credentials were cut out of their texts as they were listed.
    pub fn tools(&self) -> Vec<UpstreamTool> {
        lock(&self.inner.shared.tools).as_ref().clone()
    }

    /// Where the connection stands.
    pub fn state(&self) -> UpstreamState {
        self.inner.shared.state.borrow().clone()
    }

    /// A counter bumped whenever the tool list changes (first listing included).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.shared.changes.subscribe()
    }

    /// Calls tool `name` (the upstream's own name) with `arguments`, under the configured
    /// deadline; `traceparent` travels in `_meta`. Past the deadline the call is
    /// [`UpstreamError::Timeout`] (and the server is sent a cancellation). A tool that
    /// fails, or asks for user input, is an `Ok` output with `is_error` set.
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        traceparent: Option<&str>,
    ) -> Result<CallOutput, UpstreamError> {
        let shared = &self.inner.shared;
        if !shared.config.allows(name) {
            return Err(UpstreamError::UnknownTool {
                name: shared.config.name.clone(),
                tool: name.to_owned(),
            });
        }
        let timeout = shared.config.call_timeout;
        match tokio::time::timeout(timeout, self.call_within(name, arguments, traceparent)).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::Timeout {
                name: shared.config.name.clone(),
                timeout,
            }),
        }
    }

    async fn call_within(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        traceparent: Option<&str>,
    ) -> Result<CallOutput, UpstreamError> {
        let shared = &self.inner.shared;
        let is_http = matches!(shared.config.transport, Transport::Http { .. });
        let mut after_generation = 0;
        loop {
            let (generation, peer) = self.connection(after_generation).await?;
            let mut params = CallToolRequestParams::new(name.to_owned());
            params.arguments = Some(arguments.clone());
            if let Some(traceparent) = traceparent {
                let mut meta = Map::new();
                meta.insert("traceparent".to_owned(), Value::from(traceparent));
                params.meta = Some(RequestMetaObject(MetaObject(meta)));
            }
            let error = match peer.call_tool_once(params).await {
                Ok(CallToolResponse::Complete(result)) => {
                    return Ok(CallOutput::from_result(
                        result,
                        shared.config.max_result_bytes,
                        &shared.secrets,
                    ));
                }
                Ok(CallToolResponse::InputRequired(result)) => {
                    return Ok(CallOutput::input_required(&shared.config.name, &result));
                }
                Ok(CallToolResponse::Task(_)) => {
                    return Err(self.rejected(
                        "it answered with a task, which the gateway does not follow".to_owned(),
                    ));
                }
                // A server restarted behind the same URL knows no session. The spec asks
                // for a 404 (which rmcp recovers from itself), but the reference servers
                // answer an unknown session id with a 400 and a JSON-RPC error (-32000 "Bad
                // Request: No valid session ID provided"): that too means the session is lost.
                Err(ServiceError::McpError(error))
                    if is_http
                        && after_generation == 0
                        && in_session(&peer)
                        && error.message.to_ascii_lowercase().contains("session") =>
                {
                    ServiceError::McpError(error)
                }
                Err(ServiceError::McpError(error)) => {
                    return Err(self.rejected(format!(
                        "{} (JSON-RPC error {})",
                        error.message, error.code.0
                    )));
                }
                Err(error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                    // An answer that came and could not be used is no lost connection: it
                    // would come again, and the tool may run twice.
                    if let Some(why) = shared.http_fault.why().filter(|_| is_http) {
                        return Err(
                            self.unavailable(format!("its answer could not be used: {why}"))
                        );
                    }
                    error
                }
                Err(ServiceError::UnexpectedResponse) => {
                    return Err(self.rejected(
                        "it answered with something that is not a tool result".to_owned(),
                    ));
                }
                Err(error) => return Err(self.rejected(plain(&error))),
                Ok(_) => {
                    return Err(
                        self.rejected("it answered with a result of an unknown kind".to_owned())
                    );
                }
            };
            // The connection went away under the call.
            if is_http && after_generation == 0 {
                // A lost HTTP session or connection: open another and retry once, as rmcp
                // itself does for a POST that met an expired session. The request got no
                // answer; if the connection was cut after the server had read it, the tool
                // may run twice, which is the price of not failing every call that meets a
                // restarted server.
                tracing::info!(server = %shared.name, error = %shared.secrets.text(&plain(&error)), "connection lost during a call; reconnecting and retrying once");
                after_generation = generation;
                {
                    let mut lost = lock(&shared.lost_generation);
                    *lost = (*lost).max(generation);
                }
                shared.reconnect.notify_one();
                continue;
            }
            return Err(self.unavailable(self.why_lost(&error).await));
        }
    }

    /// The connection a call should use: a newer one than `after_generation`. Waits while
    /// the first connection is being made (or a lost HTTP one is reopened); otherwise a
    /// server that is not ready fails the call at once.
    async fn connection(
        &self,
        after_generation: u64,
    ) -> Result<(u64, Peer<RoleClient>), UpstreamError> {
        let shared = &self.inner.shared;
        let reopening = after_generation > 0;
        let mut state = shared.state.subscribe();
        let mut seen_restart = false;
        loop {
            if let Some((generation, peer)) = lock(&shared.peer).clone()
                && generation > after_generation
            {
                return Ok((generation, peer));
            }
            let current = state.borrow_and_update().clone();
            match current {
                UpstreamState::Starting | UpstreamState::Ready { .. } => {}
                UpstreamState::Restarting { last_error, .. } => {
                    if !reopening {
                        return Err(
                            self.unavailable(format!("it is restarting after: {last_error}"))
                        );
                    }
                    seen_restart = true;
                }
                UpstreamState::Down { error, .. } => {
                    if !reopening || seen_restart {
                        return Err(self.unavailable(error));
                    }
                }
            }
            if state.changed().await.is_err() {
                return Err(self.unavailable("it was shut down".to_owned()));
            }
        }
    }

    /// Why a stdio connection was lost, once the supervisor has seen it end (the process's
    /// exit, or an oversized message); the transport error alone says little.
    async fn why_lost(&self, error: &ServiceError) -> String {
        let mut state = self.inner.shared.state.subscribe();
        let down = tokio::time::timeout(
            LEARN_WHY,
            state.wait_for(|state| matches!(state, UpstreamState::Down { .. })),
        )
        .await;
        if let Ok(Ok(state)) = down
            && let UpstreamState::Down { error, .. } = &*state
        {
            return format!("lost during the call: {error}");
        }
        format!("lost during the call: {}", plain(error))
    }

    fn unavailable(&self, why: String) -> UpstreamError {
        UpstreamError::Unavailable {
            name: self.inner.shared.config.name.clone(),
            why: self.inner.shared.secrets.text(&why),
        }
    }

    fn rejected(&self, why: String) -> UpstreamError {
        UpstreamError::Rejected {
            name: self.inner.shared.config.name.clone(),
            why: self.inner.shared.secrets.text(&why),
        }
    }
}

/// Whether the connection is an `initialize` session (the older era), not stateless.
fn in_session(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.protocol_version.has_initialize())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The configured headers, checked, and marked sensitive so no debug output shows them.
fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        let header = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a header name"))?;
        // The value is left out of the message: it is usually a credential.
        let mut value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
        value.set_sensitive(true);
        if [
            "accept",
            "mcp-session-id",
            "last-event-id",
            "mcp-protocol-version",
        ]
        .contains(&header.as_str())
        {
            return Err(format!("header {name} is set by the MCP transport itself"));
        }
        map.insert(header, value);
    }
    Ok(map)
}

/// A live connection: the rmcp service, for stdio the child, and where the transport says
/// why it gave up.
struct Connection {
    running: RunningService<RoleClient, Handler>,
    /// The current era's subscription to tool list changes, ended with the connection.
    listening: Option<AbortOnDrop>,
    process: Option<stdio::Process>,
    fault: Arc<Fault>,
}

/// Keeps the upstream connected until `stop` says the last [`Upstream`] is gone.
async fn supervise(shared: Arc<Shared>, mut stop: watch::Receiver<()>) {
    let mut backoff = FIRST_BACKOFF;
    let mut attempt: u32 = 0;
    let mut generation: u64 = 0;
    loop {
        let connected = tokio::select! {
            connected = connect(&shared) => connected,
            _ = stop.changed() => return,
        };
        let mut reconnect_now = false;
        let error = match connected {
            Ok(connection) => {
                generation += 1;
                let started = Instant::now();
                let ended = tokio::select! {
                    ended = serve(&shared, connection, generation) => ended,
                    _ = stop.changed() => return,
                };
                if started.elapsed() >= HEALTHY {
                    backoff = FIRST_BACKOFF;
                    attempt = 0;
                }
                reconnect_now = ended.reconnect_now;
                ended.why
            }
            Err(why) => why,
        };
        // Every reason is built from what the server sent, or its HTTP client saw.
        let error = shared.secrets.text(&error);
        *lock(&shared.peer) = None;
        tracing::warn!(server = %shared.name, error = %error, "MCP server connection ended");
        if !reconnect_now {
            shared.state.send_replace(UpstreamState::Down {
                since: SystemTime::now(),
                error: error.clone(),
            });
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                // A call that lost an HTTP connection wants it back now.
                _ = shared.reconnect.notified() => {}
                _ = stop.changed() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        attempt += 1;
        shared.state.send_replace(UpstreamState::Restarting {
            attempt,
            last_error: error,
        });
    }
}

/// How a connection ended.
struct Ended {
    why: String,
    /// A call asked for a new connection; reconnect without back-off.
    reconnect_now: bool,
}

/// Hands the connection to calls and keeps its tool list fresh until it ends.
async fn serve(shared: &Arc<Shared>, connection: Connection, generation: u64) -> Ended {
    let Connection {
        running,
        listening: _listening,
        mut process,
        fault,
    } = connection;
    let peer = running.peer().clone();
    let protocol_version = peer
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_default();
    *lock(&shared.peer) = Some((generation, peer.clone()));
    shared.state.send_replace(UpstreamState::Ready {
        since: SystemTime::now(),
        protocol_version,
    });
    tracing::info!(server = %shared.name, "MCP server connected");
    let mut waiting = Box::pin(running.waiting());
    let mut exited = None;
    loop {
        tokio::select! {
            _ = &mut waiting => break,
            // A child can exit while what it started holds its stdout open: no end of file
            // would ever come.
            status = exit_of(process.as_mut()) => {
                exited = Some(status);
                break;
            }
            () = fault.ended() => break,
            _ = shared.tools_changed.notified() => {
                // Under the call deadline, as the first listing: a server that stops
                // answering, or lists past the bounds, is down with the reason.
                let timeout = shared.config.call_timeout;
                match tokio::time::timeout(timeout, refresh_tools(shared, &peer)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(ListingError::Failed(error))) => {
                        tracing::warn!(server = %shared.name, error = %shared.secrets.text(&plain(&error)), "could not list the tools again after a change");
                    }
                    Ok(Err(error @ ListingError::TooLarge(_))) => {
                        return Ended { why: format!("it could not list its tools: {error}"), reconnect_now: false };
                    }
                    Err(_) => {
                        return Ended { why: format!("it did not list its tools within {:.1} s", timeout.as_secs_f64()), reconnect_now: false };
                    }
                }
            }
            _ = shared.reconnect.notified() => {
                if *lock(&shared.lost_generation) >= generation {
                    return Ended { why: "the connection was lost during a call".to_owned(), reconnect_now: true };
                }
            }
        }
    }
    // The connection ends here: its calls fail now rather than when `process` (and its
    // group) goes.
    drop(waiting);
    // What the transport read says most; then the child's exit; a failed write last (the
    // exit that broke the pipe says more).
    if let Some(why) = fault.why() {
        return Ended {
            why,
            reconnect_now: false,
        };
    }
    let exited = match (exited, process.as_mut()) {
        (Some(status), _) => Some(status),
        (None, Some(process)) => {
            // A failed write comes with the exit that broke the pipe, or from a child that
            // lives on without reading: not worth the whole wait.
            let wait = match fault.write_failure() {
                Some(_) => LEARN_WHY / 10,
                None => LEARN_WHY,
            };
            tokio::time::timeout(wait, process.wait()).await.ok()
        }
        (None, None) => None,
    };
    let why = match (exited, fault.write_failure()) {
        (Some(Ok(status)), _) => format!("the process exited ({status})"),
        (_, Some(write)) => write,
        _ if process.is_some() => "the process closed its stdout".to_owned(),
        _ => "the connection closed".to_owned(),
    };
    Ended {
        why,
        reconnect_now: false,
    }
}

/// The exit of the child, when there is one; never otherwise.
async fn exit_of(
    process: Option<&mut stdio::Process>,
) -> std::io::Result<std::process::ExitStatus> {
    match process {
        Some(process) => process.wait().await,
        None => std::future::pending().await,
    }
}

/// Aborts a task when dropped: a connection's helpers end with it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// In the current era a server sends `notifications/tools/list_changed` only on a
/// `subscriptions/listen` stream the client opened (the older era sends it unasked, to
/// the handler). Opened when the server says its list can change, before the tools are
/// listed, so no change between the listing and the subscription goes unseen.
async fn listen_for_changes(shared: &Shared, peer: &Peer<RoleClient>) -> Option<AbortOnDrop> {
    let info = peer.peer_info()?;
    let changes = info
        .capabilities
        .tools
        .as_ref()
        .is_some_and(|tools| tools.list_changed == Some(true));
    if info.protocol_version.has_initialize() || !changes {
        return None;
    }
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match tokio::time::timeout(
        shared.config.call_timeout,
        peer.listen(filter),
    )
    .await
    {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(error)) => {
            tracing::warn!(server = %shared.name, error = %shared.secrets.text(&plain(&error)), "could not listen for tool list changes");
            return None;
        }
        Err(_) => {
            tracing::warn!(server = %shared.name, "no answer to listening for tool list changes");
            return None;
        }
    };
    let tools_changed = shared.tools_changed.clone();
    Some(AbortOnDrop(tokio::spawn(async move {
        while let Ok(Some(notification)) = subscription.next().await {
            if matches!(
                notification,
                ServerNotification::ToolListChangedNotification(_)
            ) {
                tools_changed.notify_one();
            }
        }
    })))
}

/// Spawns or reaches the server and makes the handshake, within the connect deadline, then
/// lists its tools.
async fn connect(shared: &Arc<Shared>) -> Result<Connection, String> {
    let config = &shared.config;
    let handler = Handler {
        server: shared.name.clone(),
        tools_changed: shared.tools_changed.clone(),
    };
    // Probe with `server/discover` and fall back to an `initialize` session when the
    // server is of the older era; rmcp does both.
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    let handshake = async {
        match &config.transport {
            Transport::Stdio { command, env } => {
                let spawned = stdio::spawn(
                    &config.name,
                    command,
                    env,
                    config.max_message_bytes,
                    &shared.secrets,
                )
                .map_err(|error| format!("it could not be started: {error}"))?;
                // rmcp's own bound is one past ours, so ours, which says why, speaks first.
                let transport = AsyncRwTransport::new_client(spawned.stdout, spawned.stdin)
                    .with_max_line_length(config.max_message_bytes.saturating_add(1));
                let running = handler
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|error| handshake_failed(&error, &spawned.fault))?;
                Ok::<_, String>(Connection {
                    running,
                    listening: None,
                    process: Some(spawned.process),
                    fault: spawned.fault,
                })
            }
            Transport::Http { url, .. } => {
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .max_json_response_size(config.max_message_bytes)
                        .max_sse_event_size(config.max_message_bytes)
                        .reinit_on_expired_session(true);
                let headers = shared.http_headers.clone().unwrap_or_default();
                transport_config.custom_headers = headers
                    .into_iter()
                    .filter_map(|(name, value)| Some((name?, value)))
                    .collect();
                let fault = shared.http_fault.clone();
                fault.clear();
                let client = SessionAwareClient::new(
                    &shared.name,
                    url,
                    &config.resolved,
                    fault.clone(),
                    shared.secrets.clone(),
                )?;
                let transport =
                    StreamableHttpClientTransport::with_client(client, transport_config);
                let running = handler
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|error| handshake_failed(&error, &fault))?;
                Ok::<_, String>(Connection {
                    running,
                    listening: None,
                    process: None,
                    fault,
                })
            }
        }
    };
    let connection = tokio::time::timeout(config.connect_timeout, handshake)
        .await
        .map_err(|_| {
            format!(
                "it did not finish the MCP handshake within {:.1} s",
                config.connect_timeout.as_secs_f64()
            )
        })??;
    let mut connection = connection;
    let peer = connection.running.peer().clone();
    // rmcp caches list results by default; tools are listed here on purpose and a cached
    // list would hide a change (and a stale result served on error would hide a failure).
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    connection.listening = listen_for_changes(shared, &peer).await;
    tokio::time::timeout(config.call_timeout, refresh_tools(shared, &peer))
        .await
        .map_err(|_| {
            format!(
                "it did not list its tools within {:.1} s",
                config.call_timeout.as_secs_f64()
            )
        })?
        .map_err(|error| format!("it could not list its tools: {error}"))?;
    Ok(connection)
}

fn handshake_failed(error: &rmcp::service::ClientInitializeError, fault: &Fault) -> String {
    if let Some(why) = fault.why() {
        return why;
    }
    format!("the MCP handshake failed: {}", plain(error))
}

/// An rmcp error's text without the Rust type names of its transport
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: `), which tell an
/// operator nothing.
fn plain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    while let Some(start) = text.find("Transport [") {
        let Some(end) = text[start..].find("] error: ") else {
            break;
        };
        text.replace_range(start..start + end + "] error: ".len(), "");
    }
    text
}

/// Why a listing failed: the server's own failure, or a listing past the bounds (which
/// ends the connection: the server is `down` with the reason).
#[derive(Debug, thiserror::Error)]
enum ListingError {
    #[error("{}", plain(.0))]
    Failed(#[from] ServiceError),
    #[error("{0}")]
    TooLarge(String),
}

/// Lists the tools again and bumps the change counter when the allowed list differs.
async fn refresh_tools(shared: &Shared, peer: &Peer<RoleClient>) -> Result<(), ListingError> {
    let secrets = &shared.secrets;
    let tools: Vec<UpstreamTool> = list_tools(&shared.config, peer)
        .await?
        .into_iter()
        .map(|tool| UpstreamTool {
            description: tool.description.map(|text| secrets.text(&text)),
            input_schema: secrets.value(tool.input_schema),
            output_schema: tool.output_schema.map(|schema| secrets.value(schema)),
            annotations: tool
                .annotations
                .map(|annotations| secrets.value(annotations)),
            ..tool
        })
        .collect();
    let changed = {
        let mut current = lock(&shared.tools);
        if current.as_ref() != &tools {
            *current = Arc::new(tools);
            true
        } else {
            false
        }
    };
    if changed {
        shared.changes.send_modify(|count| *count += 1);
    }
    Ok(())
}

/// Every page of the server's tools, within [`MAX_LIST_PAGES`] and the configured bounds
/// on tools and bytes in all, less those the allow-list leaves out. Each page is bounded
/// by the message bound already; only the allowed tools of past pages are held.
async fn list_tools(
    config: &UpstreamConfig,
    peer: &Peer<RoleClient>,
) -> Result<Vec<UpstreamTool>, ListingError> {
    let mut tools = Vec::new();
    let (mut listed, mut bytes) = (0usize, 0usize);
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        listed = listed.saturating_add(page.tools.len());
        if listed > config.max_tools {
            return Err(ListingError::TooLarge(format!(
                "it lists more than {} tools (max_tools)",
                config.max_tools
            )));
        }
        for tool in page.tools {
            let listed_bytes = switchboard_wire::json_len(&tool);
            bytes = bytes.saturating_add(listed_bytes);
            if bytes > config.max_list_bytes {
                return Err(ListingError::TooLarge(format!(
                    "its tool list takes more than {} bytes (max_list_bytes)",
                    config.max_list_bytes
                )));
            }
            if config.allows(&tool.name) {
                tools.push(UpstreamTool {
                    name: tool.name.into_owned(),
                    description: tool.description.map(|text| text.into_owned()),
                    input_schema: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
                    output_schema: tool
                        .output_schema
                        .map(|schema| Value::Object(Arc::unwrap_or_clone(schema))),
                    annotations: tool
                        .annotations
                        .and_then(|annotations| serde_json::to_value(annotations).ok()),
                    listed_bytes,
                });
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(ListingError::TooLarge(format!(
        "it lists its tools in more than {MAX_LIST_PAGES} pages"
    )))
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn transport_type_names_are_left_out_of_error_text() {
        let error = std::io::Error::other(
            "Send message error Transport [rmcp::transport::worker::WorkerTransport<a::B<c::D>>] error: Client error: refused, when send discover request",
        );
        assert_eq!(
            plain(&error),
            "Send message error Client error: refused, when send discover request"
        );
    }
}
