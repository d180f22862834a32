//! What MCP peers can make the `switchboard` process hold: its log (a client's megabyte
//! `clientInfo`, a server's flood of notifications and megabyte `instructions`, all of
//! which the MCP library writes whole at INFO) and, over stdio, the answers to a client that
//! never reads them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, characters, switchboard};

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::mcp::python;
use switchboard_testkit::rss_mib;

/// A server of the older era that floods: a megabyte of `instructions`, and as it answers
/// `tools/list`, `argv[1]` notifications first.
const NOISY: &str = r#"
import json, sys

flood = int(sys.argv[1])
out = sys.stdout.buffer

def send(message):
    out.write((json.dumps(message) + "\n").encode())

for line in sys.stdin:
    message = json.loads(line)
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "noisy", "version": "1"},
            "instructions": "i" * (1024 * 1024)}})
    elif method == "tools/list":
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "n" * 200}}
        for _ in range(flood):
            send(note)
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "L" * (1024 * 1024)}})
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "work", "inputSchema": {"type": "object"}}]}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
    out.flush()
"#;

const FLOOD: usize = 200_000;

/// `serve` with the noisy server flooding `flood` notifications, once the gateway has read
/// through them (the server is listed then); `env` for its process.
async fn noisy(dir: &std::path::Path, python: &str, flood: usize, env: &[(&str, &str)]) -> Served {
    let script = dir.join("noisy.py");
    std::fs::write(&script, NOISY).unwrap();
    let config = dir.join("switchboard.toml");
    std::fs::write(
        &config,
        format!(
            "characters = {}\n[[mcp_server]]\nname = \"noisy\"\ncommand = [{}, \"-u\", {}, \"{flood}\"]\n",
            json!(characters()),
            json!(python),
            json!(script.to_str().unwrap()),
        ),
    )
    .unwrap();
    let served = Served::start(&config, "127.0.0.1:0", env);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let health: Value = reqwest::get(format!("{}/healthz", served.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if health["mcp_servers"][0]["tools"] == 1 {
            return served;
        }
        assert!(
            Instant::now() < deadline,
            "{health}\n{}",
            served.log().len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_peers_cannot_fill_the_log() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = noisy(dir.path(), &python, FLOOD, &[]).await;
    let client = reqwest::Client::new();

    // A client of the older era with a megabyte name, three times.
    for _ in 0..3 {
        let opened = client
            .post(format!("{}/mcp", served.base))
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c".repeat(1024 * 1024), "version": "1"}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(opened.status(), 200);
        let session = opened.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let initialized = client
            .post(format!("{}/mcp", served.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .send()
            .await
            .unwrap();
        assert_eq!(initialized.status(), 202);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let log = served.log();
    eprintln!(
        "log after {FLOOD} notifications and 3 clients' 1 MB names: {} bytes",
        log.len()
    );
    assert!(
        log.len() < 64 * 1024,
        "{} bytes of log; its start:\n{}",
        log.len(),
        &log[..log.len().min(2000)]
    );
    // No line of it quotes a peer's megabyte.
    assert!(!log.contains(&"c".repeat(1000)) && !log.contains(&"i".repeat(1000)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_log_message_is_cut_where_the_gateway_logs_it() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = noisy(
        dir.path(),
        &python,
        1,
        &[("RUST_LOG", "info,switchboard_mcp_client=debug")],
    )
    .await;
    let log = served.wait_for_log("log message", 2);
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    eprintln!("a server's 1 MB log message, logged at debug: longest log line {longest} bytes");
    assert!(longest < 16 * 1024, "a log line of {longest} bytes");
}

/// Requests a client writes without reading an answer; each answer is the tool list.
const UNREAD: usize = 50_000;

#[test]
fn switchboard_mcp_stops_reading_while_its_answers_are_not_read() {
    let mut child = switchboard()
        .args(["mcp", "--characters", &characters()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    // Held, never read.
    let _stdout = child.stdout.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut lines = String::new();
        lines.push_str(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}})
            .to_string(),
        );
        lines.push('\n');
        lines.push_str(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        lines.push('\n');
        for id in 1..=UNREAD {
            lines.push_str(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
                    .to_string(),
            );
            lines.push('\n');
        }
        // Blocks once the server stops reading: the test then ends it by killing the server.
        let _ = stdin.write_all(lines.as_bytes());
    });

    let mut peak: f64 = 0.0;
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until && !writer.is_finished() {
        peak = peak.max(rss_mib(pid).unwrap_or(0.0));
        std::thread::sleep(Duration::from_millis(100));
    }
    // A few seconds more for answers already read to be made.
    let settle = Instant::now() + Duration::from_secs(3);
    while Instant::now() < settle {
        peak = peak.max(rss_mib(pid).unwrap_or(0.0));
        std::thread::sleep(Duration::from_millis(100));
    }
    let all_read = writer.is_finished();
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = writer.join();
    eprintln!("{UNREAD} unread tool lists: peak RSS {peak:.0} MiB, every request read: {all_read}");
    assert!(
        !all_read,
        "the server read every request while none of its answers was read"
    );
    assert!(peak < 200.0, "peak RSS {peak:.0} MiB");
}
