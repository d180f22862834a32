//! The Streamable HTTP endpoint, to mount in a router. Both protocol eras on one URL:
//! stateless 2026-07-28 requests, and 2025-11-25 sessions (`initialize`, `Mcp-Session-Id`,
//! the session's GET stream). Any other GET is 405.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::catalog::ToolCatalog;
use crate::handler::McpServer;
use crate::sessions::{self, SessionLimits, SessionOwner, Sessions};
use crate::shared::{DirectoryError, SharedSessions, Store};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::store::SessionStore;

/// An answer of the endpoint.
pub type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Who may reach the endpoint from a browser, and how large a request may be.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` values accepted (a name without a port accepts any port), against DNS
    /// rebinding; empty accepts any (for an endpoint served beyond loopback under its
    /// public names).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`http://localhost:*` style); a request with any other
    /// `Origin` is 403. Requests without `Origin` (every non-browser client) pass.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
}

/// What the 2025-11-25 sessions may hold, and where they are shared.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Live sessions at most, overall and per [`SessionOwner`]: past either, a new session
    /// is refused (503 overall, 429 for the owner).
    pub limits: SessionLimits,
    /// A session nothing has happened in for this long ends (its GET stream with it).
    pub idle: Duration,
    /// A session's GET stream that has carried no message for this long ends (a client
    /// opens another when it wants one): held open without traffic, it would keep its
    /// connection from ever counting as idle.
    pub stream_idle: Duration,
    /// The directory the processes serving this endpoint share sessions through; `None`:
    /// sessions live in this process alone.
    pub shared: Option<SharedSessions>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            limits: SessionLimits {
                overall: 10_000,
                per_owner: 100,
            },
            idle: Duration::from_secs(300),
            stream_idle: Duration::from_secs(60),
            shared: None,
        }
    }
}

/// The endpoint of one server; cheap to clone.
pub struct HttpEndpoint<C> {
    service: StreamableHttpService<McpServer<C>, Sessions>,
    sessions: Arc<Sessions>,
    stream_idle: Duration,
    shared: Option<SharedSessions>,
}

impl<C> Clone for HttpEndpoint<C> {
    fn clone(&self) -> Self {
        Self {
            service: self.service.clone(),
            sessions: Arc::clone(&self.sessions),
            stream_idle: self.stream_idle,
            shared: self.shared.clone(),
        }
    }
}

impl<C> std::fmt::Debug for HttpEndpoint<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint").finish_non_exhaustive()
    }
}

impl<C: ToolCatalog> HttpEndpoint<C> {
    /// An endpoint whose sessions have the default bounds.
    pub fn new(server: McpServer<C>, options: HttpOptions) -> Self {
        Self::with_sessions(server, options, SessionOptions::default())
    }

    pub fn with_sessions(
        server: McpServer<C>,
        options: HttpOptions,
        session_options: SessionOptions,
    ) -> Self {
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts)
            .with_allowed_origins(options.allowed_origins)
            // Every present Origin is checked, even against an empty list.
            .enforce_origin_validation()
            // One JSON body per request where nothing streams before the result.
            .with_json_response(true)
            .with_max_request_body_bytes(options.max_body_bytes);
        config.session_store = session_options
            .shared
            .clone()
            .map(|shared| Arc::new(Store(shared)) as Arc<dyn SessionStore>);
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(session_options.idle);
        let sessions = Arc::new(Sessions::new(local, session_options.limits));
        Self {
            service: StreamableHttpService::new(
                move || Ok(server.for_session()),
                Arc::clone(&sessions),
                config,
            ),
            sessions,
            stream_idle: session_options.stream_idle,
            shared: session_options.shared,
        }
    }

    /// Answers one request. Its extensions reach the catalog; a [`SessionOwner`] among them
    /// owns the session it opens, and may use only sessions it opened.
    pub async fn handle<B>(&self, request: Request<B>) -> HttpResponse
    where
        B: http_body::Body + Send + 'static,
        B::Error: std::fmt::Display,
        B::Data: Send + 'static,
    {
        // The SDK answers a GET without a session 400 ("session ID required"), as the
        // 2025-11-25 revision allowed; there is no stream to open without a session, which
        // both revisions say with 405.
        if request.method() == Method::GET && !request.headers().contains_key("mcp-session-id") {
            return method_not_allowed();
        }
        let owner = request.extensions().get::<SessionOwner>().cloned();
        if let Some(id) = request.headers().get("mcp-session-id") {
            let id = id.to_str().unwrap_or_default().to_owned();
            let method = request.method().clone();
            if let Some(refusal) = self.session_refusal(&id, owner.as_ref(), &method).await {
                return refusal;
            }
        }
        let stream = request.method() == Method::GET;
        let answer = sessions::opening(owner, self.service.clone().call(request)).await;
        let response = match answer {
            Ok(Ok(response)) => response,
            Ok(Err(never)) => match never {},
            Err(full) => return refused(full),
        };
        if stream && response.status() == StatusCode::OK {
            let idle = self.stream_idle;
            return response.map(|body| Quiet::new(body, idle).boxed());
        }
        response
    }
}

impl<C> HttpEndpoint<C> {
    /// The answer to a request naming the session `id` that must not reach it, if any.
    /// Another owner's session is answered as one that does not exist (the SDK's 404), so
    /// that its id is worth nothing to anyone else. With a shared directory, the directory
    /// decides: a session it no longer has is ended here too, one this process lacks is
    /// restored by the SDK, and a `DELETE` of one this process lacks is carried out in the
    /// directory (which ends it on every replica).
    async fn session_refusal(
        &self,
        id: &str,
        owner: Option<&SessionOwner>,
        method: &Method,
    ) -> Option<HttpResponse> {
        let Some(shared) = &self.shared else {
            return (!self.sessions.belongs(id, owner)).then(session_not_found);
        };
        match shared.directory.touch(id, shared.idle).await {
            Ok(Some(record)) if record.owned_by(owner) => {
                if method == Method::DELETE && !self.sessions.holds(id) {
                    return Some(match shared.directory.remove(id).await {
                        Ok(_) => accepted(),
                        Err(error) => directory_unavailable(&error),
                    });
                }
                None
            }
            Ok(Some(_)) => Some(session_not_found()),
            Ok(None) => {
                // Ended on another replica, or expired: this copy ends as well.
                if self.sessions.holds(id) {
                    let _ = self.sessions.close_session(&SessionId::from(id)).await;
                }
                Some(session_not_found())
            }
            Err(error) => Some(directory_unavailable(&error)),
        }
    }
}

/// A session's GET stream that ends once it has carried no message for `idle`: the SSE
/// keep-alive comments it sends meanwhile (lines starting `:`) are not messages.
struct Quiet {
    body: BoxBody<Bytes, Infallible>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl Quiet {
    fn new(body: BoxBody<Bytes, Infallible>, idle: Duration) -> Self {
        Self {
            body,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }
}

impl http_body::Body for Quiet {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.body).poll_frame(context) {
            Poll::Ready(Some(Ok(frame))) => {
                if frame.data_ref().is_some_and(|data| !data.starts_with(b":")) {
                    let next = Instant::now() + self.idle;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match self.deadline.as_mut().poll(context) {
                Poll::Ready(()) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            other => other,
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The SDK's own answer for a session it does not hold.
fn session_not_found() -> HttpResponse {
    let mut response =
        Response::new(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// A `DELETE` carried out.
fn accepted() -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// The shared directory could not be asked: 503, as a JSON-RPC error.
fn directory_unavailable(error: &DirectoryError) -> HttpResponse {
    json_rpc_error(StatusCode::SERVICE_UNAVAILABLE, &error.to_string())
}

/// A new session refused: 503 when the endpoint holds its most, 429 when the owner does;
/// a JSON-RPC error, as MCP clients read one.
fn refused(full: sessions::Full) -> HttpResponse {
    let status = match full {
        sessions::Full::Overall(_) => StatusCode::SERVICE_UNAVAILABLE,
        sessions::Full::PerOwner(_) => StatusCode::TOO_MANY_REQUESTS,
    };
    json_rpc_error(status, &full.to_string())
}

/// A JSON-RPC error without an id, as MCP clients read one, with this HTTP status.
fn json_rpc_error(status: StatusCode, message: &str) -> HttpResponse {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": message},
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn method_not_allowed() -> HttpResponse {
    let mut response = Response::new(
        Full::new(Bytes::from_static(
            b"Method Not Allowed: this MCP endpoint takes POST (GET only for a 2025-11-25 session's stream)",
        ))
        .boxed(),
    );
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    response
}
