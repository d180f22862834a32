//! A stdio MCP server whose stdout a process it started holds open
//! (`sh -c "sleep 600 & exec server"`) is seen to die: `/healthz` stops saying `ready` at
//! once, the dead server is reaped (no zombie), the `sleep` is killed with its process
//! group, the server is restarted and the next `/mcp` call works. Before, `/healthz` said
//! `ready` for as long as the grandchild lived, every call failed, and it was never
//! restarted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::mcp::{Client, names, outcome};

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{python, script};

/// A stdio server of the older era with one tool, `ok`.
const SERVER: &str = r#"
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    id, method = message.get("id"), message.get("method")
    if id is None:
        continue
    if method == "server/discover":
        reply = {"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}
    elif method == "initialize":
        reply = {"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": message["params"]["protocolVersion"],
                 "capabilities": {"tools": {}}, "serverInfo": {"name": "held", "version": "1"}}}
    elif method == "tools/list":
        reply = {"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]}}
    else:
        reply = {"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"#;

/// The state letter of a process (`R`, `S`, `Z`, …), `None` once it is gone.
fn process_state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

async fn state(gateway: &RunningGateway) -> String {
    let health: Value = client()
        .get(format!("{}/healthz", gateway.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    health["mcp_servers"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits (at most `limit`) until `done`; how long it took.
async fn within(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_whose_stdout_a_grandchild_holds_is_seen_dead_reaped_and_restarted() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", SERVER);
    let server_pid = dir.path().join("server.pid");
    let sleep_pid = dir.path().join("sleep.pid");
    let line = format!(
        "sleep 600 & echo $! > {}; echo $$ > {}; exec {python} -u {path}",
        sleep_pid.display(),
        server_pid.display()
    );
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n[[mcp_server]]\nname = \"held\"\ncommand = [\"sh\", \"-c\", {line:?}]\n{}",
        route("qwen", "openai", "http://127.0.0.1:9", "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    let mut mcp = Client::modern(&gateway, "/mcp");
    within("ready", Duration::from_secs(60), async || {
        names(&mcp.tools().await).contains(&"held_ok")
    })
    .await;
    assert_eq!(outcome(&mcp.call("held_ok", json!({})).await).0, "ok");
    let server = std::fs::read_to_string(&server_pid)
        .unwrap()
        .trim()
        .to_owned();
    let sleep = std::fs::read_to_string(&sleep_pid)
        .unwrap()
        .trim()
        .to_owned();
    std::fs::remove_file(&server_pid).unwrap();

    let killed = std::process::Command::new("kill")
        .args(["-KILL", &server])
        .status()
        .unwrap();
    assert!(killed.success());
    let seen = within("seen dead", Duration::from_secs(10), async || {
        state(&gateway).await != "ready"
    })
    .await;
    eprintln!("/healthz stopped saying ready {seen:?} after the kill");
    within("reaped", Duration::from_secs(10), async || {
        process_state(&server).is_none_or(|state| state != 'Z')
    })
    .await;
    within(
        "the grandchild killed",
        Duration::from_secs(10),
        async || process_state(&sleep).is_none_or(|state| state == 'Z'),
    )
    .await;
    within("restarted", Duration::from_secs(30), async || {
        server_pid.exists() && state(&gateway).await == "ready"
    })
    .await;
    assert_eq!(outcome(&mcp.call("held_ok", json!({})).await).0, "ok");
    gateway.stop().await.unwrap();
}
