//! What the gateway adds to a call of an upstream MCP server's tool: `tools/call` of an
//! in-process echo server's tool straight to that server, and through the gateway's `/mcp`
//! (which checks the arguments, calls the server on its kept connection and relays the
//! result), alternately from one pooled client, so both see the same machine noise. Both in
//! the 2026-07-28 era, one JSON answer. Closed loop: each request is sent when the one
//! before it has answered. Prints median and p99 of each and what the gateway adds.
//!
//! `cargo bench -p switchboard-server --bench mcp_upstream -- [--samples N]`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::Extensions;
use axum::routing::any;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_bench::{Summary, heading, report, summarize};
use switchboard_mcp::{
    CallError, CatalogTool, HttpEndpoint, HttpOptions, McpServer, ServerOptions, ToolCatalog,
    ToolOutput,
};
use switchboard_server::{Config, RunningGateway};
use tokio::sync::watch;

/// The allocator the `switchboard` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MODERN: &str = "2026-07-28";

/// One tool that answers its text at once: the upstream costs next to nothing, so what
/// the gateway adds shows.
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

fn main() -> Result<(), common::Failure> {
    common::run(compare)
}

/// Serves the echo server on a free loopback port; its URL.
async fn upstream() -> Result<String, common::Failure> {
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

async fn compare(samples: usize) -> Result<(), common::Failure> {
    let url = upstream().await?;
    let text = format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nname = \"none\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:9\"\nmodel = \"none\"\n[[mcp_server]]\nname = \"fast\"\nurl = \"{url}\"\n"
    );
    let config = Config::from_toml(&text).map_err(|error| error.to_string())?;
    let gateway = RunningGateway::start(&config, &|_| None).await?;
    let client = reqwest::Client::new();
    let call = |url: String, name: &str| {
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
    };
    let direct = call(url, "echo");
    let through = call(format!("{}/mcp", gateway.base_url()), "fast_echo");
    // The gateway connects to the server in the background: wait until it serves the tool.
    let deadline = Instant::now() + Duration::from_secs(30);
    let by_gateway = loop {
        match common::send(&through).await {
            Ok(answer) if answer.get("result").is_some() => break answer,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            other => return Err(format!("the gateway never served fast_echo: {other:?}")),
        }
    };
    let by_server = common::send(&direct).await?;
    // Both answer the same text, or the comparison means nothing.
    if by_server["result"]["content"] != by_gateway["result"]["content"] {
        return Err(format!("the answers differ: {by_server} / {by_gateway}"));
    }
    let mut times = common::alternate(samples, [&direct, &through]).await?;
    let [direct_times, through_times] = &mut times;
    let (direct_summary, through_summary) = (summarize(direct_times), summarize(through_times));
    heading("tools/call of an in-process echo server's tool, one call at a time");
    report("straight to the server", &direct_summary);
    report("through the gateway's /mcp", &through_summary);
    let added = |of: fn(&Summary) -> Duration| {
        of(&through_summary)
            .saturating_sub(of(&direct_summary))
            .as_secs_f64()
            * 1000.0
    };
    println!(
        "{:<48} median {:>9.3} ms  p99 {:>9.3} ms",
        "added by the gateway",
        added(|s| s.median),
        added(|s| s.p99)
    );
    gateway.stop().await.map_err(|error| error.to_string())
}
