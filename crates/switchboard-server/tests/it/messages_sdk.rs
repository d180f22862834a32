//! The official `anthropic` Python SDK as the Messages API's client: what applications built
//! for Claude will run against us. A scripted backend answers on loopback, the gateway sits
//! in front of it, and tests/messages_sdk/client.py reports what the SDK made of each
//! answer: `messages.create` and the same request through `messages.stream`'s accumulator
//! must give the same message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::messages::is_tool_use_id;
use common::{BACKEND_MODEL, python_client, route, sent};
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{Captured, Chunking, OpenAiScript, Reply, ScriptedServer};

/// A gateway with a native route (`native`) and a prompted hermes route (`hermes`), both in
/// front of `backend`, and no characters.
async fn gateway(backend: &ScriptedServer) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"tests/messages_sdk/no-characters-here\"\nmax_body_bytes = 65536\n{}{}",
        // Failures in a row would take the one replica out and end its retries early: the
        // error cases below each count on three attempts.
        route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "eject_after = 100"
        ),
        route(
            "hermes",
            "openai",
            &format!("{}/v1", backend.base),
            "tool_calling = \"prompted\"\nformat = \"hermes\"",
        )
    );
    let config = Config::from_toml(&text).unwrap();
    RunningGateway::start(&config, &|_| None).await.unwrap()
}

async fn sdk(base: String, case: &'static str) -> Value {
    python_client("messages_sdk/client.py", &[&base, case], "anthropic", None).await
}

/// The same answer twice: per SSE event for `create`, one byte per HTTP chunk for
/// `stream`, so agreement cannot come from the two seeing the same chunking.
fn replies(script: &OpenAiScript) -> Vec<Reply> {
    vec![script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

/// A message with the per-request ids (`msg_…`, minted `toolu_…`) replaced, after checking
/// their shape.
fn comparable(message: &Value) -> Value {
    let mut message = message.clone();
    let id = message["id"].as_str().unwrap();
    assert!(id.starts_with("msg_") && id.len() == 28, "{id}");
    message["id"] = json!("msg_<id>");
    for block in message["content"].as_array_mut().unwrap() {
        if block["type"] == "tool_use" {
            assert!(is_tool_use_id(block["id"].as_str().unwrap()), "{block}");
            block["id"] = json!("toolu_<id>");
        }
    }
    message
}

/// `create` and `stream` agree, and the stream went through the SDK's whole protocol.
fn agree(result: &Value) -> &Value {
    let whole = &result["whole"];
    assert_eq!(
        comparable(&result["streamed"]),
        comparable(whole),
        "{result}"
    );
    let events: Vec<&str> = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event.as_str().unwrap())
        .collect();
    assert_eq!(events.first(), Some(&"message_start"), "{events:?}");
    assert_eq!(events.last(), Some(&"message_stop"), "{events:?}");
    whole
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// The SDK's usage with the fields this gateway sets (it leaves the rest null).
fn usage_of(message: &Value) -> Value {
    let usage = &message["usage"];
    json!({"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"]})
}

fn weather_call() -> OpenAiScript {
    OpenAiScript::new()
        .text("Let me ")
        .text("check.")
        .tool_call("call_1", "get_weather", &["{\"city\":", " \"Par", "is\"}"])
        .finish("tool_calls", 20, 9)
}

#[tokio::test]
async fn a_tool_call_created_and_streamed_is_the_same_message() {
    let backend = ScriptedServer::start(replies(&weather_call())).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "tools").await;
    let whole = agree(&result);
    assert_eq!(whole["type"], "message");
    assert_eq!(whole["role"], "assistant");
    assert_eq!(whole["model"], "native");
    assert_eq!(whole["content"][0]["type"], "text");
    assert_eq!(whole["content"][0]["text"], "Let me check.");
    let call = &whole["content"][1];
    assert_eq!(call["type"], "tool_use");
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["input"], json!({"city": "Paris"}));
    assert_eq!(whole["content"].as_array().unwrap().len(), 2, "{whole}");
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(whole["stop_sequence"], Value::Null);
    assert_eq!(usage_of(whole), usage(20, 9));
    for request in backend.requests() {
        assert_eq!(request.body["model"], BACKEND_MODEL);
        assert_eq!(request.body["messages"][0]["content"], "You are terse.");
        assert_eq!(request.body["tools"].as_array().unwrap().len(), 2);
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn parallel_calls_created_and_streamed_are_the_same_message() {
    let script = OpenAiScript::new()
        .delta(json!({"tool_calls": [{"index": 0, "id": "1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": "}}]}))
        .delta(json!({"tool_calls": [{"index": 1, "id": "1", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}}]}))
        .delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}))
        .finish("tool_calls", 25, 30);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "tools").await;
    let whole = agree(&result);
    let calls: Vec<(&str, &Value)> = whole["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| (block["name"].as_str().unwrap(), &block["input"]))
        .collect();
    let paris = json!({"city": "Paris"});
    assert_eq!(calls, [("get_weather", &paris), ("get_time", &paris)]);
    assert_ne!(whole["content"][0]["id"], whole["content"][1]["id"]);
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(usage_of(whole), usage(25, 30));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_tool_result_answers_the_call_in_the_next_request() {
    let answer = OpenAiScript::new()
        .text("It is 22°C and sunny in Paris.")
        .finish("stop", 60, 11);
    let backend = ScriptedServer::start(vec![weather_call().reply(), answer.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "round-trip").await;
    let call_id = result["first"]["content"][1]["id"].as_str().unwrap();
    assert!(is_tool_use_id(call_id), "{call_id}");
    let second = &result["second"];
    assert_eq!(
        second["content"][0]["text"],
        "It is 22°C and sunny in Paris."
    );
    assert_eq!(second["stop_reason"], "end_turn");
    let asked = sent(&backend, 1);
    let messages = asked["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(messages[2]["content"], "Let me check.");
    assert_eq!(messages[2]["tool_calls"][0]["id"], call_id);
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(messages[3]["tool_call_id"], call_id);
    assert_eq!(messages[3]["content"], "22°C and sunny");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn thinking_on_a_reasoning_backend_is_a_thinking_block() {
    let script = OpenAiScript::new()
        .delta(json!({"reasoning_content": "Two lookups: "}))
        .delta(json!({"reasoning_content": "weather, then time."}))
        .text("Paris: 22°C, ")
        .text("14:05.")
        .finish("stop", 30, 40);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "thinking").await;
    let whole = agree(&result);
    assert_eq!(
        whole["content"],
        json!([
            {"type": "thinking", "thinking": "Two lookups: weather, then time.", "signature": ""},
            {"type": "text", "text": "Paris: 22°C, 14:05.", "citations": null}
        ])
    );
    assert_eq!(whole["stop_reason"], "end_turn");
    // budget_tokens 2048 asks for a low effort.
    assert_eq!(sent(&backend, 0)["reasoning_effort"], "low");
    assert_eq!(sent(&backend, 0)["max_tokens"], 4096);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_prompted_route_gives_the_sdk_tool_use_blocks() {
    let markup = "I'll look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n";
    let script = markup
        .as_bytes()
        .chunks(9)
        .fold(OpenAiScript::new(), |script, piece| {
            script.text(std::str::from_utf8(piece).unwrap())
        })
        .finish("stop", 40, 17);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "prompted").await;
    let whole = agree(&result);
    assert_eq!(whole["model"], "hermes");
    assert!(
        whole["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("I'll look that up."),
        "{whole}"
    );
    let call = whole["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "tool_use")
        .unwrap();
    assert_eq!(call["input"], json!({"city": "Paris"}));
    assert_eq!(whole["stop_reason"], "tool_use");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn count_tokens_and_models_list_in_the_sdk() {
    let backend = ScriptedServer::responding(|request: &Captured| {
        if request.head.starts_with("post /tokenize ") {
            Reply::json(
                200,
                &json!({"count": 57, "max_model_len": 8192, "tokens": []}),
            )
        } else {
            Reply::json(404, &json!({"error": "Not Found"}))
        }
    })
    .await;
    let gateway = gateway(&backend).await;
    let counted = sdk(gateway.base_url(), "count").await;
    assert_eq!(counted["input_tokens"], 57);
    let asked = &backend.requests()[0].body;
    assert_eq!(asked["messages"][0]["content"], "You are terse.");
    assert_eq!(asked["tools"].as_array().unwrap().len(), 2);
    let models = sdk(gateway.base_url(), "models").await;
    assert_eq!(models["ids"], json!(["native", "hermes"]));
    gateway.stop().await.unwrap();
}

fn status(code: u16, message: &str) -> Reply {
    Reply::json(code, &json!({"error": {"message": message}}))
}

#[tokio::test]
async fn errors_are_the_sdks_typed_exceptions() {
    // Each failing backend answer comes three times: the gateway retries twice.
    let mut replies = Vec::new();
    for (code, message) in [
        (429, "slow down"),
        (503, "loading the model"),
        (500, "crashed"),
    ] {
        replies.extend(std::iter::repeat_n(status(code, message), 3));
    }
    replies.push(
        OpenAiScript::new()
            .text("Hel")
            .text("lo")
            .finish("stop", 1, 1)
            .cut_after(2),
    );
    let backend = ScriptedServer::start(replies).await;
    let gateway = gateway(&backend).await;
    let result = sdk(gateway.base_url(), "errors").await;
    let errors = result["errors"].as_array().unwrap();
    let expected = [
        (
            "bad-request",
            "BadRequestError",
            400,
            "invalid_request_error",
            "tool_choice.name: \"get_news\" is not one of the request's tools",
        ),
        (
            "not-found",
            "NotFoundError",
            404,
            "not_found_error",
            "no route is named \"claude-opus-9\"; configured routes: native, hermes",
        ),
        (
            "too-large",
            "ContentTooLargeError",
            413,
            "request_too_large",
            "larger than the limit of 65536 bytes",
        ),
        (
            "rate-limited",
            "RateLimitError",
            429,
            "rate_limit_error",
            "slow down",
        ),
        (
            "overloaded",
            "OverloadedError",
            529,
            "overloaded_error",
            "loading the model",
        ),
        (
            "backend-failed",
            "InternalServerError",
            502,
            "api_error",
            "crashed",
        ),
    ];
    assert_eq!(errors.len(), expected.len() + 1, "{result}");
    for (error, (label, class, code, kind, message)) in errors.iter().zip(expected) {
        assert_eq!(error["label"], label);
        assert_eq!(error["class"], class, "{error}");
        assert_eq!(error["status"], code, "{error}");
        assert_eq!(error["type"], kind, "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{error}"
        );
        assert!(
            error["request_id"].as_str().unwrap().starts_with("req_"),
            "{error}"
        );
    }
    // A stream cut after it began: the SDK raises the error event it received.
    let cut = errors.last().unwrap();
    assert_eq!(cut["label"], "cut-mid-stream");
    assert_eq!(cut["class"], "APIStatusError", "{cut}");
    assert_eq!(cut["type"], "api_error", "{cut}");
    assert!(cut["message"].as_str().unwrap().contains("cut"), "{cut}");
    assert_eq!(
        backend.requests().len(),
        10,
        "refused requests never reached the backend"
    );
    gateway.stop().await.unwrap();
}
