//! The HTTP endpoint's 2025-11-25 sessions over real sockets, with a catalog of the test's
//! own whose change channel it can count listeners on: every session that ends (deleted,
//! or past its idle time) stops listening for changes at once, not when the list next
//! changes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::routing::any;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_mcp::{
    CallError, CatalogTool, HttpEndpoint, HttpOptions, McpServer, ServerOptions, SessionOptions,
    ToolCatalog, ToolOutput,
};
use tokio::sync::watch;

const LEGACY: &str = "2025-11-25";

/// One tool, and a change channel whose receivers are the listeners.
struct Catalog {
    changes: watch::Sender<u64>,
}

impl ToolCatalog for Catalog {
    fn tools(&self, _request: &http::Extensions) -> Vec<CatalogTool> {
        vec![CatalogTool {
            name: "echo".to_owned(),
            description: None,
            input_schema: None,
            output_schema: None,
        }]
    }

    fn call(
        &self,
        _request: &http::Extensions,
        _name: &str,
        _arguments: Map<String, Value>,
    ) -> BoxFuture<'static, Result<ToolOutput, CallError>> {
        Box::pin(async {
            Ok(ToolOutput {
                text: "echo".to_owned(),
                is_error: false,
                structured: None,
            })
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Serves the endpoint on loopback; its base URL.
async fn serve(catalog: Arc<Catalog>, session_idle: Duration) -> String {
    let server = McpServer::new(
        catalog,
        ServerOptions {
            name: "test".to_owned(),
            version: "1".to_owned(),
            instructions: None,
            max_name_chars: 46,
        },
    );
    let endpoint = HttpEndpoint::with_sessions(
        server,
        HttpOptions {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: 1024 * 1024,
        },
        SessionOptions {
            idle: session_idle,
            ..SessionOptions::default()
        },
    );
    let router = Router::new().route(
        "/mcp",
        any(move |request: Request| {
            let endpoint = endpoint.clone();
            async move { endpoint.handle(request).await.map(Body::new) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}/mcp")
}

/// Opens a session (`initialize`, then `notifications/initialized`, which starts its
/// listener); its id.
async fn open(client: &reqwest::Client, url: &str) -> String {
    let opened = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let done = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", LEGACY)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    session
}

/// Waits up to 10 s for the listeners to be `at_most`; how many there were then.
async fn listeners_fall_to(changes: &watch::Sender<u64>, at_most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    while changes.receiver_count() > at_most && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    changes.receiver_count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_stops_listening_for_changes() {
    const SESSIONS: usize = 1000;
    let catalog = Arc::new(Catalog {
        changes: watch::Sender::new(0),
    });
    let url = serve(Arc::clone(&catalog), Duration::from_secs(300)).await;
    let client = reqwest::Client::new();
    for _ in 0..SESSIONS {
        let session = open(&client, &url).await;
        let deleted = client
            .delete(&url)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", LEGACY)
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 202);
    }
    let left = listeners_fall_to(&catalog.changes, 0).await;
    eprintln!("listeners left after {SESSIONS} sessions opened and deleted: {left}");
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_its_idle_time_stops_listening_for_changes() {
    let catalog = Arc::new(Catalog {
        changes: watch::Sender::new(0),
    });
    let url = serve(Arc::clone(&catalog), Duration::from_secs(1)).await;
    let client = reqwest::Client::new();
    for _ in 0..20 {
        open(&client, &url).await;
    }
    assert!(catalog.changes.receiver_count() >= 1);
    let left = listeners_fall_to(&catalog.changes, 0).await;
    eprintln!("listeners left after 20 sessions idled out: {left}");
    assert_eq!(left, 0);
}
