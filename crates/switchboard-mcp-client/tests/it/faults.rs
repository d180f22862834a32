//! Servers that misbehave, each written here as a small Python program speaking JSON-RPC
//! on stdio by hand (so it can do what no SDK would): it dies, hangs, floods, answers
//! nonsense, returns megabytes, or asks for user input. Every test would fail without the
//! handling it names: a hang, a crash, unbounded memory, or an opaque error.

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_mcp_client::{UpstreamError, UpstreamState};
use switchboard_testkit::rss_mib;

use crate::common::*;

/// A server of the older era (it refuses `server/discover`, so rmcp falls back to
/// `initialize`), or of the current one with `modern` in its mode. `argv[1]` is the mode;
/// `argv[2]`, when given, a file it writes its process id to.
const FAULTY: &str = r#"
import json, os, sys, time

mode = sys.argv[1]
listening = None
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
out = sys.stdout.buffer
if mode == "stderr":
    sys.stderr.write("hello from stderr\n" + "e" * 100000 + "\n")
    sys.stderr.flush()
tools = [{"name": "work", "description": "does work", "inputSchema": {"type": "object"}}]

def send(message):
    out.write((json.dumps(message) + "\n").encode())
    out.flush()

def result(id, value):
    send({"jsonrpc": "2.0", "id": id, "result": value})

def text(id, words):
    result(id, {"content": [{"type": "text", "text": words}]})

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "subscriptions/listen":
        # Acknowledged, and never answered: the stream stays open for notifications.
        listening = id
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": {"toolsListChanged": True},
                         "_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
        continue
    if method == "server/discover":
        if mode == "silent":
            continue
        if mode.startswith("modern"):
            result(id, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {"listChanged": True}}, "ttlMs": 0, "cacheScope": "private"})
        else:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        if mode == "silent":
            continue
        result(id, {"protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "faulty", "version": "1"}})
    elif method == "tools/list":
        result(id, {"tools": tools})
    elif method == "tools/call":
        arguments = message["params"].get("arguments") or {}
        if mode == "hang":
            continue
        elif mode == "garbage":
            # Many lines that are not JSON-RPC, then the answer.
            for _ in range(20000):
                out.write(b"this is not json at all, just noise on stdout\n")
            text(id, "answered after the noise")
        elif mode == "giant-line":
            chunk = b"x" * (1024 * 1024)
            for _ in range(50):
                out.write(chunk)
            out.write(b"\n")
            out.flush()
        elif mode == "wrong-id":
            text(id + 1000, "to nobody")
            send({"jsonrpc": "2.0", "id": id, "result": "not an object"})
            send({"jsonrpc": "1.0", "identifier": id})
        elif mode == "big":
            text(id, "HEAD" + "m" * (2 * 1024 * 1024) + "TAIL")
        elif mode == "elicit":
            send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                  "params": {"message": "Which file?", "requestedSchema": {"type": "object", "properties": {"file": {"type": "string"}}}}})
            answer = json.loads(sys.stdin.readline())
            text(id, "the client answered: " + answer.get("result", {}).get("action", json.dumps(answer)))
        elif mode == "modern-elicit":
            result(id, {"resultType": "input_required", "inputRequests": {"file": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "Which file?", "requestedSchema": {"type": "object", "properties": {"file": {"type": "string"}}}}}}})
        elif mode == "grow":
            tools.append({"name": "grown", "inputSchema": {"type": "object"}})
            text(id, "grown")
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif mode == "modern-grow":
            tools.append({"name": "grown", "inputSchema": {"type": "object"}})
            text(id, "grown")
            # As the current era has it: only on a stream the client opened.
            if listening is not None:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listening}}})
        else:
            text(id, "done: " + json.dumps(arguments.get("what")) + " meta: " + json.dumps(message["params"].get("_meta", {}).get("traceparent")))
"#;

fn faulty(
    dir: &std::path::Path,
    python: &str,
    mode: &str,
) -> switchboard_mcp_client::UpstreamConfig {
    let path = script(dir, "faulty.py", FAULTY);
    stdio("fs", &[python, "-u", &path, mode])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_fails_calls_clearly_while_down_and_serves_again_after_its_restart() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "faulty.py", FAULTY);
    let pid_file = dir.path().join("pid");
    let upstream = connected(stdio(
        "fs",
        &[&python, "-u", &path, "normal", pid_file.to_str().unwrap()],
    ))
    .await;
    let first = upstream
        .call("work", args(json!({"what": 1})), Some("00-abc-def-01"))
        .await
        .unwrap();
    assert_eq!(first.text, "done: 1 meta: \"00-abc-def-01\"");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    std::fs::remove_file(&pid_file).unwrap();
    std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    // Down (or already reconnecting): a call fails at once and says why.
    let mut changes = upstream_state_changes(&upstream).await;
    let started = Instant::now();
    let error = upstream
        .call("work", args(json!({"what": 2})), None)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(error, UpstreamError::Unavailable { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("tool server fs is unavailable: "),
        "{error}"
    );
    changes.push(format!("{:?}", upstream.state()));
    // Back after the back-off: a new process serves the next call.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match upstream.call("work", args(json!({"what": 3})), None).await {
            Ok(output) => {
                assert_eq!(output.text, "done: 3 meta: null");
                break;
            }
            Err(UpstreamError::Unavailable { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("{error} after {changes:?}"),
        }
    }
    assert!(pid_file.exists(), "the server was not started again");
    assert_ne!(std::fs::read_to_string(&pid_file).unwrap(), pid);
}

/// Waits until the state leaves Ready (the supervisor saw the child die); returns the
/// states seen.
async fn upstream_state_changes(upstream: &switchboard_mcp_client::Upstream) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while matches!(upstream.state(), UpstreamState::Ready { .. }) {
        assert!(
            Instant::now() < deadline,
            "the death of the child went unnoticed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    seen.push(format!("{:?}", upstream.state()));
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_fails_the_call_at_its_deadline() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = faulty(dir.path(), &python, "hang");
    config.call_timeout = Duration::from_secs(2);
    let upstream = connected(config).await;
    let started = Instant::now();
    let error = upstream
        .call("work", args(json!({})), None)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error, UpstreamError::Timeout { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "tool server fs did not answer within 2.0 s"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_finishes_its_handshake_is_down_at_the_connect_deadline() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = faulty(dir.path(), &python, "silent");
    config.connect_timeout = Duration::from_secs(2);
    config.call_timeout = Duration::from_secs(5);
    let upstream = switchboard_mcp_client::Upstream::start(config).unwrap();
    let started = Instant::now();
    let error = upstream.ready().await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error
            .to_string()
            .contains("did not finish the MCP handshake within 2.0 s"),
        "{error}"
    );
    // Calls meanwhile fail at once.
    let call = upstream
        .call("work", args(json!({})), None)
        .await
        .unwrap_err();
    assert!(matches!(call, UpstreamError::Unavailable { .. }), "{call}");
}

#[tokio::test(flavor = "multi_thread")]
async fn noise_on_stdout_is_skipped_and_the_answer_after_it_is_read() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, "garbage")).await;
    let output = upstream.call("work", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "answered after the noise");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_50_mb_line_ends_the_connection_with_a_clear_error_and_bounded_memory() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = faulty(dir.path(), &python, "giant-line");
    config.max_message_bytes = 4 * 1024 * 1024;
    let upstream = connected(config).await;
    let before = rss_mib(std::process::id()).unwrap();
    let error = upstream
        .call("work", args(json!({})), None)
        .await
        .unwrap_err();
    let after = rss_mib(std::process::id()).unwrap();
    assert!(
        matches!(error, UpstreamError::Unavailable { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("longer than 4194304 bytes"),
        "{error}"
    );
    // 50 MB came; a few MiB of it at most was ever held.
    assert!(
        after - before < 30.0,
        "resident memory grew {:.1} MiB",
        after - before
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_to_other_ids_and_invalid_json_rpc_fail_the_call_not_the_connection() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = faulty(dir.path(), &python, "wrong-id");
    config.call_timeout = Duration::from_secs(2);
    let upstream = connected(config).await;
    let started = Instant::now();
    let error = upstream
        .call("work", args(json!({})), None)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The answer to another id is ignored; the one that is not a result fails the call.
    assert_eq!(
        error.to_string(),
        "tool server fs rejected the call: it answered with something that is not a tool result"
    );
    assert!(matches!(upstream.state(), UpstreamState::Ready { .. }));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2_mb_result_is_cut_to_its_head_and_tail_with_a_note() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, "big")).await;
    let output = upstream.call("work", args(json!({})), None).await.unwrap();
    assert!(output.text.starts_with("HEADmmm"), "{}", &output.text[..20]);
    assert!(output.text.ends_with("mmmTAIL"));
    let cut = 2 * 1024 * 1024 + 8 - 64 * 1024;
    assert!(
        output.text.contains(&format!("\n[… {cut} bytes cut …]\n")),
        "no note"
    );
    assert!(output.text.len() < 64 * 1024 + 100, "{}", output.text.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_era_request_for_user_input_is_declined() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, "elicit")).await;
    let output = upstream.call("work", args(json!({})), None).await.unwrap();
    assert_eq!(output.text, "the client answered: decline");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_current_era_input_required_result_becomes_a_tool_error() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, "modern-elicit")).await;
    match upstream.state() {
        UpstreamState::Ready {
            protocol_version, ..
        } => assert_eq!(protocol_version, "2026-07-28"),
        other => panic!("{other:?}"),
    }
    let output = upstream.call("work", args(json!({})), None).await.unwrap();
    assert!(output.is_error);
    assert_eq!(
        output.text,
        "Error: tool server fs asked for user input (elicitation), which the gateway cannot give"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_changed_notification_refreshes_the_tools_and_bumps_the_counter() {
    list_changed("grow").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_the_current_era_list_changes_come_on_a_subscription_that_refreshes_the_tools() {
    list_changed("modern-grow").await;
}

async fn list_changed(mode: &str) {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, mode)).await;
    let mut changes = upstream.changes();
    let seen = *changes.borrow_and_update();
    assert_eq!(upstream.tools().len(), 1);
    upstream.call("work", args(json!({})), None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert!(*changes.borrow() > seen);
    let names: Vec<String> = upstream.tools().into_iter().map(|tool| tool.name).collect();
    assert_eq!(names, ["work", "grown"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_last_handle_ends_the_child() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "faulty.py", FAULTY);
    let pid_file = dir.path().join("pid");
    let upstream = connected(stdio(
        "fs",
        &[&python, "-u", &path, "normal", pid_file.to_str().unwrap()],
    ))
    .await;
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(proc.exists());
    let clone = upstream.clone();
    drop(upstream);
    clone.call("work", args(json!({})), None).await.unwrap();
    drop(clone);
    let deadline = Instant::now() + Duration::from_secs(10);
    // Gone, or a zombie until reaped: either way no longer running.
    while proc.exists()
        && !std::fs::read_to_string(proc.join("status"))
            .unwrap_or_default()
            .contains("zombie")
    {
        assert!(Instant::now() < deadline, "the child outlived its upstream");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// One thread, so the subscriber set for this test sees the stderr reader's task too.
#[tokio::test(flavor = "current_thread")]
async fn the_childs_stderr_is_logged_by_line_under_its_name_and_long_lines_are_cut() {
    let Some(python) = python(None) else { return };
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let dir = tempfile::tempdir().unwrap();
    let upstream = connected(faulty(dir.path(), &python, "stderr")).await;
    upstream.call("work", args(json!({})), None).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logged = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        let hello = logged
            .lines()
            .any(|line| line.contains("stderr: hello from stderr") && line.contains("server=fs"));
        let cut = logged
            .lines()
            .any(|line| line.contains("[… 95904 bytes cut]"));
        if hello && cut {
            assert!(logged.len() < 20_000, "{} bytes logged", logged.len());
            break;
        }
        assert!(Instant::now() < deadline, "{logged}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
