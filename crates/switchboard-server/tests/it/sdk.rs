//! The official `openai` Python SDK as the gateway's client: what real applications will
//! run against us. A scripted backend answers on loopback, the gateway sits in front of it,
//! and tests/sdk/client.py (run with python3) reports what the SDK made of each answer,
//! streamed through the SDK's own accumulator and not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::python_client;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

/// A well-formed OpenAI call id: the gateway passes it through unchanged.
const BACKEND_ID: &str = "call_abcdefghijklmnopqrstuvwx12";

struct Setup {
    backend: ScriptedServer,
    gateway: RunningGateway,
}

/// A scripted backend answering `replies` in order, behind a gateway with a native route
/// (`native`) and a prompted hermes route (`hermes`) that both lead to it.
async fn setup(replies: Vec<Reply>) -> Setup {
    let backend = ScriptedServer::start(replies).await;
    let config = Config::from_toml(&format!(
        r#"
listen = "127.0.0.1:0"
characters = "tests/sdk/no-characters-here"

[[route]]
name = "native"
provider = "openai"
url = "{base}/v1"
model = "scripted-model"

[[route]]
name = "hermes"
provider = "openai"
url = "{base}/v1"
model = "NousResearch/Hermes-3-Llama-3.1-8B"
tool_calling = "prompted"
format = "hermes"
"#,
        base = backend.base
    ))
    .unwrap();
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    Setup { backend, gateway }
}

/// Runs `client.py BASE CASE` and returns the JSON it printed.
async fn sdk(base: String, case: &'static str) -> Value {
    python_client("sdk/client.py", &[&base, case], "openai", None).await
}

/// The backend's replies for one case: the same answer twice, per SSE event for the
/// client's whole request and one byte per HTTP chunk for its streamed one, so agreement
/// cannot come from the two seeing the same chunking.
fn replies(script: &OpenAiScript) -> Vec<Reply> {
    vec![script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

fn is_call_id(id: &Value) -> bool {
    id.as_str()
        .and_then(|id| id.strip_prefix("call_"))
        .is_some_and(|rest| rest.len() >= 24 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

fn arguments(call: &Value) -> Value {
    serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap()
}

/// The answer as the application sees it: what a whole and a streamed answer must agree on.
/// With `fresh_ids` the gateway minted the call ids (per request), so only their shape is
/// compared.
fn answer(summary: &Value, fresh_ids: bool) -> Value {
    let mut calls = summary["tool_calls"].clone();
    for call in calls.as_array_mut().unwrap() {
        if fresh_ids {
            assert!(is_call_id(&call["id"]), "{call}");
            call["id"] = json!("call_<minted>");
        }
    }
    json!({
        "model": summary["model"],
        "role": summary["role"],
        "content": summary["content"],
        "finish_reason": summary["finish_reason"],
        "tool_calls": calls,
    })
}

/// Each call's first delta carries index, id, type, name and `arguments: ""`; later deltas
/// carry only argument fragments, which add up to the call's arguments.
fn check_deltas(streamed: &Value) {
    let deltas = streamed["deltas"].as_array().unwrap();
    let calls = streamed["final"]["tool_calls"].as_array().unwrap();
    for (index, call) in calls.iter().enumerate() {
        let mine: Vec<&Value> = deltas
            .iter()
            .filter(|delta| delta["index"] == index)
            .collect();
        let (first, rest) = mine.split_first().expect("every call has deltas");
        assert_eq!(first["id"], call["id"], "{first}");
        assert_eq!(first["type"], "function", "{first}");
        assert_eq!(first["name"], call["name"], "{first}");
        assert_eq!(first["arguments"], "", "{first}");
        let mut joined = String::new();
        for delta in rest {
            assert!(delta["id"].is_null() && delta["name"].is_null(), "{delta}");
            joined.push_str(delta["arguments"].as_str().unwrap());
        }
        assert_eq!(joined, call["arguments"].as_str().unwrap());
    }
}

fn weather_script(id: &str) -> OpenAiScript {
    OpenAiScript::new()
        .text("Let me ")
        .text("check.")
        .tool_call(id, "get_weather", &["{\"city\":", " \"Par", "is\"}"])
        .finish("tool_calls", 20, 9)
}

#[tokio::test]
async fn native_tool_call_streamed_through_the_sdk_accumulator_equals_the_whole_answer() {
    let script = weather_script(BACKEND_ID);
    let Setup { backend, gateway } = setup(replies(&script)).await;
    let result = sdk(gateway.base_url(), "native").await;

    let whole = &result["whole"];
    assert_eq!(whole["object"], "chat.completion");
    assert!(
        whole["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{whole}"
    );
    assert_eq!(whole["model"], "native");
    assert_eq!(whole["finish_reason"], "tool_calls");
    assert_eq!(whole["content"], "Let me check.");
    let calls = whole["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{whole}");
    assert_eq!(calls[0]["id"], BACKEND_ID);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(arguments(&calls[0]), json!({"city": "Paris"}));

    let streamed = &result["streamed"];
    assert_eq!(answer(&streamed["final"], false), answer(whole, false));
    check_deltas(streamed);

    // include_usage: the SDK's accumulated usage is the whole answer's, and arrived in a
    // last chunk with no choices.
    let usage = json!({"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29});
    assert_eq!(whole["usage"], usage);
    assert_eq!(streamed["final"]["usage"], usage);
    assert_eq!(streamed["last_chunk"], json!({"choices": 0, "usage": 29}));

    let requests = backend.requests();
    assert_eq!(requests.len(), 2);
    for request in requests {
        assert_eq!(request.body["model"], "scripted-model");
        assert_eq!(request.body["tools"].as_array().unwrap().len(), 2);
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn parallel_native_calls_keep_distinct_indexes_and_get_proper_ids() {
    // The backend's ids are not in OpenAI's shape (and one is reused): the gateway mints
    // `call_…` ids for them.
    let script = OpenAiScript::new()
        .tool_call("1", "get_weather", &["{\"city\": \"Paris\"}"])
        .tool_call("1", "get_time", &["{\"ci", "ty\": \"Paris\"}"])
        .finish("tool_calls", 25, 30);
    let Setup { backend, gateway } = setup(replies(&script)).await;
    let result = sdk(gateway.base_url(), "native").await;

    let whole = &result["whole"];
    let calls = whole["tool_calls"].as_array().unwrap();
    let names: Vec<&str> = calls
        .iter()
        .map(|call| call["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_weather", "get_time"]);
    assert!(
        calls
            .iter()
            .all(|call| arguments(call) == json!({"city": "Paris"}))
    );
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert_eq!(whole["finish_reason"], "tool_calls");
    assert!(whole["content"].is_null(), "{whole}");

    let streamed = &result["streamed"];
    assert_eq!(answer(&streamed["final"], true), answer(whole, true));
    check_deltas(streamed);
    let indexes: std::collections::BTreeSet<u64> = streamed["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|delta| delta["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes.into_iter().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(streamed["final"]["usage"]["total_tokens"], 55);
    assert_eq!(backend.requests().len(), 2);
    gateway.stop().await.unwrap();
}

/// Hermes markup as a model without native tool calling writes it, cut mid-tag and
/// mid-argument so the gateway's streaming parser has to reassemble it.
fn hermes_script(calls: &[(&str, &str)]) -> OpenAiScript {
    let mut script = OpenAiScript::new().text("I'll look ").text("that up.\n");
    for (name, city) in calls {
        let markup = format!(
            "<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>\n"
        );
        let (head, tail) = markup.split_at(markup.len() / 2);
        script = script.text(&head[..5]).text(&head[5..]).text(tail);
    }
    script.finish("stop", 40, 17)
}

async fn prompted(calls: &[(&str, &str)]) -> (Value, ScriptedServer) {
    let script = hermes_script(calls);
    let Setup { backend, gateway } = setup(replies(&script)).await;
    let result = sdk(gateway.base_url(), "prompted").await;
    gateway.stop().await.unwrap();
    (result, backend)
}

#[tokio::test]
async fn prompted_hermes_tool_call_streamed_and_whole() {
    let (result, backend) = prompted(&[("get_weather", "Paris")]).await;
    let whole = &result["whole"];
    assert_eq!(whole["model"], "hermes");
    // The backend said "stop"; the answer has a call, so the client sees "tool_calls".
    assert_eq!(whole["finish_reason"], "tool_calls");
    assert!(
        whole["content"]
            .as_str()
            .unwrap()
            .starts_with("I'll look that up."),
        "{whole}"
    );
    assert!(
        !whole["content"].as_str().unwrap().contains("<tool_call>"),
        "{whole}"
    );
    let calls = whole["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{whole}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(arguments(&calls[0]), json!({"city": "Paris"}));
    assert_eq!(whole["usage"]["total_tokens"], 57);

    let streamed = &result["streamed"];
    assert_eq!(answer(&streamed["final"], true), answer(whole, true));
    check_deltas(streamed);
    // No include_usage: no usage chunk, so the SDK has none.
    assert!(streamed["final"]["usage"].is_null(), "{streamed}");
    assert_ne!(streamed["last_chunk"]["choices"], 0);

    // The model was asked in its own markup and given no native tools.
    for request in backend.requests() {
        assert!(
            request
                .body
                .get("tools")
                .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty)),
            "{}",
            request.body
        );
        let system = request.body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("You are terse."), "{system}");
        assert!(
            system.contains("get_weather") && system.contains("<tool_call>"),
            "{system}"
        );
    }
}

#[tokio::test]
async fn prompted_parallel_calls_streamed_and_whole() {
    let (result, _) = prompted(&[("get_weather", "Paris"), ("get_time", "Lyon")]).await;
    let whole = &result["whole"];
    let calls = whole["tool_calls"].as_array().unwrap();
    let got: Vec<(&str, Value)> = calls
        .iter()
        .map(|call| (call["name"].as_str().unwrap(), arguments(call)))
        .collect();
    assert_eq!(
        got,
        [
            ("get_weather", json!({"city": "Paris"})),
            ("get_time", json!({"city": "Lyon"}))
        ]
    );
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    let streamed = &result["streamed"];
    assert_eq!(answer(&streamed["final"], true), answer(whole, true));
    check_deltas(streamed);
}

#[tokio::test]
async fn validation_errors_surface_as_bad_request_errors_in_the_sdk() {
    let Setup { backend, gateway } = setup(Vec::new()).await;
    let result = sdk(gateway.base_url(), "bad-request").await;
    let errors = result["errors"].as_array().unwrap();
    let expected = [
        (
            "temperature",
            "temperature",
            "temperature: must be a number from 0 to 2",
        ),
        (
            "tool_choice",
            "tool_choice.function.name",
            "\"get_news\" is not one of the request's tools",
        ),
        (
            "tools",
            "tools[0].function.name",
            "\"bad name!\" does not match",
        ),
        ("streamed", "top_p", "top_p: must be a number from 0 to 1"),
    ];
    assert_eq!(errors.len(), expected.len());
    for (error, (label, param, message)) in errors.iter().zip(expected) {
        assert_eq!(error["label"], label);
        assert_eq!(error["class"], "BadRequestError", "{error}");
        assert_eq!(error["status"], 400, "{error}");
        assert_eq!(error["type"], "invalid_request_error", "{error}");
        assert_eq!(error["param"], param, "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{error}"
        );
    }
    assert!(
        backend.requests().is_empty(),
        "refused requests never reach the backend"
    );
    gateway.stop().await.unwrap();
}
