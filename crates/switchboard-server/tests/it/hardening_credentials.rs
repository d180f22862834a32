//! Credentials an upstream MCP server quotes back (the `Authorization` header it was sent,
//! the `env` value it was started with) in a JSON-RPC error, an `isError` result, a 401
//! body or its stderr reach nobody: not the `/mcp` client, not the model in its next
//! request, not the chat client, not `/healthz`, not a log line at INFO or above. Each is
//! cut to `[redacted]`, as a route's credentials are.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::access::captured_logs;
use crate::common;
use crate::mcp::{Client, names, outcome};

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{ServerProcess, free_port, python, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer, message_text};

const ENV_SECRET: &str = "env-5ecret-4711-abcdef";
const HEADER_SECRET: &str = "web-5ecret-0815-xyzxyz";
const DENIED_SECRET: &str = "deny-5ecret-2323-qwerty";
const REQUEST_SECRET: &str = "req-5ecret-9191-asdfgh";

/// Over stdio (`TOKEN` from its `env`) or, with a port, over Streamable HTTP (`/mcp`, the
/// `Authorization` sent; `/deny` answers everything with a 401 quoting it): two tools that
/// quote the credential, in a JSON-RPC error and in an `isError` result. The stdio one
/// says it on stderr too.
const LEAKY: &str = r#"
import json, os, sys

def answer(message, credential):
    id, method = message.get("id"), message.get("method")
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "leaky", "version": "1"}}}
    if id is None:
        return None
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "leak_error", "description": "quotes " + credential, "inputSchema": {"type": "object"}},
            {"name": "leak_result", "inputSchema": {"type": "object"}}]}}
    if message["params"]["name"] == "leak_error":
        return {"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "bad credential " + credential}}
    return {"jsonrpc": "2.0", "id": id, "result": {"isError": True, "content": [
        {"type": "text", "text": "you sent " + credential}]}}

if len(sys.argv) < 2:
    token = os.environ["TOKEN"]
    sys.stderr.write("starting with token " + token + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        reply = answer(json.loads(line), token)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
else:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, data, kind, headers=()):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_DELETE(self):
            self.reply(200, b"", "text/plain")

        def do_GET(self):
            self.reply(405, b"", "text/plain")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            sent = self.headers.get("Authorization", "")
            if self.path.startswith("/deny"):
                return self.reply(401, ("unauthorized: you sent " + sent).encode(), "text/plain")
            reply = answer(json.loads(body), sent)
            if reply is None:
                return self.reply(202, b"", "text/plain")
            self.reply(200, json.dumps(reply).encode(), "application/json", [("Mcp-Session-Id", "s1")])

    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

/// A model that calls both servers' leaking tools, then answers with what the results said.
async fn model() -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            let read: Vec<String> = messages
                .iter()
                .filter(|message| message["role"] == "tool")
                .map(message_text)
                .collect();
            OpenAiScript::new()
                .text(&format!("The tools said: {}", read.join(" / ")))
                .finish("stop", 20, 7)
                .reply()
        } else {
            OpenAiScript::new()
                .tool_call("call_leak_1", "up_leak_error", &["{}"])
                .tool_call("call_leak_2", "web_leak_result", &["{}"])
                .finish("tool_calls", 10, 5)
                .reply()
        }
    })
    .await
}

fn leaks(text: &str) -> Option<&'static str> {
    [ENV_SECRET, HEADER_SECRET, DENIED_SECRET, REQUEST_SECRET]
        .into_iter()
        .find(|secret| text.contains(secret))
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_an_mcp_server_quotes_back_reach_nobody() {
    let Some(python) = python(None) else { return };
    let logs = captured_logs();
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "leaky.py", LEAKY);
    let port = free_port();
    let _http = ServerProcess::start(&python, &[&path, &port.to_string()], &[], port).await;
    let backend = model().await;
    let settings = format!(
        "[[mcp_server]]\nname = \"up\"\ncommand = [{python:?}, \"-u\", {path:?}]\nenv = {{ TOKEN = \"{ENV_SECRET}\" }}\n\
         [[mcp_server]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ authorization = \"Bearer {HEADER_SECRET}\" }}\n\
         [[mcp_server]]\nname = \"locked\"\nurl = \"http://127.0.0.1:{port}/deny\"\nheaders = {{ authorization = \"Bearer {DENIED_SECRET}\" }}\n"
    );
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\nmcp_allowed_urls = [\"http://127.0.0.1:{port}/**\"]\n{settings}\n{}",
        route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            "mcp_servers = [\"up\", \"web\"]"
        )
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();

    // The /mcp client: the tools' descriptions, a JSON-RPC error and an isError result.
    let mut mcp = Client::modern(&gateway, "/mcp");
    let deadline = Instant::now() + Duration::from_secs(60);
    let tools = loop {
        let tools = mcp.tools().await;
        let listed = names(&tools);
        if listed.contains(&"up_leak_error") && listed.contains(&"web_leak_error") {
            break tools;
        }
        assert!(Instant::now() < deadline, "{listed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let listed = serde_json::to_string(&tools).unwrap();
    assert_eq!(leaks(&listed), None, "{listed}");
    for (tool, quoted) in [
        ("up_leak_error", "bad credential [redacted]"),
        ("up_leak_result", "you sent [redacted]"),
        ("web_leak_error", "bad credential [redacted]"),
        ("web_leak_result", "you sent [redacted]"),
    ] {
        let answer = mcp.call(tool, json!({})).await;
        let (text, is_error) = outcome(&answer);
        assert!(is_error, "{answer}");
        assert_eq!(leaks(&answer.to_string()), None, "{answer}");
        assert!(text.contains(quoted), "{tool}: {text}");
    }

    // The model's next request and the chat client's answer.
    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(&json!({"model": "local", "messages": [{"role": "user", "content": "check"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer = response.text().await.unwrap();
    assert_eq!(leaks(&answer), None, "{answer}");
    assert!(answer.contains("[redacted]"), "{answer}");
    let requests = backend.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let offered = requests[0].body.to_string();
    assert_eq!(leaks(&offered), None, "{offered}");
    let next = requests[1].body.to_string();
    assert_eq!(leaks(&next), None, "{next}");
    assert!(next.contains("[redacted]"), "{next}");

    // /healthz: the 401 quoting its credential is the reason `locked` is down.
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = loop {
        let health: Value = client()
            .get(format!("{}/healthz", gateway.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if health["mcp_servers"][2]["error"].is_string() || Instant::now() > deadline {
            break health;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let locked = &health["mcp_servers"][2];
    assert_eq!(locked["name"], "locked", "{health}");
    assert!(
        locked["error"].as_str().unwrap().contains("401"),
        "{health}"
    );
    assert_eq!(leaks(&health.to_string()), None, "{health}");

    // A server a Responses request names, with its own credential, refusing it in a 401.
    let response = client()
        .post(format!("{}/v1/responses", gateway.base_url()))
        .json(
            &json!({"model": "local", "input": "check", "tools": [{"type": "mcp",
            "server_label": "denied", "require_approval": "never",
            "server_url": format!("http://127.0.0.1:{port}/deny/for-requests"),
            "headers": {"Authorization": format!("Bearer {REQUEST_SECRET}")}}]}),
        )
        .send()
        .await
        .unwrap();
    let answer: Value = response.json().await.unwrap();
    // The request's own `tools` are echoed to it, as OpenAI does; what came from the
    // server is its output, which says only that the server failed: a server a request
    // names by URL never has its answer quoted to the client (issue 36 item 6).
    let output = answer["output"].to_string();
    assert!(output.contains("could not be reached"), "{answer}");
    assert_eq!(leaks(&output), None, "{answer}");
    gateway.stop().await.unwrap();

    // The log, at the levels a gateway logs at.
    let log = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let leaking: Vec<&str> = log
        .lines()
        .filter(|line| !line.contains("DEBUG") && !line.contains("TRACE"))
        .filter(|line| leaks(line).is_some())
        .collect();
    assert!(leaking.is_empty(), "{leaking:#?}");
    assert!(log.contains("starting with token [redacted]"), "{log}");
}
