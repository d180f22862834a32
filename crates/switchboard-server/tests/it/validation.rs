//! Request validation over HTTP: every rule answers 400 in OpenAI's error shape naming the
//! parameter, before anything reaches a backend; size and syntax problems get their own
//! statuses; unknown fields pass but stay at the gateway unless a route forwards them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{OllamaScript, OpenAiScript, ScriptedServer};

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}})
}

fn with(field: &str, value: Value) -> Value {
    let mut body = with_tools("qwen", "hi");
    body[field] = value;
    body
}

fn messages(list: Value) -> Value {
    with("messages", list)
}

#[tokio::test]
async fn every_rule_is_a_400_naming_its_parameter_and_nothing_is_sent() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let user = json!({"role": "user", "content": "hi"});
    let cases: Vec<(Value, &str, &str)> = vec![
        (with("model", json!("")), "model", "must name a model"),
        (with("model", json!("  ")), "model", "must name a model"),
        (with("model", json!(7)), "model", "expected a string"),
        (
            messages(json!([])),
            "messages",
            "at least one message is required",
        ),
        (
            {
                let mut body = with_tools("qwen", "hi");
                body.as_object_mut().unwrap().remove("messages");
                body
            },
            "messages",
            "at least one message",
        ),
        (messages(json!("hello")), "messages", "expected an array"),
        (
            messages(json!([{"role": "robot", "content": "beep"}])),
            "messages[0].role",
            "must be one of system, developer, user, assistant, tool",
        ),
        (
            messages(json!([user, {"content": "no role"}])),
            "messages[1].role",
            "got nothing",
        ),
        (
            messages(json!([user, {"role": "tool", "content": "sunny"}])),
            "messages[1].tool_call_id",
            "needs the tool_call_id",
        ),
        (
            messages(json!([user, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])),
            "messages[1].tool_call_id",
            "\"call_1\" does not answer a tool call of an earlier assistant message",
        ),
        // The call it answers comes later: still not an earlier call.
        (
            messages(json!([user,
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                {"role": "assistant", "content": null, "tool_calls": [call("call_1")]}])),
            "messages[1].tool_call_id",
            "does not answer",
        ),
        (
            messages(json!([user,
                {"role": "assistant", "content": null, "tool_calls": [call("call_1")]},
                {"role": "tool", "tool_call_id": "call_1"}])),
            "messages[2].content",
            "a tool message needs content",
        ),
        (
            messages(json!([user, {"role": "assistant", "content": null}])),
            "messages[1].content",
            "needs content or tool_calls",
        ),
        (
            messages(json!([{"role": "user", "content": 42}])),
            "messages[0].content",
            "must be a string or an array",
        ),
        (
            messages(
                json!([user, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]),
            ),
            "messages[1].tool_calls[0].id",
            "needs an id",
        ),
        (
            with("tool_choice", json!("sometimes")),
            "tool_choice",
            "must be \"auto\", \"none\", \"required\"",
        ),
        (
            with(
                "tool_choice",
                json!({"type": "function", "function": {"name": "get_stock"}}),
            ),
            "tool_choice.function.name",
            "\"get_stock\" is not one of the request's tools",
        ),
        (
            with("tool_choice", json!({"type": "function", "function": {}})),
            "tool_choice.function.name",
            "name the function",
        ),
        (
            {
                let mut body = request("qwen", "hi");
                body["tool_choice"] = json!("required");
                body
            },
            "tool_choice",
            "needs at least one tool",
        ),
        (
            with("stream_options", json!({"include_usage": true})),
            "stream_options",
            "only allowed when stream is true",
        ),
        (
            with("temperature", json!(2.5)),
            "temperature",
            "from 0 to 2",
        ),
        (
            with("temperature", json!(-0.1)),
            "temperature",
            "from 0 to 2",
        ),
        (
            with("temperature", json!("hot")),
            "temperature",
            "from 0 to 2",
        ),
        (with("top_p", json!(1.5)), "top_p", "from 0 to 1"),
        (with("top_p", json!(-1)), "top_p", "from 0 to 1"),
        (
            with("max_tokens", json!(0)),
            "max_tokens",
            "positive integer",
        ),
        (
            with("max_tokens", json!(-5)),
            "max_tokens",
            "positive integer",
        ),
        (
            with("max_tokens", json!(1.5)),
            "max_tokens",
            "positive integer",
        ),
        (
            with("max_completion_tokens", json!(0)),
            "max_completion_tokens",
            "positive integer",
        ),
        (with("stream", json!("yes")), "stream", "expected a boolean"),
        (with("n", json!(2)), "n", "only n = 1"),
        (
            with("parallel_tool_calls", json!("no")),
            "parallel_tool_calls",
            "expected a boolean",
        ),
    ];
    for (body, param, message) in cases {
        let error = post(&gateway, &body).await.error(400);
        assert_eq!(error["param"], param, "{body}\n{error}");
        assert_eq!(error["type"], "invalid_request_error", "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{body}\nexpected {message:?} in {error}"
        );
    }
    assert!(
        backend.requests().is_empty(),
        "a bad request reached the backend"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn invalid_tools_list_every_problem() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = with(
        "tools",
        json!([
            {"type": "function", "function": {"name": "get weather", "parameters": {"type": "object"}}},
            weather_tool(),
            {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "strang"}}}}},
        ]),
    );
    let error = post(&gateway, &body).await.error(400);
    let message = error["message"].as_str().unwrap();
    assert_eq!(error["param"], "tools[0].function.name", "{error}");
    assert!(message.contains("tools[0].function.name:"), "{message}");
    assert!(message.contains("tools[2]"), "{message}");
    assert!(
        !message.contains("tool_choice"),
        "a tool_choice naming a broken list is not blamed too: {message}"
    );
    // Several problems at once are all listed, in order.
    let mut body = with("temperature", json!(3));
    body["top_p"] = json!(2);
    body["max_tokens"] = json!(0);
    let error = post(&gateway, &body).await.error(400);
    let message = error["message"].as_str().unwrap();
    assert_eq!(error["param"], "temperature");
    let at = |needle: &str| {
        message
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {message}"))
    };
    assert!(at("temperature:") < at("top_p:") && at("top_p:") < at("max_tokens:"));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn bodies_that_are_not_requests_are_400s_never_500s() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let error = post_bytes(
        &gateway,
        b"{\"model\": \"qwen\",\n \"messages\": [}".to_vec(),
    )
    .await
    .error(400);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("not valid JSON") && message.contains("line 2 column 15"),
        "{message}"
    );
    for body in [
        b"".to_vec(),
        b"[1, 2]".to_vec(),
        b"\"text\"".to_vec(),
        b"{\"model\": \"qwen\", \"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}"
            .to_vec(),
    ] {
        post_bytes(&gateway, body).await.error(400);
    }
    // Values the wire types cannot hold are named like every other problem.
    for (field, value) in [
        ("max_tokens", json!(5_000_000_000u64)),
        ("stop", json!(5)),
        ("stop", json!(["END", 5])),
        ("seed", json!(1.5e300)),
        ("top_k", json!(-1)),
        ("n", json!(2)),
    ] {
        let error = post(&gateway, &with(field, value)).await.error(400);
        assert_eq!(error["param"], field, "{error}");
    }
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = start(
        "max_body_bytes = 512",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let big = request("qwen", &"x".repeat(600));
    let answer = post(&gateway, &big).await;
    // The body was left unread, so its connection carries no other request.
    assert_eq!(answer.headers["connection"], "close");
    let error = answer.error(413);
    assert_eq!(error["code"], "request_too_large");
    assert!(
        error["message"].as_str().unwrap().contains("512 bytes"),
        "{error}"
    );
    // Under the limit the request goes on (to a backend that is not there).
    let small = request("qwen", "x");
    assert_eq!(post(&gateway, &small).await.status, 502);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn an_unknown_model_is_404() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let error = post(&gateway, &request("gpt-9", "hi")).await.error(404);
    assert_eq!(error["param"], "model");
    assert_eq!(error["code"], "model_not_found");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("\"gpt-9\"") && message.contains("qwen"),
        "{message}"
    );
    let error = post(&gateway, &request("character/nobody", "hi"))
        .await
        .error(404);
    assert!(
        error["message"].as_str().unwrap().contains("nobody"),
        "{error}"
    );
    let error = get(&gateway, "/v1/completions").await.error(404);
    assert_eq!(error["code"], "not_found");
    gateway.stop().await.unwrap();
}

/// A request with the OpenAI API's standard fields, a vendor extension and an unknown field.
fn with_every_field(model: &str) -> Value {
    let mut body = request(model, "hi");
    for (field, value) in [
        ("frequency_penalty", json!(0.5)),
        ("presence_penalty", json!(0.25)),
        ("logit_bias", json!({"50256": -100})),
        ("logprobs", json!(true)),
        ("top_logprobs", json!(2)),
        ("user", json!("user-7")),
        ("metadata", json!({"team": "a"})),
        ("service_tier", json!("auto")),
        ("seed", json!(7)),
        ("reasoning_effort", json!("high")),
        ("response_format", json!({"type": "json_object"})),
        ("top_k", json!(40)),
        ("chat_template_kwargs", json!({"enable_thinking": false})),
        ("vendor_extension", json!({"x": 1})),
    ] {
        body[field] = value;
    }
    body
}

const STANDARD: &[&str] = &[
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "metadata",
    "service_tier",
    "seed",
    "reasoning_effort",
    "response_format",
];

#[tokio::test]
async fn standard_fields_are_forwarded_and_vendor_extensions_only_when_the_route_names_them() {
    let answer = || OpenAiScript::new().text("ok").finish("stop", 1, 1).reply();
    let backend = ScriptedServer::start(vec![answer(), answer()]).await;
    let ollama = ScriptedServer::start(vec![
        OllamaScript::new().text("ok").finish("stop", 1, 1).reply(),
    ])
    .await;
    let gateway = start(
        "",
        &[
            route("plain", "openai", &backend.base, ""),
            route(
                "forwarding",
                "openai",
                &backend.base,
                "forward_fields = [\"chat_template_kwargs\", \"top_k\"]",
            ),
            route("local", "ollama", &ollama.base, ""),
        ],
    )
    .await;
    for model in ["plain", "forwarding", "local"] {
        let answer = post(&gateway, &with_every_field(model)).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.json()["choices"][0]["message"]["content"], "ok");
    }
    let plain = sent(&backend, 0);
    let forwarding = sent(&backend, 1);
    let body = with_every_field("plain");
    for field in STANDARD {
        assert_eq!(plain[field], body[field], "{field}: {plain}");
        assert_eq!(forwarding[field], body[field], "{field}: {forwarding}");
    }
    for extension in ["top_k", "chat_template_kwargs", "vendor_extension"] {
        assert!(plain.get(extension).is_none(), "{extension}: {plain}");
    }
    assert_eq!(forwarding["top_k"], 40);
    assert_eq!(
        forwarding["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    assert!(forwarding.get("vendor_extension").is_none(), "{forwarding}");
    assert_eq!(plain["model"], BACKEND_MODEL);
    // Ollama gets its own names for what it has, and nothing it would not understand.
    let local = sent(&ollama, 0);
    assert_eq!(local["options"]["seed"], 7, "{local}");
    assert_eq!(local["options"]["top_k"], 40, "{local}");
    assert_eq!(local["options"]["presence_penalty"], 0.25, "{local}");
    assert_eq!(local["format"], "json", "{local}");
    assert_eq!(local["think"], true, "{local}");
    for absent in [
        "user",
        "logit_bias",
        "chat_template_kwargs",
        "vendor_extension",
    ] {
        assert!(local.get(absent).is_none(), "{absent}: {local}");
    }
    gateway.stop().await.unwrap();
}

/// Client input quoted in an error is cut to a bounded length, and a body with thousands of
/// problems gets a bounded list: a 400 KB pattern or model name never comes back whole.
#[tokio::test]
async fn errors_quote_client_input_cut_to_a_bounded_length() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let huge = format!("({}", "a".repeat(400_000));
    let mut pattern = with_tools("qwen", "hi");
    pattern["tools"][0]["function"]["parameters"]["properties"]["city"]["pattern"] = json!(huge);
    let broken: Vec<Value> = (0..5_000)
        .map(|index| json!({"type": "function", "function": {"name": format!("t{index}"), "parameters": {"type": "objekt"}}}))
        .collect();
    let cases = [
        (pattern, 400, "400001 characters"),
        (with("model", json!(huge)), 404, "400001 characters"),
        (with("stop", json!({"a": huge})), 400, "characters)"),
        (with("tools", json!(broken)), 400, "more problems"),
    ];
    for (body, status, words) in cases {
        let answer = post(&gateway, &body).await;
        let error = answer.error(status);
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
        assert!(
            answer.text.len() < 8 * 1024,
            "{} bytes: {}",
            answer.text.len(),
            &answer.text[..500]
        );
    }
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}
