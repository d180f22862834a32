//! The tool loop's bounds against a model and an MCP server that push them: a model that
//! calls a tool returning 65,000 bytes twenty times a round, forever (the conversation's
//! bound, `max_tool_conversation_bytes`, ends it in each API's terms); a model that calls a
//! slow tool a thousand times in one answer (`max_tool_calls_per_round`, and the calls
//! running at once per request and per server); and a tool with an `outputSchema` whose
//! result is cut, read by the official Python SDK at `/mcp`. The server is a Python program
//! of the test's own speaking JSON-RPC on stdio by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::gateway_tools::gateway;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::mcp::{python, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer, rss_mib};

/// `dump` answers 65,000 bytes (under `max_result_bytes`); `slow` takes 0.3 s, and the
/// server writes how many calls of it ran and the most at once to the file `argv[1]`;
/// `structured` declares an `outputSchema` and answers 2 MiB of structured content.
const HOSTILE: &str = r#"
import json, sys, threading, time

record = sys.argv[1]
out = sys.stdout.buffer
lock = threading.Lock()
seen = {"running": 0, "peak": 0, "calls": 0}
tools = [
    {"name": "dump", "description": "65,000 bytes", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "takes 0.3 s", "inputSchema": {"type": "object"}},
    {"name": "structured", "description": "2 MiB of structured content",
     "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {"data": {"type": "string"}}, "required": ["data"]}},
]

def send(message):
    with lock:
        out.write((json.dumps(message) + "\n").encode())
        out.flush()

def answer(id, words, structured=None):
    result = {"content": [{"type": "text", "text": words}]}
    if structured is not None:
        result["structuredContent"] = structured
    send({"jsonrpc": "2.0", "id": id, "result": result})

def slow(id):
    with lock:
        seen["running"] += 1
        seen["calls"] += 1
        seen["peak"] = max(seen["peak"], seen["running"])
        with open(record, "w") as f:
            f.write(json.dumps(seen))
    time.sleep(0.3)
    with lock:
        seen["running"] -= 1
    answer(id, "slept")

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "dump":
            answer(id, "d" * 65000)
        elif name == "slow":
            threading.Thread(target=slow, args=(id,), daemon=True).start()
        else:
            data = "s" * (2 * 1024 * 1024)
            answer(id, json.dumps({"data": data}), {"data": data})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// `[[mcp_server]]` for the hostile server as `hostile`, recording into `dir`, with `extra`
/// settings; `None` without Python.
fn hostile(dir: &std::path::Path, extra: &str) -> Option<String> {
    let python = python(None)?;
    let path = script(dir, "hostile.py", HOSTILE);
    let record = dir.join("record.json");
    Some(format!(
        "[[mcp_server]]\nname = \"hostile\"\ncommand = [{}, \"-u\", {}, {}]\n{extra}\n",
        json!(python),
        json!(path),
        json!(record.to_str().unwrap())
    ))
}

/// What the hostile server recorded of its `slow` calls.
fn recorded(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("record.json")).unwrap()).unwrap()
}

/// A model that calls `tool` `calls` times in each answer; with `answer_after_results`, it
/// answers in words once the last message is a tool result. The largest request body it
/// received is kept in `largest`.
async fn calling_model(
    tool: &'static str,
    calls: usize,
    answer_after_results: bool,
    largest: Arc<AtomicUsize>,
) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        largest.fetch_max(request.body.to_string().len(), Ordering::SeqCst);
        let messages = request.body["messages"].as_array().unwrap();
        if answer_after_results && messages.last().unwrap()["role"] == "tool" {
            return OpenAiScript::new()
                .text("done")
                .finish("stop", 10, 5)
                .reply();
        }
        let mut script = OpenAiScript::new();
        for call in 0..calls {
            let id = format!("call_{}_{call}", messages.len());
            script = script.tool_call(&id, tool, &["{}"]);
        }
        script.finish("tool_calls", 10, 5).reply()
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_whose_results_pile_up_ends_at_max_tool_conversation_bytes_in_each_apis_terms() {
    let dir = tempfile::tempdir().unwrap();
    let Some(servers) = hostile(dir.path(), "") else {
        return;
    };
    let largest = Arc::new(AtomicUsize::new(0));
    let backend = calling_model("dump", 20, false, Arc::clone(&largest)).await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"hostile\"]").await;
    let bound = 4 * 1024 * 1024;
    let rss_before = rss_mib(std::process::id()).unwrap_or_default();

    let chat = post_to(
        &gateway,
        "/v1/chat/completions",
        &json!({"model": "local", "messages": [{"role": "user", "content": "dump"}]}),
    )
    .await;
    let rss_after = rss_mib(std::process::id()).unwrap_or_default();
    let sent = largest.swap(0, Ordering::SeqCst);
    eprintln!(
        "chat: largest backend request {sent} bytes, answer {} bytes, {} backend requests, test process RSS {rss_before:.0} -> {rss_after:.0} MiB",
        chat.text.len(),
        backend.requests().len()
    );
    assert_eq!(
        chat.status,
        200,
        "{}",
        &chat.text[..chat.text.len().min(2000)]
    );
    assert!(
        sent < bound + 256 * 1024,
        "a backend request of {sent} bytes"
    );
    assert!(
        chat.text.len() < bound + 256 * 1024,
        "an answer of {} bytes",
        chat.text.len()
    );
    let body: Value = serde_json::from_str(&chat.text).unwrap();
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    let calls = choice["gateway_tool_calls"].as_array().unwrap();
    let longest = calls
        .iter()
        .map(|call| call["content"].as_str().unwrap().chars().count())
        .max();
    assert!(
        longest <= Some(4096),
        "gateway_tool_calls shows a result of {longest:?} characters"
    );
    assert!(
        calls.iter().any(|call| call["content"]
            .as_str()
            .unwrap()
            .contains("max_tool_conversation_bytes")),
        "no result names the bound"
    );
    assert!(
        backend.requests().len() < 10,
        "the loop ran to max_tool_rounds"
    );

    let messages = post_to(
        &gateway,
        "/v1/messages",
        &json!({"model": "local", "max_tokens": 1000, "messages": [{"role": "user", "content": "dump"}]}),
    )
    .await;
    let sent = largest.swap(0, Ordering::SeqCst);
    eprintln!(
        "messages: largest backend request {sent} bytes, answer {} bytes",
        messages.text.len()
    );
    assert!(sent < bound + 256 * 1024, "{sent}");
    assert!(messages.text.len() < bound + 256 * 1024);
    let body: Value = serde_json::from_str(&messages.text).unwrap();
    assert_eq!(body["stop_reason"], "max_tokens");
    let blocks = body["content"].as_array().unwrap();
    assert_eq!(
        blocks.last().unwrap()["type"],
        "mcp_tool_result",
        "no dangling call"
    );

    let responses = post_to(
        &gateway,
        "/v1/responses",
        &json!({"model": "local", "input": "dump", "store": false}),
    )
    .await;
    let sent = largest.swap(0, Ordering::SeqCst);
    eprintln!(
        "responses: largest backend request {sent} bytes, answer {} bytes",
        responses.text.len()
    );
    assert!(sent < bound + 256 * 1024, "{sent}");
    assert!(responses.text.len() < bound + 256 * 1024);
    let body: Value = serde_json::from_str(&responses.text).unwrap();
    assert_eq!(body["status"], "incomplete");
    assert_eq!(body["incomplete_details"]["reason"], "max_output_tokens");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_calls_in_one_answer_run_a_few_at_a_time_and_the_rest_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(servers) = hostile(dir.path(), "") else {
        return;
    };
    let backend = calling_model("slow", 1000, true, Arc::default()).await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"hostile\"]").await;
    let chat = post_to(
        &gateway,
        "/v1/chat/completions",
        &json!({"model": "local", "messages": [{"role": "user", "content": "sleep"}]}),
    )
    .await;
    let seen = recorded(dir.path());
    eprintln!("defaults: the server saw {seen}");
    assert_eq!(
        chat.status,
        200,
        "{}",
        &chat.text[..chat.text.len().min(2000)]
    );
    let body: Value = serde_json::from_str(&chat.text).unwrap();
    let calls = body["choices"][0]["gateway_tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1000, "every call has its result");
    let refused = calls
        .iter()
        .filter(|call| {
            call["content"]
                .as_str()
                .unwrap()
                .contains("max_tool_calls_per_round")
        })
        .count();
    assert_eq!(refused, 1000 - 64);
    assert_eq!(seen["calls"], 64);
    assert!(seen["peak"].as_u64().unwrap() <= 8, "{seen}");
    assert_eq!(body["choices"][0]["message"]["content"], "done");

    // Lower bounds: the server's own (2 at once) under the route's (8), 10 calls a round.
    let dir = tempfile::tempdir().unwrap();
    let servers = hostile(dir.path(), "max_concurrent_calls = 2").unwrap();
    let gateway = crate::gateway_tools::gateway(
        &servers,
        &backend,
        "mcp_servers = [\"hostile\"]\nmax_tool_calls_per_round = 10",
    )
    .await;
    let chat = post_to(
        &gateway,
        "/v1/chat/completions",
        &json!({"model": "local", "messages": [{"role": "user", "content": "sleep"}]}),
    )
    .await;
    let seen = recorded(dir.path());
    eprintln!("max_concurrent_calls = 2, max_tool_calls_per_round = 10: the server saw {seen}");
    assert_eq!(chat.status, 200);
    assert_eq!(seen["calls"], 10);
    assert!(seen["peak"].as_u64().unwrap() <= 2, "{seen}");
}

/// Calls `hostile_structured` at `/mcp` with the official SDK and prints what it got, or
/// what it raised.
const SDK_CLIENT: &str = r#"
import asyncio, json, sys
from mcp import Client

async def main():
    async with Client(sys.argv[1], mode="auto", cache=None, read_timeout_seconds=30) as client:
        try:
            result = await client.call_tool("hostile_structured", {})
            print(json.dumps({"is_error": result.is_error, "text": result.content[0].text[:500],
                              "text_bytes": len(result.content[0].text)}))
        except Exception as error:
            print(json.dumps({"raised": str(error)}))

asyncio.run(main())
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_result_of_a_tool_with_an_output_schema_stays_valid_for_the_python_sdk() {
    let Some(sdk) = python(Some("mcp")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(servers) = hostile(dir.path(), "") else {
        return;
    };
    let backend = calling_model("dump", 1, true, Arc::default()).await;
    let gateway = gateway(&servers, &backend, "").await;
    let client = script(dir.path(), "client.py", SDK_CLIENT);
    let url = format!("{}/mcp", gateway.base_url());
    let output = tokio::process::Command::new(sdk)
        .args([&client, &url])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("the SDK saw: {stdout}");
    let seen: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "{error}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(seen.get("raised").is_none(), "the SDK refused it: {seen}");
    assert_eq!(seen["is_error"], true, "{seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(
        text.contains("outputSchema") && text.contains("max_result_bytes"),
        "{text}"
    );
    assert!(seen["text_bytes"].as_u64().unwrap() < 70 * 1024, "{seen}");
}
