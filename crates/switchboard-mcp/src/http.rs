//! The Streamable HTTP endpoint, to mount in a router. Both protocol eras on one URL:
//! stateless 2026-07-28 requests, and 2025-11-25 sessions (`initialize`, `Mcp-Session-Id`,
//! the session's GET stream). Any other GET is 405.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service;

use crate::catalog::ToolCatalog;
use crate::handler::McpServer;

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

/// The endpoint of one server; cheap to clone.
pub struct HttpEndpoint<C> {
    service: StreamableHttpService<McpServer<C>, LocalSessionManager>,
}

impl<C> Clone for HttpEndpoint<C> {
    fn clone(&self) -> Self {
        Self {
            service: self.service.clone(),
        }
    }
}

impl<C> std::fmt::Debug for HttpEndpoint<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint").finish_non_exhaustive()
    }
}

impl<C: ToolCatalog> HttpEndpoint<C> {
    pub fn new(server: McpServer<C>, options: HttpOptions) -> Self {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts)
            .with_allowed_origins(options.allowed_origins)
            // Every present Origin is checked, even against an empty list.
            .enforce_origin_validation()
            // One JSON body per request where nothing streams before the result.
            .with_json_response(true)
            .with_max_request_body_bytes(options.max_body_bytes);
        Self {
            service: StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                config,
            ),
        }
    }

    /// Answers one request. Its extensions reach the catalog.
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
        match self.service.clone().call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
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
