//! A server's whole tool listing is bounded, every page together: pages, tools and bytes.
//! Each hostile server here is a small Python program speaking JSON-RPC on stdio by hand;
//! without the bounds the first lists until its deadline, gathering pages all the while,
//! and the second's 30,000 tools are accepted whole.

use std::time::{Duration, Instant};

use switchboard_mcp_client::{Upstream, UpstreamState};
use switchboard_testkit::rss_mib;

use crate::common::*;

/// `argv[1]` is the mode: `endless` (pages of 20 tools, each ~1 KB, whose `nextCursor`
/// never ends), `empty` (empty pages whose `nextCursor` never ends), `wide` (30,000 tools
/// in one page), `fat` (one page of 200 tools of ~30 KB each: 6 MB in all); `grow` and
/// `grow-hang` list one tool until it is called, then say their list changed and list
/// 2,000 tools, or never answer the listing.
const LISTER: &str = r#"
import json, sys

mode = sys.argv[1]
out = sys.stdout.buffer

def send(message):
    out.write((json.dumps(message) + "\n").encode())
    out.flush()

def tool(name, size):
    return {"name": name, "description": "d" * size, "inputSchema": {"type": "object"}}

pages = 0
grown = False
for line in sys.stdin:
    message = json.loads(line)
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "lister", "version": "1"}}})
    elif method == "tools/call":
        grown = True
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "grown"}]}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "tools/list":
        pages += 1
        if mode.startswith("grow"):
            if grown and mode == "grow-hang":
                continue
            result = {"tools": [tool("t%d" % n, 10) for n in range(2000 if grown else 1)]}
        elif mode == "endless":
            tools = [tool("t%d_%d" % (pages, n), 1000) for n in range(20)]
            result = {"tools": tools, "nextCursor": "page-%d" % pages}
        elif mode == "empty":
            result = {"tools": [], "nextCursor": "page-%d" % pages}
        elif mode == "wide":
            result = {"tools": [tool("t%d" % n, 300) for n in range(30000)]}
        else:
            result = {"tools": [tool("t%d" % n, 30000) for n in range(200)]}
        send({"jsonrpc": "2.0", "id": id, "result": result})
"#;

/// Starts a lister in `mode` and waits for its first connection to settle; the error it
/// ended with, how long that took, and the test process's RSS growth meanwhile.
async fn settle(mode: &str) -> (String, Duration, f64) {
    let Some(python) = python(None) else {
        return (String::new(), Duration::ZERO, 0.0);
    };
    logs();
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "lister.py", LISTER);
    let before = rss_mib(std::process::id()).unwrap_or(0.0);
    let started = Instant::now();
    let upstream = Upstream::start(stdio("lister", &[&python, "-u", &path, mode])).unwrap();
    let settled = tokio::time::timeout(Duration::from_secs(60), upstream.ready())
        .await
        .expect("the first connection did not settle within a minute");
    let took = started.elapsed();
    let grown = rss_mib(std::process::id()).unwrap_or(0.0) - before;
    let error = settled.expect_err("a listing past the bounds was accepted");
    match upstream.state() {
        UpstreamState::Down { error: why, .. } => {
            assert!(error.to_string().contains(&why), "{error} / {why}");
        }
        other => panic!("not down: {other:?}"),
    }
    assert!(
        upstream.tools().is_empty(),
        "{} tools",
        upstream.tools().len()
    );
    eprintln!("{mode}: {error} after {took:?}, RSS +{grown:.0} MiB");
    (error.to_string(), took, grown)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listing_whose_pages_never_end_puts_the_server_down_with_the_reason() {
    let (error, took, grown) = settle("endless").await;
    if error.is_empty() {
        return;
    }
    assert!(
        error.contains("more than 1000 tools (max_tools)"),
        "{error}"
    );
    // The call deadline is 20 s; the bound is met long before it.
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(grown < 200.0, "RSS grew {grown:.0} MiB");
    let (error, took, _) = settle("empty").await;
    assert!(error.contains("more than 100 pages"), "{error}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listing_past_the_bound_on_tools_or_bytes_puts_the_server_down() {
    let (error, _, grown) = settle("wide").await;
    if error.is_empty() {
        return;
    }
    assert!(
        error.contains("more than 1000 tools (max_tools)"),
        "{error}"
    );
    assert!(grown < 300.0, "RSS grew {grown:.0} MiB");
    let (error, _, _) = settle("fat").await;
    assert!(
        error.contains("more than 4194304 bytes (max_list_bytes)"),
        "{error}"
    );
}

/// After a change the server lists past the bound, or does not answer the listing: either
/// way it is down with the reason, within the call deadline.
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_after_a_change_is_bounded_and_under_the_call_deadline() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "lister.py", LISTER);
    for (mode, why) in [
        (
            "grow",
            "it could not list its tools: it lists more than 1000 tools (max_tools)",
        ),
        ("grow-hang", "it did not list its tools within 2.0 s"),
    ] {
        let mut config = stdio("lister", &[&python, "-u", &path, mode]);
        config.call_timeout = Duration::from_secs(2);
        let upstream = connected(config).await;
        assert_eq!(upstream.tools().len(), 1);
        let started = Instant::now();
        upstream
            .call("t0", args(serde_json::json!({})), None)
            .await
            .unwrap();
        let mut state = upstream.state();
        while !matches!(&state, UpstreamState::Down { error, .. } if error == why) {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{mode}: {state:?}, {} tools",
                upstream.tools().len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            state = upstream.state();
        }
        eprintln!("{mode}: down after {:?}: {why}", started.elapsed());
    }
}
