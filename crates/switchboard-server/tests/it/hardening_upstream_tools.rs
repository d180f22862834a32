//! Upstream MCP servers that cost the gateway through their tools rather than their calls:
//! one tool's schema built to be dear to compile, and servers a request names by URL that
//! never answer. Each hostile server is the test's own (a Python program speaking JSON-RPC
//! by hand, or a loopback socket that accepts and says nothing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::Config;
use switchboard_testkit::mcp::{python, script};
use switchboard_testkit::{OpenAiScript, ScriptedServer, rss_mib};

/// A stdio server of the older era listing `small`, a plain tool; `huge`, whose input
/// schema nests `anyOf` and `allOf` 15 deep, each level repeating the one below twice
/// (about 4 MB of JSON, 32,768 copies of the innermost object); and `deep`, small but
/// nesting them 12 deep.
const DEAR_SCHEMA: &str = r#"
import json, sys

def nest(depth):
    if depth == 0:
        return {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}}}
    child = nest(depth - 1)
    return {"anyOf" if depth % 2 else "allOf": [child, child]}

huge = {"type": "object", "properties": {"x": nest(15)}}
deep = {"type": "string"}
for depth in range(12):
    deep = {"anyOf": [deep, {"type": "null"}]}
tools = [
    {"name": "small", "description": "plain", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "huge", "description": "dear", "inputSchema": huge},
    {"name": "deep", "description": "nested", "inputSchema": {"type": "object", "properties": {"d": deep}}},
]
out = sys.stdout.buffer
for line in sys.stdin:
    message = json.loads(line)
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "server/discover":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}) + "\n").encode())
    elif method == "initialize":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "dear", "version": "1"}}}) + "\n").encode())
    elif method == "tools/list":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}) + "\n").encode())
    out.flush()
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_whose_schema_is_dear_to_compile_is_left_out_and_healthz_stays_prompt() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "dear.py", DEAR_SCHEMA);
    let before = rss_mib(std::process::id()).unwrap_or(0.0);
    let gateway = start(
        &format!(
            "[[mcp_server]]\nname = \"dear\"\ncommand = [{}, \"-u\", {}]\n",
            json!(python),
            json!(path)
        ),
        &[],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let (mut slowest, mut peak) = (Duration::ZERO, before);
    let health = loop {
        let asked = Instant::now();
        let health: Value = client()
            .get(format!("{}/healthz", gateway.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        slowest = slowest.max(asked.elapsed());
        peak = peak.max(rss_mib(std::process::id()).unwrap_or(0.0));
        let server = &health["mcp_servers"][0];
        if server["state"] == "ready" && server["tools"].as_u64().is_some_and(|n| n > 0) {
            break health;
        }
        assert!(Instant::now() < deadline, "{health}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "slowest /healthz {slowest:?}; RSS peak +{:.0} MiB",
        peak - before
    );
    // Only the plain tool is offered.
    assert_eq!(health["mcp_servers"][0]["tools"], 1, "{health}");
    // Generous for a loaded machine; compiling the dear schema stalled it for seconds and
    // took over a gigabyte.
    assert!(slowest < Duration::from_secs(2), "{slowest:?}");
    assert!(peak - before < 400.0, "RSS grew {:.0} MiB", peak - before);
}

/// A loopback port that accepts connections and never answers; `None` for its address
/// once dropped. The sockets are held until the task ends with the test.
async fn silent() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{address}/mcp")
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_named_by_url_connect_together_within_the_deadline_and_are_bounded_in_number() {
    let backend = ScriptedServer::responding(|_| {
        OpenAiScript::new()
            .text("no tools today")
            .finish("stop", 5, 3)
            .reply()
    })
    .await;
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\nrequest_timeout_secs = 3\nmcp_allowed_urls = [\"http://127.0.0.1:*/*\"]\n{}",
        route("local", "openai", &format!("{}/v1", backend.base), "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = switchboard_server::RunningGateway::start(&config, &|_| None)
        .await
        .unwrap();
    let mut urls = Vec::new();
    for _ in 0..9 {
        urls.push(silent().await);
    }
    let tools = |count: usize| {
        urls[..count]
            .iter()
            .enumerate()
            .map(|(index, url)| {
                json!({"type": "mcp", "server_label": format!("quiet{index}"),
                    "server_url": url, "require_approval": "never"})
            })
            .collect::<Vec<_>>()
    };
    // Eight, the bound: waited for together, within the request's timeout.
    let started = Instant::now();
    let answer = post_to(
        &gateway,
        "/v1/responses",
        &json!({"model": "local", "input": "hi", "tools": tools(8)}),
    )
    .await;
    let took = started.elapsed();
    eprintln!("8 silent servers: {took:?}");
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = answer.json();
    let listings: Vec<&Value> = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "mcp_list_tools")
        .collect();
    assert_eq!(listings.len(), 8, "{body}");
    for (index, listing) in listings.iter().enumerate() {
        let error = listing["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(&format!("tool server quiet{index} is unavailable")),
            "{listing}"
        );
    }
    // One after another they took 10 s each.
    assert!(took < Duration::from_secs(15), "{took:?}");
    // Nine: refused before any is reached.
    let asked = backend.requests().len();
    let started = Instant::now();
    let answer = post_to(
        &gateway,
        "/v1/responses",
        &json!({"model": "local", "input": "hi", "tools": tools(9)}),
    )
    .await;
    let error = answer.error(400);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("a request may name at most 8 MCP servers by URL"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(backend.requests().len(), asked);
}

/// A stdio server of the older era listing `argv[1]` tools of about 300 bytes each, in one
/// page.
const MANY_TOOLS: &str = r#"
import json, sys

count = int(sys.argv[1])
tools = [{"name": "t%d" % n, "description": "d" * 300, "inputSchema": {"type": "object"}} for n in range(count)]
out = sys.stdout.buffer
for line in sys.stdin:
    message = json.loads(line)
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "server/discover":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}) + "\n").encode())
    elif method == "initialize":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "many", "version": "1"}}}) + "\n").encode())
    elif method == "tools/list":
        out.write((json.dumps({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}) + "\n").encode())
    out.flush()
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_server_listing_past_its_bound_is_down_with_the_reason_and_its_tools_reach_no_backend() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "many.py", MANY_TOOLS);
    let backend = ScriptedServer::responding(|_| {
        OpenAiScript::new()
            .text("no tools today")
            .finish("stop", 5, 3)
            .reply()
    })
    .await;
    let before = rss_mib(std::process::id()).unwrap_or(0.0);
    // 30,000 tools past the default bound; six past a bound of five.
    let servers = format!(
        "[[mcp_server]]\nname = \"wide\"\ncommand = [{python}, \"-u\", {path}, \"30000\"]\n\n[[mcp_server]]\nname = \"six\"\ncommand = [{python}, \"-u\", {path}, \"6\"]\nmax_tools = 5\n",
        python = json!(python),
        path = json!(path)
    );
    let gateway = start(
        &servers,
        &[route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            "mcp_servers = [\"wide\", \"six\"]",
        )],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let health = loop {
        let health: Value = client()
            .get(format!("{}/healthz", gateway.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let servers = health["mcp_servers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if servers.iter().all(|server| {
            server["error"]
                .as_str()
                .is_some_and(|error| error.contains("(max_tools)"))
        }) {
            break health;
        }
        assert!(Instant::now() < deadline, "{health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (server, bound) in health["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .zip([1000, 5])
    {
        assert!(
            ["down", "restarting"].contains(&server["state"].as_str().unwrap()),
            "{server}"
        );
        assert_eq!(server["tools"], 0, "{server}");
        assert!(
            server["error"]
                .as_str()
                .unwrap()
                .contains(&format!("it lists more than {bound} tools (max_tools)")),
            "{server}"
        );
    }
    let answer = post(
        &gateway,
        &json!({"model": "local", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let sent = &backend.requests()[0].body;
    let offered = sent["tools"].as_array().map_or(0, Vec::len);
    let grown = rss_mib(std::process::id()).unwrap_or(0.0) - before;
    eprintln!(
        "backend request: {} bytes, {offered} tools; RSS +{grown:.0} MiB",
        sent.to_string().len()
    );
    assert_eq!(offered, 0, "{sent}");
}
