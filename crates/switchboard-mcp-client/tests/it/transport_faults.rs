//! Transport faults of both kinds of upstream, each from a server written here: a stdio
//! server whose stdout a grandchild holds open after it dies, one that closes its stdin,
//! and answers that are not JSON or nest too deep, over stdio and HTTP. Each ends the
//! connection (or the call) at once with the fault named, where it used to cost the whole
//! call deadline or leave the server `ready` and dead. And credentials the server quotes
//! back never come out of the client.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_mcp_client::{Upstream, UpstreamError, UpstreamState};

use crate::common::*;

/// A stdio server of the older era; `argv[1]`, when given, a file it writes its process id
/// to. Its tools leak the `TOKEN` it was given, answer with a broken or too deep line, or
/// close its stdin.
const STDIO: &str = r#"
import json, os, sys

out = sys.stdout.buffer
token = os.environ.get("TOKEN", "")
sys.stderr.write("starting with token " + token + "\n")
sys.stderr.flush()
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))

def send(message):
    out.write((json.dumps(message) + "\n").encode())
    out.flush()

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": message["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": name, "inputSchema": {"type": "object"}}
            for name in ["leak_error", "leak_result", "broken", "deep", "deaf", "ok"]]}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "leak_error":
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "bad token " + token}})
        elif name == "leak_result":
            send({"jsonrpc": "2.0", "id": id, "result": {"isError": True, "content": [
                {"type": "text", "text": "my token is " + token}]}})
        elif name == "broken":
            out.write(b'{"jsonrpc": "2.0", "id": ' + str(id).encode() + b', "result": {"content": [}\n')
            out.flush()
        elif name == "deaf":
            # Closes its stdin and lives on: only a failed write tells the client. Closed
            # before the answer goes out, so the client's next write cannot reach the pipe
            # while it is still open.
            os.close(0)
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "going deaf"}]}})
            import time
            time.sleep(600)
        elif name == "deep":
            out.write(b'{"jsonrpc": "2.0", "id": ' + str(id).encode() + b', "result": {"content": [], "x": ' + b"[" * 200 + b"]" * 200 + b"}}\n")
            out.flush()
        else:
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}})
"#;

/// A Streamable HTTP server of the older era on `argv[1]`: `/mcp` serves tools that quote
/// the `Authorization` sent or answer broken or too deep JSON; `/deny` answers every request
/// with a 401 whose body quotes it.
pub const HTTP: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, data, headers=(), kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def json(self, body, headers=()):
        self.reply(200, json.dumps(body).encode(), headers)

    def do_GET(self):
        self.reply(405, b"")

    def do_DELETE(self):
        self.reply(200, b"")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        sent = self.headers.get("Authorization", "")
        if self.path == "/deny":
            return self.reply(401, ("unauthorized: you sent " + sent).encode(), kind="text/plain")
        message = json.loads(body)
        id, method = message.get("id"), message.get("method")
        if method == "server/discover":
            return self.json({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
        if method == "initialize":
            return self.json({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}}, [("Mcp-Session-Id", "s1")])
        if id is None:
            return self.reply(202, b"")
        if method == "tools/list":
            return self.json({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": name, "inputSchema": {"type": "object"}}
                for name in ["leak_error", "leak_result", "broken", "deep", "huge"]]}})
        name = message["params"]["name"]
        if name == "leak_error":
            return self.json({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "bad credential " + sent}})
        if name == "leak_result":
            return self.json({"jsonrpc": "2.0", "id": id, "result": {"isError": True, "content": [
                {"type": "text", "text": "you sent " + sent}]}})
        if name == "broken":
            return self.reply(200, b'{"jsonrpc": "2.0", "id": ' + str(id).encode() + b', "result": {"content": [}')
        if name == "deep":
            return self.reply(200, b'{"jsonrpc": "2.0", "id": ' + str(id).encode() + b', "result": {"content": [], "x": ' + b"[" * 200 + b"]" * 200 + b"}}")
        self.json({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}})

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

/// The state letter of a process (`R`, `S`, `Z`, …), `None` once it is gone.
fn process_state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

async fn state_after(
    upstream: &Upstream,
    limit: Duration,
    done: impl Fn(&UpstreamState) -> bool,
) -> Duration {
    let started = Instant::now();
    while !done(&upstream.state()) {
        assert!(
            started.elapsed() < limit,
            "still {:?} after {limit:?}",
            upstream.state()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_whose_stdout_a_grandchild_holds_is_seen_to_die_and_restarted() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", STDIO);
    let server_pid = dir.path().join("server.pid");
    let sleep_pid = dir.path().join("sleep.pid");
    let line = format!(
        "sleep 600 & echo $! > {}; exec {python} -u {path} {}",
        sleep_pid.display(),
        server_pid.display()
    );
    let upstream = connected(stdio("held", &["sh", "-c", &line])).await;
    let output = upstream.call("ok", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "ok");
    let server = std::fs::read_to_string(&server_pid).unwrap();
    let sleep = std::fs::read_to_string(&sleep_pid)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(process_state(&sleep).map(|state| state != 'Z'), Some(true));
    std::fs::remove_file(&server_pid).unwrap();

    let killed = std::process::Command::new("kill")
        .args(["-KILL", &server])
        .status()
        .unwrap();
    assert!(killed.success());
    // Seen down at once, though the grandchild holds the pipe open.
    let seen = state_after(&upstream, Duration::from_secs(10), |state| {
        !matches!(state, UpstreamState::Ready { .. })
    })
    .await;
    eprintln!("seen down {seen:?} after the kill");
    // Reaped (no zombie), and the grandchild killed with its group.
    wait_until("the server reaped", Duration::from_secs(10), || {
        process_state(&server).is_none_or(|state| state != 'Z')
    });
    wait_until("the grandchild killed", Duration::from_secs(10), || {
        process_state(&sleep).is_none_or(|state| state == 'Z')
    });
    // Restarted: a new process, and calls work again.
    wait_until("restarted", Duration::from_secs(30), || server_pid.exists());
    state_after(&upstream, Duration::from_secs(30), |state| {
        matches!(state, UpstreamState::Ready { .. })
    })
    .await;
    let output = upstream.call("ok", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_closes_its_stdin_is_seen_at_the_next_write() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", STDIO);
    let mut config = stdio("deaf", &[&python, "-u", &path]);
    config.call_timeout = Duration::from_secs(30);
    let upstream = connected(config).await;
    let output = upstream.call("deaf", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "going deaf");
    let started = Instant::now();
    let error = upstream
        .call("ok", args(json!({})), None)
        .await
        .unwrap_err();
    let took = started.elapsed();
    eprintln!("the call after the stdin closed failed in {took:?}: {error}");
    assert!(took < Duration::from_secs(10), "{took:?}: {error}");
    assert!(
        matches!(error, UpstreamError::Unavailable { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("writing to its stdin failed"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_answer_that_is_not_json_or_nests_too_deep_ends_the_connection_naming_it() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", STDIO);
    for (tool, named) in [
        ("broken", "it sent invalid JSON at byte "),
        (
            "deep",
            "it sent a message nested 202 levels deep, past the 127 that can be read",
        ),
    ] {
        let mut config = stdio("bad", &[&python, "-u", &path]);
        config.call_timeout = Duration::from_secs(30);
        let upstream = connected(config).await;
        let started = Instant::now();
        let error = upstream
            .call(tool, args(json!({})), None)
            .await
            .unwrap_err();
        let took = started.elapsed();
        eprintln!("{tool}: failed in {took:?}: {error}");
        assert!(took < Duration::from_secs(10), "{took:?}: {error}");
        assert!(
            matches!(error, UpstreamError::Unavailable { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(named), "{error}");
        state_after(&upstream, Duration::from_secs(5), |state| {
            !matches!(state, UpstreamState::Ready { .. })
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_answer_that_is_not_json_or_nests_too_deep_is_named() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", HTTP);
    let port = free_port();
    let _server = Server::start(&python, &[&path, &port.to_string()], &[], port).await;
    let mut config = http(
        "web",
        &format!("http://127.0.0.1:{port}/mcp"),
        BTreeMap::new(),
    );
    config.call_timeout = Duration::from_secs(30);
    let upstream = connected(config).await;
    for (tool, named) in [
        ("broken", "it answered with invalid JSON at byte "),
        ("deep", "nested past the 127 levels that can be read"),
    ] {
        let started = Instant::now();
        let error = upstream
            .call(tool, args(json!({})), None)
            .await
            .unwrap_err();
        let took = started.elapsed();
        eprintln!("{tool}: failed in {took:?}: {error}");
        assert!(took < Duration::from_secs(10), "{took:?}: {error}");
        assert!(error.to_string().contains(named), "{error}");
    }
    // The connection serves on.
    let output = upstream.call("ok", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_a_server_quotes_back_come_out_redacted() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "stdio.py", STDIO);
    let token = "env-5ecret-4711-abcdef";
    let env = BTreeMap::from([("TOKEN".to_owned(), token.to_owned())]);
    let upstream = connected(stdio_with_env("up", &[&python, "-u", &path], env)).await;
    let error = upstream
        .call("leak_error", args(json!({})), None)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool server up rejected the call: bad token [redacted] (JSON-RPC error -32000)"
    );
    let output = upstream
        .call("leak_result", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(output.text, "my token is [redacted]");

    let path = script(dir.path(), "web.py", HTTP);
    let port = free_port();
    let _server = Server::start(&python, &[&path, &port.to_string()], &[], port).await;
    let bearer = "web-5ecret-0815-xyzxyz";
    let headers = BTreeMap::from([("Authorization".to_owned(), format!("Bearer {bearer}"))]);
    let upstream = connected(http(
        "web",
        &format!("http://127.0.0.1:{port}/mcp"),
        headers.clone(),
    ))
    .await;
    let error = upstream
        .call("leak_error", args(json!({})), None)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool server web rejected the call: bad credential [redacted] (JSON-RPC error -32000)"
    );
    let output = upstream
        .call("leak_result", args(json!({})), None)
        .await
        .unwrap();
    assert_eq!(output.text, "you sent [redacted]");

    logs();
    let denied = Upstream::start(http(
        "locked",
        &format!("http://127.0.0.1:{port}/deny"),
        headers,
    ))
    .unwrap();
    let error = denied.ready().await.unwrap_err().to_string();
    assert!(error.contains("401"), "{error}");
    assert!(
        error.contains("[redacted]") && !error.contains(bearer),
        "{error}"
    );
}
