//! A tool whose definition nests past the 127 levels rmcp can read costs that tool, with a
//! warning, not its server the whole listing: a server of the test's own lists a plain tool
//! beside one whose `inputSchema` nests 200 levels, over stdio and over HTTP.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_mcp_client::{Upstream, UpstreamConfig, UpstreamState, UpstreamTool};

use crate::common::*;

/// A stdio server of the older era listing `plain` and `deep` (its schema written by hand,
/// 200 levels deep), answering calls to `plain`.
const STDIO: &str = r#"
import json, sys

out = sys.stdout.buffer
deep_schema = '{"type": "object", "properties": {"x": ' + '[' * 200 + ']' * 200 + '}}'

def send(text):
    out.write(text.encode() + b"\n")
    out.flush()

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    head = '{"jsonrpc": "2.0", "id": ' + json.dumps(id) + ', '
    if method == "server/discover":
        send(head + '"error": {"code": -32601, "message": "Method not found"}}')
    elif method == "initialize":
        send(head + '"result": ' + json.dumps({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "deep", "version": "1"}}) + '}')
    elif method == "tools/list":
        send(head + '"result": {"tools": [{"name": "deep", "inputSchema": ' + deep_schema
             + '}, {"name": "plain", "description": "[{\\"", "inputSchema": {"type": "object"}}]}}')
    elif method == "tools/call":
        send(head + '"result": {"content": [{"type": "text", "text": "plain answered"}]}}')
"#;

/// The same server over Streamable HTTP on `argv[1]` (older era, a session).
const HTTP: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

deep_schema = '{"type": "object", "properties": {"x": ' + '[' * 200 + ']' * 200 + '}}'

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, text, headers=()):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(405, "")

    def do_DELETE(self):
        self.reply(200, "")

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        id, method = message.get("id"), message.get("method")
        head = '{"jsonrpc": "2.0", "id": ' + json.dumps(id) + ', '
        if method == "server/discover":
            return self.reply(200, head + '"error": {"code": -32601, "message": "Method not found"}}')
        if method == "initialize":
            return self.reply(200, head + '"result": ' + json.dumps({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "deep", "version": "1"}}) + '}',
                [("Mcp-Session-Id", "s1")])
        if id is None:
            return self.reply(202, "")
        if method == "tools/list":
            return self.reply(200, head + '"result": {"tools": [{"name": "plain", "inputSchema": {"type": "object"}}, '
                              + '{"name": "deep", "inputSchema": ' + deep_schema + '}]}}')
        self.reply(200, head + '"result": {"content": [{"type": "text", "text": "plain answered"}]}}')

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

fn names(tools: &[UpstreamTool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

/// Logs into `captured` for the test's thread (a current-thread runtime: every task).
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

/// Starts `config` and checks that it is ready with `plain` alone, that `plain` answers,
/// and that a warning names `deep`.
async fn only_the_deep_tool_is_lost(config: UpstreamConfig, captured: &Captured) {
    let server = config.name.clone();
    let upstream = Upstream::start(config).unwrap();
    let started = Instant::now();
    let ready = tokio::time::timeout(Duration::from_secs(60), upstream.ready())
        .await
        .expect("the first connection took over a minute");
    eprintln!(
        "{server}: ready {ready:?} after {:?}, state {:?}, tools {:?}",
        started.elapsed(),
        upstream.state(),
        names(&upstream.tools())
    );
    ready.unwrap();
    assert!(matches!(upstream.state(), UpstreamState::Ready { .. }));
    assert_eq!(names(&upstream.tools()), vec!["plain"]);
    let output = upstream.call("plain", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "plain answered");
    let logged = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    let warned = format!(
        "left out tool \"deep\": its definition nests 206 levels deep, past the 127 that can be read server={server}"
    );
    assert!(
        logged
            .lines()
            .any(|line| line.contains("WARN") && line.contains(&warned)),
        "{logged}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_stdio_tool_nested_too_deep_is_left_out_and_the_rest_served() {
    let Some(python) = python(None) else { return };
    let (captured, _default) = capture();
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", STDIO);
    only_the_deep_tool_is_lost(stdio("nested", &[&python, "-u", &path]), &captured).await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_http_tool_nested_too_deep_is_left_out_and_the_rest_served() {
    let Some(python) = python(None) else { return };
    let (captured, _default) = capture();
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", HTTP);
    let port = free_port();
    let _server = Server::start(&python, &[&path, &port.to_string()], &[], port).await;
    let config = http(
        "nested_web",
        &format!("http://127.0.0.1:{port}/mcp"),
        Default::default(),
    );
    only_the_deep_tool_is_lost(config, &captured).await;
}
