//! What the gateway's behaviour tests share: a gateway started in-process in front of
//! scripted backends on loopback, a real HTTP client, and a reader that turns an SSE answer
//! back into one answer (checking the chunk protocol on the way) so it can be compared with
//! the non-streamed body for the same backend output; and the official `openai` Python SDK
//! as a client (tests/sdk/client.py).
// Each test module uses its own subset of these helpers (and `limits.rs` and `replicas.rs`,
// which include this folder with `#[path]`).
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

pub mod messages;
pub mod responses;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};

/// The repository's characters.
pub const CHARACTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../characters");

/// The model name every scripted route asks its backend for.
pub const BACKEND_MODEL: &str = "backend-model";

/// A `[[route]]` table; `extra` holds more `key = value` lines.
pub fn route(name: &str, provider: &str, url: &str, extra: &str) -> String {
    format!(
        "[[route]]\nname = \"{name}\"\nprovider = \"{provider}\"\nurl = \"{url}\"\nmodel = \"{BACKEND_MODEL}\"\n{extra}\n"
    )
}

/// Starts a gateway on a free port; `settings` are top-level `key = value` lines.
pub async fn start(settings: &str, routes: &[String]) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n{settings}\n{}",
        routes.concat()
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    RunningGateway::start(&config, &|_| None).await.unwrap()
}

/// A gateway with one route, `qwen`, of this provider in front of `url`.
pub async fn one_route(provider: &str, url: &str, extra: &str) -> RunningGateway {
    start("", &[route("qwen", provider, url, extra)]).await
}

/// A gateway whose one route, `native`, is `backend` as an OpenAI-compatible server.
pub async fn native_route(backend: &switchboard_testkit::ScriptedServer) -> RunningGateway {
    start(
        "",
        &[route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "",
        )],
    )
    .await
}

/// A URL nothing listens on.
pub async fn closed_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}")
}

/// One HTTP answer from the gateway.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.text))
    }

    /// Asserts an error in OpenAI's shape with this status, and returns its `error` object.
    pub fn error(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "{}", self.text);
        let body = self.json();
        let error = &body["error"];
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(error["type"].is_string(), "{body}");
        let keys: Vec<&str> = error
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["message", "type", "param", "code"], "{body}");
        error.clone()
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// `POST /v1/chat/completions` with raw bytes.
pub async fn post_bytes(gateway: &RunningGateway, body: Vec<u8>) -> Answer {
    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    read_answer(response).await
}

pub async fn read_answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    Answer {
        status,
        headers,
        text,
    }
}

/// `POST` a JSON body to `path` (`/v1/responses`).
pub async fn post_to(gateway: &RunningGateway, path: &str, body: &Value) -> Answer {
    post_with(gateway, path, body, &[]).await
}

/// `POST` a JSON body to `path` with more request headers.
pub async fn post_with(
    gateway: &RunningGateway,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = client()
        .post(format!("{}{path}", gateway.base_url()))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    read_answer(request.body(body.to_string()).send().await.unwrap()).await
}

/// `DELETE` a path.
pub async fn delete(gateway: &RunningGateway, path: &str) -> Answer {
    let response = client()
        .delete(format!("{}{path}", gateway.base_url()))
        .send()
        .await
        .unwrap();
    read_answer(response).await
}

/// `POST /v1/chat/completions` with a JSON body.
pub async fn post(gateway: &RunningGateway, body: &Value) -> Answer {
    post_bytes(gateway, body.to_string().into_bytes()).await
}

/// `GET` a path.
pub async fn get(gateway: &RunningGateway, path: &str) -> Answer {
    let response = client()
        .get(format!("{}{path}", gateway.base_url()))
        .send()
        .await
        .unwrap();
    read_answer(response).await
}

/// A chat request for `model` with one user message.
pub fn request(model: &str, text: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": text}]})
}

/// The same request asking for a stream with usage.
pub fn streaming(mut body: Value) -> Value {
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    body
}

pub fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}})
}

/// A tool that takes no arguments.
pub fn clock_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_time", "description": "The current time",
        "parameters": {"type": "object", "properties": {}}}})
}

/// A request for `model` offering the weather and clock tools.
pub fn with_tools(model: &str, text: &str) -> Value {
    let mut body = request(model, text);
    body["tools"] = json!([weather_tool(), clock_tool()]);
    body
}

/// `call_` and at least 24 letters and digits, as OpenAI's ids are.
pub fn is_call_id(id: &str) -> bool {
    id.strip_prefix("call_").is_some_and(|rest| {
        rest.len() >= 24 && rest.bytes().all(|byte| byte.is_ascii_alphanumeric())
    })
}

/// A streamed answer: the chunks, and whether `data: [DONE]` closed it.
#[derive(Debug)]
pub struct Streamed {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub chunks: Vec<Value>,
    pub done: bool,
}

/// `POST` with `stream: true` and reads the whole SSE body.
pub async fn post_stream(gateway: &RunningGateway, body: &Value) -> Streamed {
    let answer = post(gateway, body).await;
    let (chunks, done) = if answer.status == 200 {
        parse_sse(&answer.text)
    } else {
        (Vec::new(), false)
    };
    Streamed {
        status: answer.status,
        headers: answer.headers,
        text: answer.text,
        chunks,
        done,
    }
}

/// SSE `data:` events as JSON values; `[DONE]` must be the last event.
pub fn parse_sse(text: &str) -> (Vec<Value>, bool) {
    let mut chunks = Vec::new();
    let mut done = false;
    for event in text.split("\n\n").filter(|event| !event.trim().is_empty()) {
        assert!(!done, "an event after [DONE]: {text}");
        let data = event
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("not an SSE data event: {event:?}"));
        if data == "[DONE]" {
            done = true;
        } else {
            chunks
                .push(serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}: {data}")));
        }
    }
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "the stream ends mid-event: {text:?}"
    );
    (chunks, done)
}

/// The streamed chunks accumulated into the non-streamed answer's summary (see [`summary`]),
/// checking OpenAI's chunk protocol on the way: one id and object for every chunk, a call's
/// first delta with index, id, type, name and `""` arguments, later deltas with arguments
/// only, and at most one finish.
pub fn accumulate(chunks: &[Value]) -> Value {
    let mut content: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut calls: BTreeMap<u64, Value> = BTreeMap::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    let mut errors = Value::Null;
    let first_id = chunks.first().map(|chunk| chunk["id"].clone());
    for chunk in chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        assert_eq!(Some(chunk["id"].clone()), first_id, "{chunk}");
        assert!(
            chunk["id"].as_str().unwrap().starts_with("chatcmpl-"),
            "{chunk}"
        );
        if !chunk["usage"].is_null() {
            assert!(usage.is_null(), "two usage chunks");
            assert_eq!(
                chunk["choices"],
                json!([]),
                "the usage chunk has empty choices"
            );
            usage = chunk["usage"].clone();
        }
        for choice in chunk["choices"].as_array().unwrap() {
            assert!(usage.is_null(), "a choice after the usage chunk: {chunk}");
            assert!(finish.is_null(), "a choice after the finish: {chunk}");
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str() {
                content.get_or_insert_default().push_str(text);
            }
            if let Some(text) = delta["reasoning_content"].as_str() {
                reasoning.get_or_insert_default().push_str(text);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("no index: {call}"));
                let fragment = call["function"]["arguments"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no arguments: {call}"));
                match calls.get_mut(&index) {
                    None => {
                        assert!(call["id"].is_string(), "first delta without id: {call}");
                        assert_eq!(call["type"], "function", "{call}");
                        assert!(call["function"]["name"].is_string(), "{call}");
                        assert_eq!(fragment, "", "the first delta's arguments: {call}");
                        calls.insert(
                            index,
                            json!({"id": call["id"], "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""}}),
                        );
                    }
                    Some(open) => {
                        assert!(
                            call.get("id").is_none_or(Value::is_null)
                                && call["function"].get("name").is_none_or(Value::is_null),
                            "a later delta repeats id or name: {call}"
                        );
                        let arguments = open["function"]["arguments"].as_str().unwrap();
                        open["function"]["arguments"] = json!(format!("{arguments}{fragment}"));
                    }
                }
            }
            if !choice["finish_reason"].is_null() {
                finish = choice["finish_reason"].clone();
                if let Some(found) = choice.get("tool_call_errors") {
                    errors = found.clone();
                }
            }
        }
    }
    let indexes: Vec<u64> = calls.keys().copied().collect();
    assert_eq!(
        indexes,
        (0..calls.len() as u64).collect::<Vec<_>>(),
        "call indexes are 0, 1, …"
    );
    json!({
        "content": content,
        "reasoning_content": reasoning,
        "tool_calls": calls.into_values().collect::<Vec<_>>(),
        "finish_reason": finish,
        "usage": usage,
        "tool_call_errors": errors,
    })
}

/// The parts of a non-streamed `chat.completion` that a stream also carries.
pub fn summary(completion: &Value) -> Value {
    assert_eq!(completion["object"], "chat.completion", "{completion}");
    assert!(
        completion["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("chatcmpl-")),
        "{completion}"
    );
    let choice = &completion["choices"][0];
    let message = &choice["message"];
    assert_eq!(message["role"], "assistant", "{completion}");
    let calls: Vec<Value> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| {
            json!({"id": call["id"], "type": call["type"],
                "function": {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}})
        })
        .collect();
    json!({
        "content": message["content"],
        "reasoning_content": message.get("reasoning_content").cloned().unwrap_or(Value::Null),
        "tool_calls": calls,
        "finish_reason": choice["finish_reason"],
        "usage": completion["usage"],
        "tool_call_errors": choice.get("tool_call_errors").cloned().unwrap_or(Value::Null),
    })
}

/// Replaces call ids with their position, after checking each is well formed, so answers
/// whose ids were generated independently can be compared.
pub fn without_ids(mut summary: Value) -> Value {
    for (position, call) in summary["tool_calls"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let id = call["id"].as_str().unwrap();
        assert!(is_call_id(id), "{id}");
        call["id"] = json!(position);
    }
    summary
}

/// The last message of the chat request a scripted backend received (after a call the
/// gateway ran, its result).
pub fn last_sent(server: &switchboard_testkit::ScriptedServer, index: usize) -> Value {
    sent(server, index)["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or(Value::Null)
}

/// The chat request a scripted backend received, as JSON.
pub fn sent(server: &switchboard_testkit::ScriptedServer, index: usize) -> Value {
    let requests = server.requests();
    requests
        .get(index)
        .unwrap_or_else(|| panic!("the backend got {} requests", requests.len()))
        .body
        .clone()
}

/// Runs `python3 SCRIPT ARGS…` (a script under tests/ driving the official `sdk`, with
/// `input` as JSON on its standard input) and returns the JSON it printed. A missing SDK
/// (exit status 3) fails the test with the way to install it: these tests never pass by
/// skipping.
pub async fn python_client(
    script: &str,
    args: &[&str],
    sdk: &'static str,
    input: Option<&Value>,
) -> Value {
    let path = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    let case = args.join(" ");
    let input = input.map(Value::to_string).unwrap_or_default();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("python3")
            .arg(&path)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        // A script that fails at once may not read its input: the pipe can be closed.
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
        child.wait_with_output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|error| {
        panic!("cannot run python3 ({error}); these tests need Python 3 with the {sdk} SDK: run scripts/test")
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(3) {
        panic!(
            "the official {sdk} Python SDK is not installed; run scripts/test (it installs tests/requirements.txt)\n{stderr}"
        );
    }
    assert!(
        output.status.success(),
        "{script} {case} failed ({}):\n{stderr}",
        output.status
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{script} {case} printed no JSON ({error}):\n{}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}
