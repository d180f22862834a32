//! Streamable HTTP against a test double on a real socket (a small Python server speaking
//! the older, session era with JSON replies): an expired session is reopened and the call
//! retried without the caller noticing, the configured headers go with every request, and
//! they never show in an error.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use switchboard_mcp_client::Upstream;

use crate::common::*;

/// Sessions `s1`, `s2`, …; `POST /expire` forgets every open session, so the next request
/// on one gets the 404 an expired session gets. `GET /stats` tells what it saw.
const DOUBLE: &str = r#"
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
sessions, expired = set(), set()
stats = {"initialize": 0, "requests": 0, "without_key": 0, "expired_hits": 0}

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                return self.reply(200, dict(stats))
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path == "/expire":
            with lock:
                expired.update(sessions)
                sessions.clear()
            return self.reply(200, {})
        message = json.loads(body)
        with lock:
            stats["requests"] += 1
            if self.headers.get("X-Api-Key") != "secret-key-4711":
                stats["without_key"] += 1
        id, method = message.get("id"), message.get("method")
        if method == "server/discover":
            return self.reply(200, {"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
        if method == "initialize":
            with lock:
                stats["initialize"] += 1
                session = "s%d" % stats["initialize"]
                sessions.add(session)
            return self.reply(200, {"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "double", "version": "1"}}},
                [("Mcp-Session-Id", session)])
        session = self.headers.get("Mcp-Session-Id")
        with lock:
            if session in expired:
                stats["expired_hits"] += 1
                return self.reply(404, {"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": "Session not found"}})
            if session not in sessions:
                # As the reference servers answer an id they do not know: a 400 (not a 404) whose
                # error has no id.
                return self.reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}})
        if id is None:
            return self.reply(202)
        if method == "tools/list":
            return self.reply(200, {"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "whoami", "inputSchema": {"type": "object"}}]}})
        if method == "tools/call":
            return self.reply(200, {"jsonrpc": "2.0", "id": id, "result": {"content": [
                {"type": "text", "text": "session " + session}]}})
        self.reply(200, {"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

async fn stats(port: u16) -> Value {
    http_request(port, "GET", "/stats").await
}

/// One request to the double, with a client of its own (not the one under test).
async fn http_request(port: u16, method: &str, path: &str) -> Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let body = if method == "POST" { "{}" } else { "" };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let body = &response[response.find("\r\n\r\n").unwrap() + 4..];
    serde_json::from_str(body).unwrap()
}

/// The double's script, to run on one free port, as often as a test restarts it.
struct Double {
    python: String,
    path: String,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Double {
    /// `None` where Python is missing (a SKIP, or a failure under SWITCHBOARD_REQUIRE_PEERS).
    fn new() -> Option<Self> {
        let python = python(None)?;
        let dir = tempfile::tempdir().unwrap();
        Some(Self {
            python,
            path: script(dir.path(), "double.py", DOUBLE),
            port: free_port(),
            _dir: dir,
        })
    }

    /// The double running, until the returned server is dropped.
    async fn start(&self) -> Server {
        let port = self.port.to_string();
        Server::start(&self.python, &[&self.path, &port], &[], self.port).await
    }

    /// The header every request to the double must carry.
    fn headers() -> BTreeMap<String, String> {
        BTreeMap::from([("X-Api-Key".to_owned(), "secret-key-4711".to_owned())])
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_session_is_reopened_and_the_call_retried_once_transparently() {
    let Some(setup) = Double::new() else { return };
    let port = setup.port;
    let _double = setup.start().await;
    let headers = Double::headers();
    let upstream = connected(http(
        "double",
        &format!("http://127.0.0.1:{port}/mcp"),
        headers,
    ))
    .await;
    let first = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(first.text, "session s1");
    http_request(port, "POST", "/expire").await;
    let second = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(second.text, "session s2");
    let seen = stats(port).await;
    assert_eq!(seen["initialize"], 2, "{seen}");
    assert_eq!(seen["expired_hits"], 1, "{seen}");
    assert_eq!(
        seen["without_key"], 0,
        "a request went without the header: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_headers_never_show_in_errors() {
    let port = free_port();
    let secret = "Bearer sk-never-show-9f8e7d";
    let headers = BTreeMap::from([("Authorization".to_owned(), secret.to_owned())]);
    let mut config = http("closed", &format!("http://127.0.0.1:{port}/mcp"), headers);
    config.connect_timeout = std::time::Duration::from_secs(5);
    let upstream = Upstream::start(config).unwrap();
    let error = upstream.ready().await.unwrap_err();
    let shown = format!("{error} {error:?} {:?}", upstream.state());
    assert!(!shown.contains("sk-never-show"), "{shown}");
    assert!(
        error
            .to_string()
            .starts_with("tool server closed is unavailable: "),
        "{error}"
    );
    let call = upstream
        .call("anything", args(json!({})), None)
        .await
        .unwrap_err();
    let shown = format!("{call} {call:?}");
    assert!(!shown.contains("sk-never-show"), "{shown}");
    // A header value that is not one is refused without echoing it.
    let bad = BTreeMap::from([("Authorization".to_owned(), "sk-bad\nvalue".to_owned())]);
    let refused = Upstream::start(http("bad", "http://127.0.0.1:9/mcp", bad)).unwrap_err();
    assert!(
        !format!("{refused} {refused:?}").contains("sk-bad"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_that_lost_every_session_is_reopened_and_the_call_retried_once() {
    let Some(setup) = Double::new() else { return };
    let port = setup.port;
    let double = setup.start().await;
    let headers = Double::headers();
    let upstream = connected(http(
        "double",
        &format!("http://127.0.0.1:{port}/mcp"),
        headers,
    ))
    .await;
    let first = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(first.text, "session s1");
    // A new process knows no session: the old id gets a 400, not the 404 of an expired one.
    drop(double);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let _again = setup.start().await;
    let second = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(second.text, "session s1", "a session of the new process");
    let seen = stats(port).await;
    assert_eq!(seen["initialize"], 1, "{seen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_that_went_away_fails_calls_clearly_and_serves_again_once_back() {
    let Some(setup) = Double::new() else { return };
    let port = setup.port;
    let double = setup.start().await;
    let headers = Double::headers();
    let upstream = connected(http(
        "double",
        &format!("http://127.0.0.1:{port}/mcp"),
        headers,
    ))
    .await;
    upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    drop(double);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let error = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error
            .to_string()
            .starts_with("tool server double is unavailable: "),
        "{error}"
    );
    assert!(
        !format!("{error:?}").contains("secret-key-4711"),
        "{error:?}"
    );
    let _back = setup.start().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match upstream.call("whoami", args(json!({})), None).await {
            Ok(output) => {
                assert_eq!(output.text, "session s1");
                break;
            }
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(error) => panic!("{error}"),
        }
    }
}

/// A request's URL is checked at the addresses its host had then (no internal one), and the
/// connection goes there: the name is not looked up again, so it cannot answer otherwise the
/// second time (DNS rebinding). `.invalid` never resolves (RFC 6761), so any lookup fails.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_checked_at_its_addresses_is_reached_there_reopened_sessions_too() {
    let Some(setup) = Double::new() else { return };
    let port = setup.port;
    let _double = setup.start().await;
    let headers = Double::headers();
    let url = format!("http://mcp.rebinding.invalid:{port}/mcp");
    let mut config = http("pinned", &url, headers.clone());
    config.resolved = vec![([127, 0, 0, 1], port).into()];
    let upstream = connected(config).await;
    let first = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(first.text, "session s1");
    http_request(port, "POST", "/expire").await;
    let second = upstream
        .call("whoami", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(second.text, "session s2");
    // Without the addresses the same name is looked up, and does not resolve.
    let mut unpinned = http("unpinned", &url, headers);
    unpinned.connect_timeout = std::time::Duration::from_secs(5);
    let upstream = Upstream::start(unpinned).unwrap();
    assert!(upstream.ready().await.is_err());
}
