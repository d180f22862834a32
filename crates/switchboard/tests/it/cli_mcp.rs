//! `switchboard mcp` as an MCP client spawns it: the protocol alone on stdout (logs on
//! stderr), the characters' tools named as at the gateway's `/mcp`, calls answered as the
//! gateway answers them, and a saved character file announced with
//! `notifications/tools/list_changed`; and the official MCP Python SDK spawning it, in both
//! eras, seeing the same `Error: …` results as over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{characters, switchboard};
use serde_json::{Value, json};

/// A spawned `switchboard mcp`, with what it writes on stdout line by line.
struct Spawned {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Spawned {
    fn start(dir: &Path) -> Self {
        let mut child = switchboard()
            .args(["mcp", "--characters"])
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message on stdout; every line must be one JSON-RPC message.
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("no message from switchboard mcp");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("not JSON-RPC ({error}): {line}"))
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.next();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_serves_the_characters_tools_and_announces_a_saved_file() {
    let dir = tempfile::tempdir().unwrap();
    let narrator = Path::new(&characters()).join("narrator.js");
    std::fs::copy(&narrator, dir.path().join("narrator.js")).unwrap();
    let mut server = Spawned::start(dir.path());
    let initialized = server.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}),
    );
    assert_eq!(initialized["result"]["serverInfo"]["name"], "switchboard");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = server.request(2, "tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"][0]["name"],
        "narrator_log_story_event"
    );
    let called = server.request(
        3,
        "tools/call",
        json!({"name": "narrator_log_story_event", "arguments": {"event": "over stdio"}}),
    );
    assert_eq!(
        called["result"]["content"][0]["text"],
        "Logged story event: over stdio"
    );
    assert_eq!(called["result"]["isError"], false);
    let refused = server.request(
        4,
        "tools/call",
        json!({"name": "narrator_log_story_event", "arguments": {}}),
    );
    assert_eq!(
        refused["result"]["content"][0]["text"],
        "Error: Missing required parameter: event"
    );
    assert_eq!(refused["result"]["isError"], true);
    let unknown = server.request(5, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    std::fs::copy(
        Path::new(&characters()).join("game-master.js"),
        dir.path().join("game-master.js"),
    )
    .unwrap();
    let changed = server.next();
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let listed = server.request(6, "tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"][0]["name"],
        "game-master_roll_dice"
    );
}

#[test]
fn the_official_python_sdk_spawns_it_and_lists_and_calls_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        Path::new(&characters()).join("narrator.js"),
        dir.path().join("narrator.js"),
    )
    .unwrap();
    std::fs::copy(
        here.join("../switchboard-characters/tests/fixtures/runtime/toolbox.js"),
        dir.path().join("toolbox.js"),
    )
    .unwrap();
    let script = here.join("../switchboard-server/tests/mcp/client.py");
    for (mode, era) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let output = Command::new("python3")
            .arg(&script)
            .args(["stdio", mode, env!("CARGO_BIN_EXE_switchboard")])
            .arg(dir.path())
            .output()
            .unwrap_or_else(|error| panic!("cannot run python3 ({error}); run scripts/test"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(
            output.status.code(),
            Some(3),
            "the official mcp Python SDK is not installed; run scripts/test (it installs tests/requirements.txt)\n{stderr}"
        );
        assert!(output.status.success(), "{mode}: {stderr}");
        let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(seen["protocol_version"], era, "{seen}");
        let calls = &seen["calls"];
        assert_eq!(calls["ok"]["text"], "Logged story event: the SDK called");
        for case in ["bad_argument", "throws", "past_deadline"] {
            assert_eq!(calls[case]["is_error"], true, "{case}: {seen}");
            assert!(
                calls[case]["text"].as_str().unwrap().starts_with("Error: "),
                "{case}"
            );
        }
        assert_eq!(
            calls["past_deadline"]["text"],
            "Error: Tool execution timed out (exceeded 100ms)"
        );
        assert!(
            calls["past_deadline"]["seconds"].as_f64().unwrap() < 0.5,
            "{seen}"
        );
    }
}
