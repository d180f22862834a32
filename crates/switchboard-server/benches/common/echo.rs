//! An in-process MCP server with one tool, `echo`, that answers its text at once: an
//! upstream that costs next to nothing, so what the gateway adds shows. Shared by the
//! benches that call an upstream MCP server.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::Extensions;
use axum::routing::any;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_mcp::{
    CallError, CatalogTool, HttpEndpoint, HttpOptions, McpServer, ServerOptions, ToolCatalog,
    ToolOutput,
};
use tokio::sync::watch;

/// The one tool.
struct Echo {
    changes: watch::Sender<u64>,
}

impl ToolCatalog for Echo {
    fn tools(&self, _: &Extensions) -> Vec<CatalogTool> {
        vec![CatalogTool {
            name: "echo".to_owned(),
            description: Some("Answers its text".to_owned()),
            input_schema: Some(json!({"type": "object",
                "properties": {"text": {"type": "string"}}, "required": ["text"]})),
            output_schema: None,
        }]
    }

    fn call(
        &self,
        _: &Extensions,
        _: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, Result<ToolOutput, CallError>> {
        let text = arguments
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Box::pin(async move {
            Ok(ToolOutput {
                text,
                is_error: false,
                structured: None,
            })
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Serves the echo server on a free loopback port; its URL.
pub async fn upstream() -> Result<String, String> {
    let server = McpServer::new(
        Arc::new(Echo {
            changes: watch::Sender::new(0),
        }),
        ServerOptions {
            name: "echo".to_owned(),
            version: "1".to_owned(),
            instructions: None,
            max_name_chars: 46,
        },
    );
    let endpoint = HttpEndpoint::new(
        server,
        HttpOptions {
            allowed_hosts: vec!["127.0.0.1".to_owned()],
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
        },
    );
    let router = Router::new().route(
        "/mcp",
        any(move |request: Request| {
            let endpoint = endpoint.clone();
            async move { endpoint.handle(request).await.map(Body::new) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| error.to_string())?;
    let address = listener.local_addr().map_err(|error| error.to_string())?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(format!("http://{address}/mcp"))
}

/// The protocol era the benches speak: one JSON answer per call.
const MODERN: &str = "2026-07-28";

/// A `tools/call` of tool `name` with the text `benchmarked`, to the MCP endpoint `url`.
pub fn tools_call(client: &reqwest::Client, url: &str, name: &str) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": {"text": "benchmarked"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
}
