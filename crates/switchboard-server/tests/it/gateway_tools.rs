//! MCP tools the gateway runs inside a request, on all three APIs: OpenAI's `mcp` tool
//! (Responses, and Chat Completions by the same fields), Anthropic's MCP connector, and a
//! route's own `mcp_servers`. The server is the reference `server-everything` over stdio or
//! a Python SDK server over HTTP; the model is a scripted backend that calls a tool until it
//! has read a result, then answers with what it read. Streamed answers say the same as
//! whole ones; the loop's bounds end answers in each API's own terms.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{ServerProcess, free_port, python, reference_server, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer, message_text};

/// A model that calls `tool` with `arguments` until a tool result is the last message, then
/// says what the result said.
pub async fn caller_model(tool: &'static str, arguments: Value) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            let read = message_text(&last);
            OpenAiScript::new()
                .text("The tool said: ")
                .text(&read)
                .finish("stop", 20, 7)
                .reply()
        } else {
            OpenAiScript::new()
                .text("Let me check.")
                .tool_call("call_model_1", tool, &[&arguments.to_string()])
                .finish("tool_calls", 10, 5)
                .reply()
        }
    })
    .await
}

/// A model that calls `tool` every time it is asked, counting the requests.
async fn looping_model(tool: &'static str, asked: Arc<AtomicUsize>) -> ScriptedServer {
    ScriptedServer::responding(move |_: &Captured| {
        let round = asked.fetch_add(1, Ordering::SeqCst);
        OpenAiScript::new()
            .tool_call(
                &format!("call_loop_{round}"),
                tool,
                &[&json!({"message": format!("round {round}")}).to_string()],
            )
            .finish("tool_calls", 10, 5)
            .reply()
    })
    .await
}

/// `[[mcp_server]]` for the reference server-everything over stdio; `None` without it.
pub fn everything() -> Option<String> {
    let (node, path) = reference_server("everything")?;
    Some(format!(
        "[[mcp_server]]\nname = \"everything\"\ncommand = [{}, {}, \"stdio\"]\n",
        json!(node),
        json!(path.to_str().unwrap())
    ))
}

pub async fn gateway(servers: &str, backend: &ScriptedServer, route_extra: &str) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n{servers}\n{}",
        route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            route_extra
        )
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    ready(&gateway).await;
    gateway
}

/// The `type` of each item or block.
fn types(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect()
}

/// Waits until every configured MCP server has listed its tools.
pub async fn ready(gateway: &RunningGateway) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
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
        if servers.iter().all(|server| server["state"] == "ready") {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{health}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn post(gateway: &RunningGateway, path: &str, body: Value) -> (u16, Value) {
    let response = client()
        .post(format!("{}{path}", gateway.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The SSE `data:` payloads of a streamed answer.
async fn stream(
    gateway: &RunningGateway,
    path: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> Vec<Value> {
    let mut request = client()
        .post(format!("{}{path}", gateway.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

fn mcp_tool() -> Value {
    json!({"type": "mcp", "server_label": "everything", "require_approval": "never",
        "allowed_tools": ["echo"]})
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_runs_the_servers_tool_and_answers_with_its_result() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "hi from the model"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let body = json!({"model": "local", "messages": [{"role": "user", "content": "echo something"}],
        "tools": [mcp_tool()]});
    let (status, whole) = post(&gateway, "/v1/chat/completions", body.clone()).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(
        choice["message"]["content"],
        "Let me check.The tool said: Echo: hi from the model"
    );
    assert!(
        choice["message"]
            .get("tool_calls")
            .is_none_or(Value::is_null),
        "{whole}"
    );
    assert_eq!(choice["finish_reason"], "stop");
    let ran = &choice["gateway_tool_calls"][0];
    assert_eq!(ran["server"], "everything");
    assert_eq!(ran["name"], "echo");
    assert_eq!(ran["outcome"], "ok");
    assert_eq!(ran["content"], "Echo: hi from the model");
    // Usage is the sum of both rounds.
    assert_eq!(whole["usage"]["completion_tokens"], 12);

    // The model saw the result as a tool message answering its call.
    let second = &backend.requests()[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2]["tool_calls"][0]["function"]["name"],
        "echo"
    );
    assert_eq!(
        messages[messages.len() - 1]["content"],
        "Echo: hi from the model"
    );

    // Streamed: the same words, and with the opt-in header each call as it happens.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let chunks = stream(
        &gateway,
        "/v1/chat/completions",
        streamed,
        &[("x-switchboard-tool-events", "true")],
    )
    .await;
    let text: String = chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, choice["message"]["content"].as_str().unwrap());
    let events: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.get("character_event"))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["tool_list", "tool_started", "tool_finished"],
        "{events:?}"
    );
    assert_eq!(events[2]["server"], "everything");
    let last = chunks
        .iter()
        .rfind(|chunk| !chunk["choices"][0]["finish_reason"].is_null())
        .unwrap();
    assert_eq!(
        last["choices"][0]["gateway_tool_calls"][0]["content"],
        "Echo: hi from the model"
    );
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["choices"][0]["delta"].get("tool_calls").is_none()),
        "no gateway call reaches the client as a tool call"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_routes_own_servers_are_offered_on_every_request() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "routed"})).await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"everything\"]").await;
    let body = json!({"model": "local", "messages": [{"role": "user", "content": "go"}]});
    let (status, whole) = post(&gateway, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        whole["choices"][0]["message"]["content"],
        "Let me check.The tool said: Echo: routed"
    );
    let offered = backend.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        offered
            .iter()
            .any(|tool| tool["function"]["name"] == "echo"),
        "{offered:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_show_the_listing_the_call_and_the_answer_streamed_as_whole() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "via responses"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let body = json!({"model": "local", "input": "echo it", "tools": [mcp_tool()], "store": false});
    let (status, whole) = post(&gateway, "/v1/responses", body.clone()).await;
    assert_eq!(status, 200, "{whole}");
    let kinds = types(&whole["output"]);
    assert_eq!(
        kinds,
        ["mcp_list_tools", "message", "mcp_call", "message"],
        "{whole}"
    );
    let listing = &whole["output"][0];
    assert_eq!(listing["server_label"], "everything");
    assert_eq!(listing["tools"][0]["name"], "echo");
    assert!(listing["tools"][0]["input_schema"].is_object());
    let call = &whole["output"][2];
    assert_eq!(call["name"], "echo");
    assert_eq!(call["server_label"], "everything");
    assert_eq!(call["output"], "Echo: via responses");
    assert_eq!(call["status"], "completed");
    assert_eq!(
        whole["output"][3]["content"][0]["text"],
        "The tool said: Echo: via responses"
    );
    assert_eq!(whole["status"], "completed");

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let events = stream(&gateway, "/v1/responses", streamed, &[]).await;
    let types: Vec<&str> = events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    for expected in [
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ] {
        assert!(types.contains(&expected), "{expected} in {types:?}");
    }
    let sequence: Vec<u64> = events
        .iter()
        .map(|event| event["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(sequence.windows(2).all(|pair| pair[1] == pair[0] + 1));
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.completed");
    let strip = |response: &Value| {
        let mut output = response["output"].clone();
        for item in output.as_array_mut().unwrap() {
            item.as_object_mut().unwrap().remove("id");
        }
        output
    };
    assert_eq!(strip(&done["response"]), strip(&whole));
}

/// Responses' `tool_choice: {"type": "mcp", …}` forces the server's tool by the name the
/// model is offered it under (the first round only); without a name, any of the server's
/// tools, the request's own functions left out; a label or tool the request does not offer
/// is a 400 naming the field.
#[tokio::test(flavor = "multi_thread")]
async fn responses_tool_choice_forces_an_mcp_servers_tool() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "forced"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let function = json!({"type": "function", "name": "other",
        "parameters": {"type": "object", "properties": {}}});
    let body = json!({"model": "local", "input": "echo it", "store": false,
        "tools": [mcp_tool(), function],
        "tool_choice": {"type": "mcp", "server_label": "everything", "name": "echo"}});
    let (status, whole) = post(&gateway, "/v1/responses", body.clone()).await;
    assert_eq!(status, 200, "{whole}");
    let asked = backend.requests();
    assert_eq!(
        asked[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "echo"}})
    );
    assert_ne!(asked[1].body["tool_choice"], asked[0].body["tool_choice"]);
    let call = &whole["output"][2];
    assert_eq!(call["type"], "mcp_call", "{whole}");
    assert_eq!(call["output"], "Echo: forced");

    let mut any = body.clone();
    any["tool_choice"] = json!({"type": "mcp", "server_label": "everything"});
    let (status, whole) = post(&gateway, "/v1/responses", any).await;
    assert_eq!(status, 200, "{whole}");
    let first = &backend.requests()[2].body;
    assert_eq!(first["tool_choice"], "required");
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["echo"]);

    let asked_before = backend.requests().len();
    for (choice, param) in [
        (
            json!({"type": "mcp", "server_label": "nowhere", "name": "echo"}),
            "tool_choice.server_label",
        ),
        (
            json!({"type": "mcp", "server_label": "everything", "name": "add"}),
            "tool_choice.name",
        ),
    ] {
        let mut bad = body.clone();
        bad["tool_choice"] = choice;
        let (status, error) = post(&gateway, "/v1/responses", bad).await;
        assert_eq!(status, 400, "{error}");
        assert_eq!(error["error"]["param"], param, "{error}");
    }
    assert_eq!(backend.requests().len(), asked_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_needs_approval_ends_the_response_and_runs_once_approved() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "approved"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let tool = json!({"type": "mcp", "server_label": "everything", "allowed_tools": ["echo"]});
    let (status, first) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "input": "echo", "tools": [tool]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed");
    let request = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .unwrap_or_else(|| panic!("{first}"))
        .clone();
    assert_eq!(request["name"], "echo");
    assert_eq!(backend.requests().len(), 1, "nothing ran before approval");

    let (status, second) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "previous_response_id": first["id"], "tools": [tool],
            "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}]}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    let kinds = types(&second["output"]);
    assert_eq!(
        kinds,
        ["mcp_call", "message"],
        "listed once per conversation: {second}"
    );
    assert_eq!(second["output"][0]["approval_request_id"], request["id"]);
    assert_eq!(second["output"][0]["output"], "Echo: approved");

    // Refused: the model reads that the user refused, nothing runs.
    let (_, third) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "previous_response_id": first["id"], "tools": [tool],
            "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": false, "reason": "not now"}]}),
    )
    .await;
    assert_eq!(third["output"][0]["status"], "failed", "{third}");
    let said = third["output"][1]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("refused this call: not now"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_the_gateway_does_not_run_is_refused() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let (status, body) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "input": "x", "tools": [{"type": "mcp", "server_label": "x",
            "server_url": "http://169.254.169.254/latest/meta-data"}]}),
    )
    .await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("http://169.254.169.254/latest/meta-data"),
        "{message}"
    );
    assert!(message.contains("mcp_allowed_urls"), "{message}");
    // A configured server's label with a URL that is not its own.
    let (status, body) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "mcp", "server_label": "everything", "server_url": "http://elsewhere/mcp"}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(backend.requests().is_empty());
    // The gateway's own URL for a server names it, whatever the label.
    let (status, body) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "mcp", "server_label": "mine", "require_approval": "never",
                "server_url": format!("{}/mcp/servers/everything", gateway.base_url())}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["gateway_tool_calls"][0]["server"],
        "mine"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_connector_shows_its_blocks_in_order_streamed_as_whole() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "from claude"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let url = format!("{}/mcp/servers/everything", gateway.base_url());
    let body = json!({"model": "local", "max_tokens": 200,
        "messages": [{"role": "user", "content": "echo"}],
        "mcp_servers": [{"type": "url", "url": url, "name": "ev"}],
        "tools": [{"type": "mcp_toolset", "mcp_server_name": "ev",
            "default_config": {"enabled": false}, "configs": {"echo": {"enabled": true}}}]});
    let (status, whole) = post(&gateway, "/v1/messages", body.clone()).await;
    assert_eq!(status, 200, "{whole}");
    let kinds = types(&whole["content"]);
    assert_eq!(
        kinds,
        ["text", "mcp_tool_use", "mcp_tool_result", "text"],
        "{whole}"
    );
    assert_eq!(whole["content"][1]["server_name"], "ev");
    assert_eq!(whole["content"][1]["name"], "echo");
    assert_eq!(
        whole["content"][1]["input"],
        json!({"message": "from claude"})
    );
    assert_eq!(
        whole["content"][2]["tool_use_id"],
        whole["content"][1]["id"]
    );
    assert_eq!(
        whole["content"][2]["content"][0]["text"],
        "Echo: from claude"
    );
    assert_eq!(whole["stop_reason"], "end_turn");
    // Only the toolset's enabled tool was offered.
    let offered = backend.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(offered.len(), 1, "{offered:?}");

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = stream(&gateway, "/v1/messages", streamed, &[]).await;
    let starts: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "content_block_start")
        .map(|event| event["content_block"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(starts, kinds);

    // The answer sent back as history: the connector's blocks become tool blocks.
    let mut next = body;
    next["messages"] = json!([
        {"role": "user", "content": "echo"},
        {"role": "assistant", "content": whole["content"]},
        {"role": "user", "content": "again"}]);
    let (status, again) = post(&gateway, "/v1/messages", next).await;
    assert_eq!(status, 200, "{again}");
    let sent = backend.requests().last().unwrap().body["messages"].clone();
    assert!(
        sent.as_array()
            .unwrap()
            .iter()
            .any(|message| message["role"] == "tool"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_calls_forever_stops_at_max_tool_rounds_in_each_apis_terms() {
    let Some(servers) = everything() else { return };
    let asked = Arc::new(AtomicUsize::new(0));
    let backend = looping_model("echo", Arc::clone(&asked)).await;
    let gateway = gateway(
        &servers,
        &backend,
        "mcp_servers = [\"everything\"]\nmax_tool_rounds = 3",
    )
    .await;

    let (_, chat) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "loop"}]}),
    )
    .await;
    assert_eq!(chat["choices"][0]["finish_reason"], "length", "{chat}");
    assert_eq!(
        chat["choices"][0]["gateway_tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(asked.swap(0, Ordering::SeqCst), 3);

    let (_, messages) = post(
        &gateway,
        "/v1/messages",
        json!({"model": "local", "max_tokens": 100, "messages": [{"role": "user", "content": "loop"}]}),
    )
    .await;
    assert_eq!(messages["stop_reason"], "pause_turn", "{messages}");
    let blocks = messages["content"].as_array().unwrap();
    assert_eq!(
        blocks.last().unwrap()["type"],
        "mcp_tool_result",
        "no dangling call"
    );
    asked.store(0, Ordering::SeqCst);

    let (_, response) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "input": "loop", "store": false, "max_tool_calls": 2}),
    )
    .await;
    assert_eq!(response["status"], "incomplete", "{response}");
    assert_eq!(response["incomplete_details"]["reason"], "max_tool_calls");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "max_tool_calls counts calls"
    );
}

/// A Python SDK server over HTTP with a tool that never answers in time and one whose
/// result is 2 MB.
const SLOW_AND_LARGE: &str = r#"
import sys, time
from mcp.server.mcpserver import MCPServer

app = MCPServer("bounds")

@app.tool()
def hang() -> str:
    """Never answers in time."""
    time.sleep(30)
    return "late"

@app.tool()
def dump() -> str:
    """A very large result."""
    return "x" * (2 * 1024 * 1024)

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_tool_ends_at_its_deadline_and_a_huge_result_reaches_the_model_cut() {
    let Some(python) = python(Some("mcp.server.mcpserver")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", SLOW_AND_LARGE);
    let port = free_port();
    let _server = ServerProcess::start(&python, &[&path, &port.to_string()], &[], port).await;
    let servers = format!(
        "[[mcp_server]]\nname = \"bounds\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ncall_timeout_secs = 1\n"
    );

    let backend = caller_model("hang", json!({})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let tool = json!({"type": "mcp", "server_label": "bounds", "require_approval": "never"});
    let started = std::time::Instant::now();
    let (status, whole) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "x"}], "tools": [tool]}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let said = whole["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        said.starts_with("Let me check.The tool said: Error:"),
        "{said}"
    );
    assert_eq!(
        whole["choices"][0]["gateway_tool_calls"][0]["outcome"],
        "error"
    );

    let backend = caller_model("dump", json!({})).await;
    let gateway = self::gateway(&servers, &backend, "").await;
    let (status, whole) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "x"}], "tools": [tool]}),
    )
    .await;
    assert_eq!(status, 200, "{whole}");
    let seen = message_text(
        backend.requests()[1].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
    );
    assert!(
        seen.len() < 70 * 1024,
        "{} bytes reached the model",
        seen.len()
    );
    assert!(
        seen.contains("bytes cut"),
        "{}",
        &seen[..200.min(seen.len())]
    );
}

/// A model that calls the gateway's `echo` and the client's `get_weather` in one answer,
/// then answers in words once it has read results.
async fn mixed_model() -> ScriptedServer {
    ScriptedServer::responding(|request: &Captured| {
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if messages.last().is_some_and(|last| last["role"] == "tool") {
            return OpenAiScript::new()
                .text("Done.")
                .finish("stop", 30, 2)
                .reply();
        }
        OpenAiScript::new()
            .tool_call("call_mixed_1", "echo", &[r#"{"message": "both"}"#])
            .tool_call("call_mixed_2", "get_weather", &[r#"{"city": "Oslo"}"#])
            .finish("tool_calls", 10, 9)
            .reply()
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_with_the_clients_calls_too_runs_the_gateways_and_returns_the_clients() {
    let Some(servers) = everything() else { return };
    let backend = mixed_model().await;
    let gateway = gateway(&servers, &backend, "").await;
    let weather = json!({"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}});
    let (status, first) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "input": "both", "tools": [mcp_tool(), weather]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let kinds = types(&first["output"]);
    // An MCP call's item is added once the model's call is complete and starts running; a
    // function call's as soon as the model begins it.
    assert_eq!(
        kinds,
        ["mcp_list_tools", "function_call", "mcp_call"],
        "{first}"
    );
    assert_eq!(first["output"][2]["output"], "Echo: both");
    assert_eq!(first["output"][1]["name"], "get_weather");
    assert_eq!(
        backend.requests().len(),
        1,
        "the client's call ends the loop"
    );

    // The client answers its call; the history carries the gateway's call and result.
    let call_id = first["output"][1]["call_id"].clone();
    let (status, second) = post(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "previous_response_id": first["id"], "tools": [mcp_tool(), weather],
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "cold"}]}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "Done.");
    let sent = backend.requests()[1].body["messages"].clone();
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    // One assistant turn with both calls, then both results.
    assert_eq!(roles, ["user", "assistant", "tool", "tool"], "{sent}");
    assert_eq!(sent[1]["tool_calls"].as_array().unwrap().len(), 2, "{sent}");
    assert_eq!(sent[2]["content"], "Echo: both");
    assert_eq!(sent[3]["content"], "cold");

    // Chat: only the client's call is a tool call, numbered from 0.
    let (_, chat) = post(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "both"}],
            "tools": [mcp_tool(), {"type": "function", "function": {"name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]}),
    )
    .await;
    let choice = &chat["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{chat}");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{chat}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(choice["gateway_tool_calls"][0]["content"], "Echo: both");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keys_tools_globs_decide_what_a_request_may_run() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "x"})).await;
    let key = "sk-sb-gt-Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk1Lz2Xc3Vb4N";
    let servers = format!(
        "{servers}\n[[key]]\nname = \"narrow\"\nkey_env = \"NARROW_KEY\"\ntools = [\"everything_get-sum\"]\n"
    );
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n{servers}\n{}",
        route("local", "openai", &format!("{}/v1", backend.base), "")
    );
    let config = Config::from_toml(&text).unwrap();
    let gateway = RunningGateway::start(&config, &|name| {
        (name == "NARROW_KEY").then(|| key.to_owned())
    })
    .await
    .unwrap();
    ready(&gateway).await;
    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .bearer_auth(key)
        .json(
            &json!({"model": "local", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "mcp", "server_label": "everything", "require_approval": "never"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let offered: Vec<String> = backend.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered, ["get-sum"], "only what the key may use is offered");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_and_stray_calls_reach_the_model_as_errors_whatever_the_routes_policy() {
    let Some(servers) = everything() else { return };
    // Under `reject` a broken call to a client's tool fails the answer; the gateway's own
    // tools answer a broken call with an error result for the model instead.
    let backend = caller_model("echo", json!({"words": "no message"})).await;
    let strict = gateway(&servers, &backend, "tool_call_errors = \"reject\"").await;
    let body = json!({"model": "local", "messages": [{"role": "user", "content": "echo"}],
        "tools": [mcp_tool()]});
    let (status, whole) = post(&strict, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert!(choice.get("tool_call_errors").is_none(), "{whole}");
    assert_eq!(
        choice["gateway_tool_calls"][0]["outcome"], "error",
        "{whole}"
    );
    let said = choice["message"]["content"].as_str().unwrap();
    assert!(
        said.starts_with("Let me check.The tool said: Error: Missing required parameter: message"),
        "{said}"
    );
    strict.stop().await.unwrap();

    // A call to a tool no one offered, where the client offered none of its own, is the
    // gateway's to answer: it has nowhere else to go.
    let backend = caller_model("teleport", json!({})).await;
    let plain = gateway(&servers, &backend, "").await;
    let body = json!({"model": "local", "messages": [{"role": "user", "content": "go"}],
        "tools": [mcp_tool()]});
    let (status, whole) = post(&plain, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "stop", "{whole}");
    assert_eq!(
        choice["message"]["content"],
        "Let me check.The tool said: Error: Unknown tool: teleport"
    );
    plain.stop().await.unwrap();
}

/// Issue 37, item 1: a streamed Messages head counts the prompt the model is offered, the
/// gateway's own tools included: the backend's tokenizer is asked with the route's MCP
/// server's tools beside the client's. Before, the count was taken of the client's tools
/// alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_heads_count_includes_the_gateways_tools() {
    let Some(servers) = everything() else { return };
    let backend = ScriptedServer::responding(|request: &Captured| {
        if request.head.starts_with("post /tokenize ") {
            return switchboard_testkit::Reply::json(200, &json!({"count": 321, "tokens": []}));
        }
        OpenAiScript::new()
            .text("Hello.")
            .finish("stop", 321, 2)
            .reply()
    })
    .await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"everything\"]").await;
    let answer = client()
        .post(format!("http://{}/v1/messages", gateway.address))
        .json(&json!({"model": "local", "max_tokens": 50, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    assert!(text.contains("\"input_tokens\":321"), "{text}");
    let counted = backend
        .requests()
        .into_iter()
        .find(|request| request.head.starts_with("post /tokenize "))
        .expect("the head's count asked the backend's tokenizer");
    let names: Vec<&str> = counted.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    eprintln!("tools in the counted prompt: {}", names.len());
    assert!(
        names.iter().any(|name| name.ends_with("echo")),
        "the server's tools are in the counted prompt: {names:?}"
    );
    gateway.stop().await.unwrap();
}

/// A token count goes through the tools phase as an answer does: what it counts is what the
/// model would be offered, the route's MCP servers' tools included (Messages' `count_tokens`
/// and Gemini's `:countTokens` alike).
#[tokio::test(flavor = "multi_thread")]
async fn a_token_count_includes_the_gateways_tools_on_every_api_that_counts() {
    let Some(servers) = everything() else { return };
    let backend = ScriptedServer::responding(|request: &Captured| {
        if request.head.starts_with("post /tokenize ") {
            return switchboard_testkit::Reply::json(200, &json!({"count": 123, "tokens": []}));
        }
        OpenAiScript::new()
            .text("unused")
            .finish("stop", 1, 1)
            .reply()
    })
    .await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"everything\"]").await;
    let asks = [
        (
            format!("http://{}/v1/messages/count_tokens", gateway.address),
            json!({"model": "local", "messages": [{"role": "user", "content": "hi"}]}),
            "input_tokens",
        ),
        (
            format!("http://{}/v1beta/models/local:countTokens", gateway.address),
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
            "totalTokens",
        ),
    ];
    for (url, body, field) in asks {
        let answer = client().post(&url).json(&body).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{url}");
        let counted: Value = answer.json().await.unwrap();
        assert_eq!(counted[field], 123, "{url}: {counted}");
    }
    let counts: Vec<_> = backend
        .requests()
        .into_iter()
        .filter(|request| request.head.starts_with("post /tokenize "))
        .collect();
    assert_eq!(counts.len(), 2, "each count asked the tokenizer once");
    for counted in counts {
        let has_echo = counted.body["tools"].as_array().is_some_and(|tools| {
            tools.iter().any(|tool| {
                tool["function"]["name"]
                    .as_str()
                    .is_some_and(|name| name.ends_with("echo"))
            })
        });
        assert!(has_echo, "the server's tools are counted: {}", counted.body);
    }
    gateway.stop().await.unwrap();
}

/// A model whose first round is a call of the route's slow tool (server-everything's
/// 3-second operation) with no text before it: the Chat stream has nothing to show while the
/// gateway runs it, so its keep-alive comments open the answer, rather than the client (or a
/// proxy) waiting seconds for the headers.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_keeps_alive_through_a_slow_tool_run_before_its_first_visible_byte() {
    let Some(servers) = everything() else { return };
    let backend = ScriptedServer::responding(|request: &Captured| {
        let last = request.body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .cloned()
            .unwrap_or(Value::Null);
        if last["role"] == "tool" {
            OpenAiScript::new()
                .text("Done.")
                .finish("stop", 20, 2)
                .reply()
        } else {
            OpenAiScript::new()
                .tool_call(
                    "call_slow",
                    "trigger-long-running-operation",
                    &[r#"{"duration": 3, "steps": 3}"#],
                )
                .finish("tool_calls", 10, 5)
                .reply()
        }
    })
    .await;
    let gateway = gateway(&servers, &backend, "mcp_servers = [\"everything\"]").await;
    let answer = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(&json!({"model": "local", "stream": true,
            "messages": [{"role": "user", "content": "Run it."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    assert!(
        text.starts_with(": the gateway is running tools\n\n"),
        "the answer did not open with a keep-alive:\n{text}"
    );
    assert!(
        text.contains("Done.") && text.ends_with("data: [DONE]\n\n"),
        "{text}"
    );
    gateway.stop().await.unwrap();
}
