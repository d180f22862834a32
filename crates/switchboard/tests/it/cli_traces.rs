//! OpenTelemetry traces as an operator turns them on: `switchboard serve` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an OTLP/HTTP receiver run by the test sends it
//! the request spans with their GenAI attributes, a span per backend attempt and per
//! tool execution beneath them (a character's, or an MCP server's the gateway runs),
//! continues the client's `traceparent` and passes it on to the backend, and sends what it
//! still holds when it stops. Without the variable
//! no exporter runs and nothing reaches the backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::Served;

use serde_json::{Value, json};
use switchboard_testkit::mcp::reference_server;
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer};

/// The client's trace: its id, and the id of the client's own span.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// A character with one tool, for the tool-execution span.
const CHARACTER: &str = r#"
export const CHARACTER_NAME = "Tracer";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/tracer.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You look words up.", language: "en" };
export const METADATA = { good: true, comment: "Trace test character" };
export const TOOLS = [{
  type: "function",
  function: {
    name: "lookup",
    description: "Looks a word up",
    parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  },
}];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
  handleToolCall(toolName, toolInput) { return `found ${toolInput.word}`; }
}
"#;

/// An OTLP/HTTP receiver: keeps every body posted to `/v1/traces`, as JSON.
struct Receiver {
    endpoint: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    async fn start() -> Self {
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = Arc::clone(&kept);
                async move {
                    let body = serde_json::from_slice(&body)
                        .unwrap_or_else(|_| json!({"unreadable": String::from_utf8_lossy(&body)}));
                    kept.lock().unwrap().push(body);
                    axum::Json(json!({}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { endpoint, bodies }
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Value> {
        let bodies = self.bodies.lock().unwrap();
        let mut spans = Vec::new();
        for body in bodies.iter() {
            assert!(body.get("unreadable").is_none(), "{body}");
            for resource in body["resourceSpans"].as_array().into_iter().flatten() {
                for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                    spans.extend(scope["spans"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        spans
    }
}

/// A span attribute's value as plain JSON: a string, a number or an array of them.
fn attribute(span: &Value, key: &str) -> Value {
    let value = span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|attribute| attribute["key"] == key)
        .map_or(Value::Null, |attribute| attribute["value"].clone());
    plain(&value)
}

fn plain(value: &Value) -> Value {
    if let Some(text) = value.get("stringValue") {
        return text.clone();
    }
    if let Some(number) = value.get("intValue") {
        // OTLP/JSON writes 64-bit integers as strings.
        return match number {
            Value::String(text) => json!(text.parse::<i64>().unwrap()),
            other => other.clone(),
        };
    }
    if let Some(values) = value.pointer("/arrayValue/values") {
        return Value::Array(values.as_array().unwrap().iter().map(plain).collect());
    }
    Value::Null
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|span| span["name"] == name).collect()
}

fn only<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one span named {name:?} in {spans:#?}");
    found[0]
}

/// `SPAN_KIND_SERVER` is 2 and `SPAN_KIND_CLIENT` 3, however the encoding spells them.
fn kind(span: &Value) -> i64 {
    match &span["kind"] {
        Value::Number(number) => number.as_i64().unwrap(),
        other => panic!("span kind {other}"),
    }
}

fn nanos(span: &Value, field: &str) -> u128 {
    match &span[field] {
        Value::String(text) => text.parse().unwrap(),
        Value::Number(number) => u128::from(number.as_u64().unwrap()),
        other => panic!("{field}: {other}"),
    }
}

/// The model server: calls the offered tool (an MCP server's `echo`, or the character's
/// `lookup`) when no result is back yet, and otherwise answers in words.
async fn backend() -> ScriptedServer {
    ScriptedServer::responding(|request: &Captured| {
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let offered = request.body["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty());
        let offers = |name: &str| {
            request.body["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == name))
        };
        if offered && !messages.iter().any(|message| message["role"] == "tool") {
            let (tool, arguments) = if offers("echo") {
                ("echo", r#"{"message":"otter"}"#)
            } else {
                ("lookup", r#"{"word":"otter"}"#)
            };
            OpenAiScript::new()
                .tool_call("call_1", tool, &[arguments])
                .finish("tool_calls", 11, 5)
                .reply()
        } else {
            OpenAiScript::new()
                .text("Hello.")
                .finish("stop", 7, 3)
                .reply()
        }
    })
    .await
}

/// A configuration with the route `qwen` on `backend`, characters talking through it from
/// `dir/characters`, where the tracer character is.
fn configure(dir: &Path, backend: &ScriptedServer) -> std::path::PathBuf {
    let characters = dir.join("characters");
    std::fs::create_dir_all(&characters).unwrap();
    std::fs::write(characters.join("tracer.js"), CHARACTER).unwrap();
    let config = dir.join("switchboard.toml");
    std::fs::write(
        &config,
        format!(
            "characters = \"{}\"\ncharacter_route = \"qwen\"\n\n[[route]]\nname = \"qwen\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\n",
            characters.display(),
            backend.base
        ),
    )
    .unwrap();
    config
}

/// The backend requests that carry a chat (not the start-up probe's bare connections).
fn chats(backend: &ScriptedServer) -> Vec<Captured> {
    backend
        .requests()
        .into_iter()
        .filter(|request| request.head.starts_with("post "))
        .collect()
}

fn traceparent(request: &Captured) -> Option<String> {
    request
        .head
        .lines()
        .find_map(|line| line.strip_prefix("traceparent: "))
        .map(|value| value.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_arrive_as_spans_with_their_attributes_and_children() {
    let receiver = Receiver::start().await;
    let backend = backend().await;
    let dir = tempfile::tempdir().unwrap();
    let config = configure(dir.path(), &backend);
    let mut served = Served::start(
        &config,
        "127.0.0.1:0",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "gateway-under-test"),
            // Nothing is sent before the server stops: what arrives, its shutdown sent.
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    );
    assert!(
        served
            .log()
            .contains("exporting traces over OTLP/HTTP (http/json)"),
        "{}",
        served.log()
    );
    assert!(
        served
            .threads()
            .iter()
            .any(|name| name.starts_with("OpenTelemetry")),
        "the batch exporter's thread runs: {:?}",
        served.threads()
    );

    let client = reqwest::Client::new();
    let answer = client
        .post(format!("{}/v1/chat/completions", served.base))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .json(&json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "Hello.");

    let turn = client
        .post(format!("{}/v1/chat/completions", served.base))
        .json(&json!({"model": "character/tracer", "stream": true,
            "messages": [{"role": "user", "content": "what is an otter?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(turn.status(), 200);
    let turn = turn.text().await.unwrap();
    assert!(turn.contains("Hello."), "{turn}");

    // Issue 37, item 1: a request for a model nothing answers is traced with the name it
    // asked for on every API (before: on Chat Completions only).
    let unknown = "no-such-model";
    let user = json!([{"role": "user", "content": "hi"}]);
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": unknown, "messages": user}),
        ),
        (
            "/v1/messages",
            json!({"model": unknown, "max_tokens": 5, "messages": user}),
        ),
        ("/v1/responses", json!({"model": unknown, "input": "hi"})),
    ] {
        let answer = client
            .post(format!("{}{path}", served.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404, "{path}");
    }

    served.stop();
    let spans = receiver.spans();
    for route in ["/v1/chat/completions", "/v1/messages", "/v1/responses"] {
        let span = spans
            .iter()
            .find(|span| {
                attribute(span, "http.route") == route
                    && attribute(span, "http.response.status_code") == 404
            })
            .unwrap_or_else(|| panic!("no 404 span of {route} in {spans:#?}"));
        assert_eq!(attribute(span, "gen_ai.request.model"), unknown, "{span:#}");
        assert!(
            span["name"].as_str().unwrap().ends_with(unknown),
            "{route}: {}",
            span["name"]
        );
    }
    assert!(
        receiver
            .bodies
            .lock()
            .unwrap()
            .iter()
            .all(|body| body.to_string().contains("gateway-under-test")),
        "the service is named by OTEL_SERVICE_NAME"
    );

    // The chat request: the client's trace continued, the GenAI attributes, one attempt.
    let request = only(&spans, "chat qwen");
    assert_eq!(request["traceId"], TRACE_ID);
    assert_eq!(request["parentSpanId"], CLIENT_SPAN);
    assert_eq!(kind(request), 2);
    for (key, value) in [
        ("gen_ai.operation.name", json!("chat")),
        ("gen_ai.request.model", json!("qwen")),
        ("gen_ai.response.finish_reasons", json!(["stop"])),
        ("gen_ai.usage.input_tokens", json!(7)),
        ("gen_ai.usage.output_tokens", json!(3)),
        ("http.route", json!("/v1/chat/completions")),
        ("http.response.status_code", json!(200)),
        ("switchboard.route", json!("qwen")),
    ] {
        assert_eq!(attribute(request, key), value, "{key} in {request:#}");
    }
    let attempts: Vec<&Value> = named(&spans, "chat m")
        .into_iter()
        .filter(|span| span["parentSpanId"] == request["spanId"])
        .collect();
    assert_eq!(attempts.len(), 1, "{spans:#?}");
    let attempt = attempts[0];
    assert_eq!(attempt["traceId"], TRACE_ID);
    assert_eq!(kind(attempt), 3);
    assert_eq!(attribute(attempt, "gen_ai.request.model"), "m");
    assert_eq!(attribute(attempt, "server.address"), "127.0.0.1");
    assert_eq!(attribute(attempt, "gen_ai.usage.output_tokens"), 3);
    // ... and the backend was asked within that attempt's span.
    let sent = chats(&backend);
    assert_eq!(
        traceparent(&sent[0]),
        Some(format!(
            "00-{TRACE_ID}-{}-01",
            attempt["spanId"].as_str().unwrap()
        )),
        "{}",
        sent[0].head
    );

    // The character's turn: a new trace, two attempts and the tool's execution beneath it.
    let turn = only(&spans, "chat character/tracer");
    assert_ne!(turn["traceId"], TRACE_ID);
    assert_eq!(
        attribute(turn, "gen_ai.response.finish_reasons"),
        json!(["stop"])
    );
    assert_eq!(attribute(turn, "switchboard.route"), "character/Tracer");
    let beneath = |span: &&Value| span["parentSpanId"] == turn["spanId"];
    assert_eq!(
        named(&spans, "chat m").into_iter().filter(beneath).count(),
        2
    );
    let tool = only(&spans, "execute_tool lookup");
    assert!(beneath(&tool), "{tool:#}");
    assert_eq!(attribute(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(tool, "gen_ai.tool.name"), "lookup");
    assert_eq!(attribute(tool, "gen_ai.tool.call.id"), "call_1");
    assert_eq!(attribute(tool, "switchboard.tool.outcome"), "ok");
    assert!(nanos(tool, "endTimeUnixNano") > nanos(tool, "startTimeUnixNano"));
    for request in &chats(&backend)[1..] {
        let parent = traceparent(request).unwrap();
        assert!(
            parent.starts_with(&format!("00-{}-", turn["traceId"].as_str().unwrap())),
            "{parent}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_no_exporter_runs() {
    let backend = backend().await;
    let dir = tempfile::tempdir().unwrap();
    let config = configure(dir.path(), &backend);
    // Everything but the endpoint: that alone turns traces on.
    let served = Served::start(
        &config,
        "127.0.0.1:0",
        &[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "gateway-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "10"),
        ],
    );
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.base))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .json(&json!({"model": "character/tracer",
            "messages": [{"role": "user", "content": "what is an otter?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    let threads = served.threads();
    assert!(
        !threads
            .iter()
            .any(|name| name.starts_with("OpenTelemetry") || name.starts_with("reqwest-intern")),
        "no exporter thread: {threads:?}"
    );
    assert!(
        !served.log().contains("exporting traces"),
        "{}",
        served.log()
    );
    let sent = chats(&backend);
    assert_eq!(sent.len(), 2, "the tool round and the answer");
    for request in sent {
        assert_eq!(traceparent(&request), None, "{}", request.head);
    }
}

/// A tool of an MCP server that the gateway runs inside a request is exported like a
/// character's: an `execute_tool` span beneath the request's, with the model's call id, the
/// server and the outcome.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_an_mcp_servers_tool_is_a_span_beneath_its_request() {
    let Some((node, everything)) = reference_server("everything") else {
        return;
    };
    let receiver = Receiver::start().await;
    let backend = backend().await;
    let dir = tempfile::tempdir().unwrap();
    let config = configure(dir.path(), &backend);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[[mcp_server]]\nname = \"everything\"\ncommand = [{}, {}, \"stdio\"]\n",
        json!(node),
        json!(everything.to_str().unwrap())
    ));
    std::fs::write(&config, text).unwrap();
    let mut served = Served::start(
        &config,
        "127.0.0.1:0",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    );
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let health: Value = client
            .get(format!("{}/healthz", served.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if health["mcp_servers"][0]["state"] == "ready" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{health}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let answer = client
        .post(format!("{}/v1/chat/completions", served.base))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .json(
            &json!({"model": "qwen", "messages": [{"role": "user", "content": "echo otter"}],
            "tools": [{"type": "mcp", "server_label": "everything", "require_approval": "never",
                "allowed_tools": ["echo"]}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], "Hello.",
        "{answer}"
    );
    assert_eq!(
        answer["choices"][0]["gateway_tool_calls"][0]["outcome"],
        "ok"
    );

    served.stop();
    let spans = receiver.spans();
    let request = only(&spans, "chat qwen");
    let tool = only(&spans, "execute_tool echo");
    assert_eq!(tool["traceId"], TRACE_ID, "{tool:#}");
    assert_eq!(tool["parentSpanId"], request["spanId"], "{spans:#?}");
    for (key, value) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "echo"),
        ("switchboard.mcp_server", "everything"),
        ("switchboard.tool.outcome", "ok"),
    ] {
        assert_eq!(attribute(tool, key), value, "{key} in {tool:#}");
    }
    // The call's id as the request's calls are named (the gateway's, not the backend's).
    let id = attribute(tool, "gen_ai.tool.call.id");
    assert!(
        id.as_str().is_some_and(|id| id.starts_with("call_")),
        "{tool:#}"
    );
    assert!(nanos(tool, "endTimeUnixNano") > nanos(tool, "startTimeUnixNano"));
}
