//! A tool whose definition nests past the 127 levels rmcp can read costs that tool, with a
//! warning, not its server the whole listing: a server of the test's own lists a plain tool
//! beside one whose `inputSchema` nests 200 levels.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_mcp_client::{Upstream, UpstreamState, UpstreamTool};

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

#[tokio::test(flavor = "current_thread")]
async fn a_stdio_tool_nested_too_deep_is_left_out_and_the_rest_served() {
    let Some(python) = python(None) else { return };
    let (captured, _default) = capture();
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", STDIO);
    let mut config = stdio("nested", &[&python, "-u", &path]);
    config.connect_timeout = Duration::from_secs(30);
    let upstream = Upstream::start(config).unwrap();
    let started = Instant::now();
    let ready = tokio::time::timeout(Duration::from_secs(60), upstream.ready())
        .await
        .expect("the first connection took over a minute");
    eprintln!(
        "ready: {ready:?} after {:?}, state {:?}, tools {:?}",
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
    assert!(
        logged.lines().any(|line| line.contains("WARN")
            && line.contains("server=nested")
            && line.contains("left out tool \"deep\": its definition nests 206 levels deep, past the 127 that can be read")),
        "{logged}"
    );
}
