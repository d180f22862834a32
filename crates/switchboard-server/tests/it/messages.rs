//! Anthropic's Messages API over HTTP, on every route kind: the backend's answer comes out
//! as Messages events in Anthropic's order and as one `message` body, and the two agree
//! exactly whatever the backend's chunking; tool calls stream as they come with `toolu_`
//! ids and object inputs; thinking signatures survive an Anthropic backend; requests are
//! validated with Anthropic's field paths and errors keep Anthropic's types; server tools
//! are left out and named; `count_tokens` uses the backend's tokenizer where there is one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::messages::*;
use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{
    AnthropicScript, Captured, Chunking, OllamaScript, OpenAiScript, Reply, ScriptedServer,
    sse_body,
};

const CHUNKINGS: [Chunking; 3] = [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole];

/// Asks for the same backend output whole and streamed and checks that the stream folds
/// into exactly the whole body; returns the whole message, the stream, and the backend.
async fn both_ways(
    provider: &str,
    extra: &str,
    reply: Reply,
    body: &Value,
) -> (Value, Events, ScriptedServer) {
    let backend = ScriptedServer::start(vec![reply.clone(), reply]).await;
    let gateway = one_route(provider, &backend.base, extra).await;
    let whole = post_messages(&gateway, body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    assert!(
        whole.headers["request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
    let streamed = post_messages_stream(&gateway, body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(streamed.headers["content-type"], "text/event-stream");
    let whole = whole.json();
    assert_eq!(
        without_message_ids(streamed.message.clone()),
        without_message_ids(whole.clone()),
        "streamed and whole answers differ:\n{}",
        streamed.text
    );
    gateway.stop().await.unwrap();
    (whole, streamed, backend)
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output})
}

#[tokio::test]
async fn a_call_with_reasoning_streamed_equals_the_whole_message_in_every_chunking() {
    let script = OpenAiScript::new()
        .delta(json!({"reasoning_content": "Paris weather, "}))
        .delta(json!({"reasoning_content": "one lookup."}))
        .text("Let me check. ")
        .tool_call("call_1", "get_weather", &["{\"ci", "ty\": \"Par", "is\"}"])
        .finish("tool_calls", 10, 5);
    for chunking in CHUNKINGS {
        let (message, streamed, backend) = both_ways(
            "openai",
            "",
            script.reply_in(chunking),
            &message_with_tools("qwen", "Weather in Paris?"),
        )
        .await;
        assert_eq!(message["type"], "message");
        assert_eq!(message["role"], "assistant");
        assert_eq!(message["model"], "qwen", "the name the client asked for");
        let content = message["content"].as_array().unwrap();
        assert_eq!(
            content[..2],
            [
                json!({"type": "thinking", "thinking": "Paris weather, one lookup.", "signature": ""}),
                json!({"type": "text", "text": "Let me check. "})
            ],
            "{chunking:?}"
        );
        assert_eq!(content[2]["type"], "tool_use");
        assert!(
            is_tool_use_id(content[2]["id"].as_str().unwrap()),
            "{message}"
        );
        assert_eq!(content[2]["name"], "get_weather");
        assert_eq!(content[2]["input"], json!({"city": "Paris"}));
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(message["stop_sequence"], Value::Null);
        assert_eq!(message["usage"], usage(10, 5));
        // message_start carried an estimate; message_delta the backend's count.
        let start = &streamed.events[0].1["message"]["usage"];
        assert!(start["input_tokens"].as_u64().unwrap() > 0, "{start}");
        let sent = sent(&backend, 0);
        assert_eq!(sent["model"], BACKEND_MODEL);
        assert_eq!(sent["max_tokens"], 1024);
        assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    }
}

#[tokio::test]
async fn parallel_calls_become_one_block_after_another_and_no_arguments_is_braces() {
    // OpenAI backends interleave parallel calls; Anthropic's blocks are sequential.
    let script = OpenAiScript::new()
        .delta(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": "}}]}))
        .delta(json!({"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "get_time", "arguments": ""}}]}))
        .delta(json!({"tool_calls": [{"index": 2, "id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}))
        .delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Rome\", \"days\": 3}"}}]}))
        .finish("tool_calls", 20, 9);
    for chunking in CHUNKINGS {
        let (message, streamed, _) = both_ways(
            "openai",
            "",
            script.reply_in(chunking),
            &message_with_tools("qwen", "Plan my trip"),
        )
        .await;
        let blocks: Vec<(&str, Value)> = message["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| (block["name"].as_str().unwrap(), block["input"].clone()))
            .collect();
        assert_eq!(
            blocks,
            [
                ("get_weather", json!({"city": "Rome", "days": 3})),
                ("get_time", json!({})),
                ("get_weather", json!({"city": "Oslo"}))
            ]
        );
        let ids: std::collections::HashSet<&str> = message["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 3, "{message}");
        assert_eq!(message["stop_reason"], "tool_use");
        let stops = streamed
            .events
            .iter()
            .filter(|(name, _)| name == "content_block_stop")
            .count();
        assert_eq!(stops, 3, "every tool_use block is stopped");
    }
}

#[tokio::test]
async fn a_calls_arguments_reach_the_client_before_the_call_ends() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .tool_call("call_1", "get_weather", &["{\"city\": \"Par", "is\"}"])
        .finish("tool_calls", 10, 5)
        .reply();
    // The call's start and first fragment go out; the rest waits for the client.
    reply.gate = Some((2, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = message_with_tools("qwen", "Weather?");
    body["stream"] = json!(true);
    let mut response = client()
        .post(format!("{}/v1/messages", gateway.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    let early = tokio::time::timeout(Duration::from_secs(10), async {
        while !seen.contains(r#""partial_json":"{\"city\": \"Par""#) {
            let bytes = response
                .chunk()
                .await
                .unwrap()
                .expect("the stream ended early");
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    })
    .await;
    assert!(early.is_ok(), "the arguments were held back: {seen}");
    gate.notify_one();
    while let Some(bytes) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    let message = fold(&parse_events(&seen));
    assert_eq!(message["content"][0]["input"], json!({"city": "Paris"}));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn the_stop_reason_follows_the_answer() {
    for (script, expected) in [
        (
            OpenAiScript::new().text("Hello.").finish("stop", 2, 3),
            "end_turn",
        ),
        (
            OpenAiScript::new()
                .text("No tools.")
                .finish("tool_calls", 2, 3),
            "end_turn",
        ),
        (
            OpenAiScript::new().text("Once upon").finish("length", 2, 3),
            "max_tokens",
        ),
        (
            OpenAiScript::new()
                .tool_call("call_1", "get_weather", &["{\"city\": \"Pa"])
                .finish("length", 2, 3),
            "max_tokens",
        ),
        (
            OpenAiScript::new()
                .tool_call("call_1", "get_time", &["{}"])
                .finish("stop", 2, 3),
            "tool_use",
        ),
    ] {
        let (message, _, _) = both_ways(
            "openai",
            "",
            script.reply(),
            &message_with_tools("qwen", "Go"),
        )
        .await;
        assert_eq!(message["stop_reason"], expected, "{message}");
        assert_eq!(message["stop_sequence"], Value::Null);
    }
    // vLLM names the stop string that ended the answer; Anthropic's backends do too.
    let chunk = |delta: Value, reason: Value, stop: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason, "stop_reason": stop}]})
    };
    let vllm = sse_body(
        &[
            chunk(json!({"content": "1, 2, 3"}), Value::Null, Value::Null),
            chunk(json!({}), json!("stop"), json!("END")),
        ],
        true,
    );
    let anthropic = AnthropicScript::new(3)
        .text("1, 2, 3")
        .finish("stop_sequence", 4)
        .body()
        .replace(r#""stop_sequence":null"#, r#""stop_sequence":"END""#);
    for (provider, body) in [("openai", vllm), ("anthropic", anthropic)] {
        let mut request = message_request("qwen", "Count");
        request["stop_sequences"] = json!(["END"]);
        let (message, _, backend) =
            both_ways(provider, "", Reply::sse(body, Chunking::Whole), &request).await;
        assert_eq!(
            message["stop_reason"], "stop_sequence",
            "{provider}: {message}"
        );
        assert_eq!(message["stop_sequence"], "END", "{provider}");
        let sent = sent(&backend, 0);
        let stops = if provider == "openai" {
            &sent["stop"]
        } else {
            &sent["stop_sequences"]
        };
        assert_eq!(*stops, json!(["END"]), "{sent}");
    }
}

#[tokio::test]
async fn an_anthropic_backend_keeps_thinking_signatures_block_order_and_ids() {
    let tool_id = "toolu_01A09q90qw90lq917835lq9X";
    let script = AnthropicScript::new(30)
        .thinking(&["The user wants ", "the weather."], "EqQBCkYIARgCKkBsig")
        .text("Checking.")
        .tool_use(tool_id, "get_weather", &["{\"city\":", " \"Paris\"}"])
        .finish("tool_use", 12);
    for chunking in CHUNKINGS {
        let (message, streamed, backend) = both_ways(
            "anthropic",
            "",
            script.reply_in(chunking),
            &message_with_tools("qwen", "Weather in Paris?"),
        )
        .await;
        assert_eq!(
            message["content"],
            json!([
                {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCkYIARgCKkBsig"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {"city": "Paris"}}
            ]),
            "{chunking:?}"
        );
        assert_eq!(message["usage"], usage(30, 12));
        assert!(
            streamed
                .text
                .contains(r#""delta":{"type":"signature_delta","signature":"EqQBCkYIARgCKkBsig"}"#),
            "{}",
            streamed.text
        );
        assert_eq!(sent(&backend, 0)["max_tokens"], 1024);
    }

    // Claude Code echoes the turn back: the backend gets the signed thinking block first.
    let backend = ScriptedServer::start(vec![
        AnthropicScript::new(40)
            .text("Sunny.")
            .finish("end_turn", 3)
            .reply(),
    ])
    .await;
    let gateway = one_route("anthropic", &backend.base, "").await;
    let mut body = message_with_tools("qwen", "Weather in Paris?");
    body["system"] = json!([
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.0;"},
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
    ]);
    body["messages"] = json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCkYIARgCKkBsig"},
            {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "22°C"}]}
    ]);
    let answer = post_messages(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let sent = sent(&backend, 0);
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCkYIARgCKkBsig"},
            {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {"city": "Paris"}}
        ])
    );
    assert_eq!(sent["messages"][2]["content"][0]["tool_use_id"], tool_id);
    // Anthropic gets Claude Code's system blocks as they were.
    assert_eq!(
        sent["system"][0]["text"],
        "x-anthropic-billing-header: cc_version=2.1.0;"
    );
    assert_eq!(sent["system"][1]["text"], "You are Claude Code.");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn an_ollama_backend_answers_with_tool_use_blocks() {
    let script = OllamaScript::new()
        .text("Looking.")
        .tool_calls(&[
            ("get_weather", json!({"city": "Oslo"})),
            ("get_time", json!({})),
        ])
        .finish("stop", 14, 6);
    for chunking in [Chunking::Bytes, Chunking::PerEvent("\n"), Chunking::Whole] {
        let (message, _, _) = both_ways(
            "ollama",
            "",
            script.reply_in(chunking),
            &message_with_tools("qwen", "Oslo?"),
        )
        .await;
        let names: Vec<&str> = message["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["type"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["text", "tool_use", "tool_use"]);
        assert_eq!(message["content"][1]["input"], json!({"city": "Oslo"}));
        assert_eq!(message["content"][2]["input"], json!({}));
        assert_eq!(
            message["stop_reason"], "tool_use",
            "Ollama says stop after calls"
        );
        assert_eq!(message["usage"], usage(14, 6));
    }
}

#[tokio::test]
async fn a_prompted_route_turns_markup_into_tool_use_blocks() {
    let markup = "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>";
    let script = markup
        .as_bytes()
        .chunks(7)
        .fold(OpenAiScript::new(), |script, piece| {
            script.text(std::str::from_utf8(piece).unwrap())
        })
        .finish("stop", 40, 17);
    let hermes = "tool_calling = \"prompted\"\nformat = \"hermes\"";
    for chunking in CHUNKINGS {
        let (message, _, backend) = both_ways(
            "openai",
            hermes,
            script.reply_in(chunking),
            &message_with_tools("qwen", "Lyon?"),
        )
        .await;
        assert_eq!(message["content"][0]["type"], "text");
        assert!(
            message["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("I'll check."),
            "{message}"
        );
        let call = message["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|block| block["type"] == "tool_use")
            .unwrap();
        assert_eq!(call["name"], "get_weather");
        assert_eq!(call["input"], json!({"city": "Lyon"}));
        assert_eq!(message["stop_reason"], "tool_use");
        let sent = sent(&backend, 0);
        assert!(sent.get("tools").is_none(), "{sent}");
        assert!(
            sent["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("<tool_call>"),
            "{sent}"
        );
    }
}

/// What Claude Code sends on every turn, trimmed.
fn claude_code_request(model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 64000,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.440; cc_entrypoint=sdk-cli;"},
            {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Use the tools.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>be nice</system-reminder>"}, {"type": "text", "text": "list files"}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment\nPlatform: linux", "cache_control": {"type": "ephemeral"}}], "output_config": {"effort": "medium"}}
        ],
        "tools": [
            {"name": "Bash", "description": "Run a command", "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}},
            {"name": "DeferredToolPlaceholder", "description": "never call this", "input_schema": {"type": "object", "properties": {}}, "defer_loading": true},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
        ],
        "metadata": {"user_id": "{\"device_id\":\"d\",\"session_id\":\"s\"}"},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "medium"},
        "stream": true
    })
}

#[tokio::test]
async fn a_claude_code_turn_reaches_a_model_server_cleanly() {
    let backend = ScriptedServer::start(vec![
        OpenAiScript::new()
            .tool_call("call_1", "Bash", &["{\"command\": \"ls\"}"])
            .finish("tool_calls", 50, 8)
            .reply(),
    ])
    .await;
    let gateway = start(
        "",
        &[route(
            "local",
            "openai",
            &backend.base,
            "aliases = [\"claude-*\"]",
        )],
    )
    .await;
    let streamed = {
        let answer = post_anthropic(
            &gateway,
            "/v1/messages?beta=true",
            &claude_code_request("claude-sonnet-4-5-20250929"),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.headers["x-switchboard-dropped-tools"], "web_search");
        fold(&parse_events(&answer.text))
    };
    assert_eq!(streamed["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(streamed["content"][0]["name"], "Bash");
    assert_eq!(streamed["content"][0]["input"], json!({"command": "ls"}));
    let sent = sent(&backend, 0);
    assert_eq!(sent["model"], BACKEND_MODEL);
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "system"]);
    assert_eq!(
        sent["messages"][0]["content"], "You are a Claude agent.\n\nUse the tools.",
        "one system message, without the billing stamp"
    );
    assert_eq!(
        sent["messages"][2]["content"],
        "# Environment\nPlatform: linux"
    );
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["Bash"],
        "neither the deferred tool nor the server tool"
    );
    assert_eq!(sent["max_tokens"], 64000);
    assert_eq!(sent["reasoning_effort"], "medium");
    assert!(
        sent.get("metadata").is_none() && sent.get("context_management").is_none(),
        "{sent}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn forcing_a_server_tool_is_a_400_that_never_reaches_the_backend() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = message_with_tools("qwen", "Search the web");
    body["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "web_search_20250305", "name": "web_search"}));
    body["tool_choice"] = json!({"type": "tool", "name": "web_search"});
    let message = post_messages(&gateway, &body)
        .await
        .anthropic_error(400, "invalid_request_error");
    assert_eq!(
        message,
        "tool_choice.name: \"web_search\" is a server tool, which cannot run on this gateway"
    );
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn bad_requests_are_refused_in_anthropics_shape_naming_the_field() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = start(
        "max_body_bytes = 4096",
        &[
            route("qwen", "openai", &backend.base, ""),
            route("other", "openai", &backend.base, ""),
        ],
    )
    .await;
    let mut body = message_with_tools("qwen", "hi");
    body["messages"] = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "snow"}]}
    ]);
    let message = post_messages(&gateway, &body)
        .await
        .anthropic_error(400, "invalid_request_error");
    assert_eq!(
        message,
        "messages.3.content.0.tool_use_id: \"toolu_2\" does not answer a tool_use block of the previous assistant message"
    );
    let mut body = message_request("qwen", "hi");
    body.as_object_mut().unwrap().remove("max_tokens");
    body["temperature"] = json!(3);
    let message = post_messages(&gateway, &body)
        .await
        .anthropic_error(400, "invalid_request_error");
    assert!(
        message.contains("max_tokens: Field required")
            && message.contains("temperature: must be a number from 0 to 1"),
        "{message}"
    );
    // A large wrong value is quoted short, not echoed back whole (the body limit is 4 KB here).
    let mut body = message_request("qwen", "hi");
    body["stop_sequences"] = json!("x".repeat(3000));
    let message = post_messages(&gateway, &body)
        .await
        .anthropic_error(400, "invalid_request_error");
    assert!(
        message.starts_with("stop_sequences: must be an array of strings, got \"xxx")
            && message.len() < 400,
        "{message}"
    );
    let mut body = message_request("qwen", "hi");
    body["output_config"] = json!({"effort": "extreme"});
    let message = post_messages(&gateway, &body)
        .await
        .anthropic_error(400, "invalid_request_error");
    assert!(
        message.starts_with("output_config.effort: must be"),
        "{message}"
    );

    let message = post_messages(&gateway, &message_request("claude-opus-4", "hi"))
        .await
        .anthropic_error(404, "not_found_error");
    assert!(
        message.contains("\"claude-opus-4\"") && message.contains("qwen, other"),
        "the 404 names the routes: {message}"
    );
    let big = message_request("qwen", &"x".repeat(5000));
    post_messages(&gateway, &big)
        .await
        .anthropic_error(413, "request_too_large");
    let response = client()
        .post(format!("{}/v1/messages", gateway.base_url()))
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        backend.requests().is_empty(),
        "refused requests never reach the backend"
    );
    gateway.stop().await.unwrap();
}

fn status(code: u16, message: &str) -> Reply {
    Reply::json(code, &json!({"error": {"message": message, "type": "x"}}))
}

#[tokio::test]
async fn backend_errors_keep_the_meaning_clients_retry_by() {
    let cases = [
        (vec![status(429, "slow down"); 3], 429, "rate_limit_error"),
        (
            vec![status(503, "loading model"); 3],
            529,
            "overloaded_error",
        ),
        (vec![status(500, "crashed"); 3], 502, "api_error"),
        (
            vec![status(400, "context too long")],
            400,
            "invalid_request_error",
        ),
    ];
    for (replies, code, kind) in cases {
        let backend = ScriptedServer::start(replies).await;
        let gateway = one_route("openai", &backend.base, "").await;
        let message = post_messages(&gateway, &message_request("qwen", "hi"))
            .await
            .anthropic_error(code, kind);
        assert!(!message.is_empty());
        gateway.stop().await.unwrap();
    }
    let gateway = one_route("openai", &closed_url().await, "").await;
    let streamed = post_messages_stream(&gateway, &message_request("qwen", "hi")).await;
    let answer = Answer {
        status: streamed.status,
        headers: streamed.headers,
        text: streamed.text,
    };
    answer.anthropic_error(502, "api_error");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn an_error_after_the_stream_began_is_an_error_event() {
    let script = OpenAiScript::new()
        .text("Hel")
        .text("lo")
        .finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![script.cut_after(2)]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = message_request("qwen", "hi");
    body["stream"] = json!(true);
    let answer = post_messages(&gateway, &body).await;
    assert_eq!(answer.status, 200);
    let events = parse_events(&answer.text);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.last(), Some(&"error"), "{names:?}");
    assert!(!names.contains(&"message_stop"));
    let error = &events.last().unwrap().1;
    assert_eq!(error["error"]["type"], "api_error", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("cut"),
        "{error}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn problems_with_the_models_calls_ride_on_the_message() {
    let script = OpenAiScript::new()
        .tool_call("call_1", "get_news", &["{}"])
        .tool_call("call_2", "get_weather", &["{\"city\": 7}"])
        .finish("tool_calls", 5, 5);
    let (message, _, _) = both_ways(
        "openai",
        "",
        script.reply(),
        &message_with_tools("qwen", "news?"),
    )
    .await;
    let codes: Vec<(u64, &str)> = message["tool_call_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| {
            (
                problem["index"].as_u64().unwrap(),
                problem["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [(0, "unknown_tool_call"), (1, "invalid_tool_arguments")]
    );
    assert_eq!(
        message["content"][0]["name"], "get_news",
        "calls are passed on unchanged"
    );

    let backend = ScriptedServer::start(vec![script.reply()]).await;
    let gateway = one_route("openai", &backend.base, "tool_call_errors = \"reject\"").await;
    let message = post_messages(&gateway, &message_with_tools("qwen", "news?"))
        .await
        .anthropic_error(502, "api_error");
    assert!(message.contains("get_news"), "{message}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_silent_backend_gets_pings_in_the_stream() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("Thinking hard")
        .text(", done.")
        .finish("stop", 3, 4)
        .reply();
    reply.gate = Some((1, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = message_request("qwen", "hi");
    body["stream"] = json!(true);
    let mut response = client()
        .post(format!("{}/v1/messages", gateway.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("event: ping\n") {
        let bytes = response
            .chunk()
            .await
            .unwrap()
            .expect("the stream ended early");
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    gate.notify_one();
    while let Some(bytes) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    let events = parse_events(&seen);
    let ping = events.iter().position(|(name, _)| name == "ping").unwrap();
    assert!(ping > 0 && events[0].0 == "message_start", "{seen}");
    assert_eq!(fold(&events)["content"][0]["text"], "Thinking hard, done.");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_character_talks_through_the_messages_api() {
    let call = OpenAiScript::new()
        .tool_call(
            "call_1",
            "log_story_event",
            &["{\"event\": \"A key\", \"importance\": \"high\"}"],
        )
        .finish("tool_calls", 100, 20);
    let words = OpenAiScript::new()
        .text("The door ")
        .text("creaks open.")
        .finish("stop", 150, 12);
    let backend = ScriptedServer::start(vec![call.reply(), words.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let streamed = post_messages_stream(
        &gateway,
        &message_request("character/narrator", "I search the desk."),
    )
    .await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(
        streamed.message["content"],
        json!([{"type": "text", "text": "The door creaks open."}]),
        "the character's own calls stay inside"
    );
    assert_eq!(streamed.message["stop_reason"], "end_turn");
    assert_eq!(streamed.message["model"], "character/narrator");
    assert_eq!(backend.requests().len(), 2);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn models_are_listed_in_anthropics_shape_for_anthropic_clients() {
    let gateway = start(
        "",
        &[
            route("local", "openai", "http://127.0.0.1:1/v1", ""),
            route("claude-proxy", "anthropic", "http://127.0.0.1:1", ""),
        ],
    )
    .await;
    let anthropic: Value = client()
        .get(format!("{}/v1/models", gateway.base_url()))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = anthropic["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[..2], ["local", "claude-proxy"]);
    assert!(ids.contains(&"character/narrator"), "{ids:?}");
    assert_eq!(
        anthropic["data"][0],
        json!({"type": "model", "id": "local", "display_name": "local", "created_at": "1970-01-01T00:00:00Z"})
    );
    assert_eq!(anthropic["has_more"], false);
    assert_eq!(anthropic["first_id"], "local");
    assert_eq!(anthropic["last_id"], *ids.last().unwrap());
    let openai = get(&gateway, "/v1/models").await.json();
    assert_eq!(openai["object"], "list");
    assert_eq!(openai["data"][0]["object"], "model");
    gateway.stop().await.unwrap();
}

/// A backend that answers tokenizer requests as vLLM or llama.cpp do, and records them.
fn tokenizer_backend(kind: &'static str) -> impl Fn(&Captured) -> Reply + Send + Sync + 'static {
    move |request: &Captured| {
        let path = request
            .head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let body = &request.body;
        match (kind, path.as_str()) {
            ("vllm", "/tokenize") => {
                let messages = body["messages"].as_array().map_or(0, Vec::len) as u64;
                Reply::json(
                    200,
                    &json!({"count": 100 + messages, "max_model_len": 32768, "tokens": []}),
                )
            }
            ("llama.cpp", "/tokenize") if body.get("content").is_some() => {
                let words = body["content"].as_str().unwrap().split_whitespace().count();
                Reply::json(200, &json!({"tokens": vec![1; words]}))
            }
            ("llama.cpp", "/tokenize") => Reply::json(200, &json!({"tokens": []})),
            ("llama.cpp", "/apply-template") => {
                let text: Vec<String> = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
                    .collect();
                Reply::json(
                    200,
                    &json!({"prompt": format!("<s> {} </s>", text.join(" "))}),
                )
            }
            _ => Reply::json(404, &json!({"error": {"message": "Not Found"}})),
        }
    }
}

fn count_answer(answer: &Answer) -> (u64, String) {
    assert_eq!(answer.status, 200, "{}", answer.text);
    let tokens = answer.json()["input_tokens"].as_u64().unwrap();
    let source = answer.headers["x-switchboard-token-count"]
        .to_str()
        .unwrap()
        .to_owned();
    (tokens, source)
}

#[tokio::test]
async fn count_tokens_asks_the_backends_tokenizer() {
    let body = json!({"model": "qwen", "system": "Be brief.", "messages": [{"role": "user", "content": "three words here"}]});

    let vllm = ScriptedServer::responding(tokenizer_backend("vllm")).await;
    let gateway = one_route("openai", &format!("{}/v1", vllm.base), "").await;
    let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
    assert_eq!(count_answer(&answer), (102, "backend".to_owned()));
    let asked = &vllm.requests()[0];
    assert!(asked.head.starts_with("post /tokenize "), "{}", asked.head);
    assert_eq!(asked.body["model"], BACKEND_MODEL);
    assert_eq!(asked.body["add_generation_prompt"], true);
    assert_eq!(asked.body["messages"][1]["content"], "three words here");
    gateway.stop().await.unwrap();

    let llama = ScriptedServer::responding(tokenizer_backend("llama.cpp")).await;
    let gateway = one_route("openai", &format!("{}/v1", llama.base), "").await;
    for _ in 0..2 {
        let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
        // "<s> Be brief. three words here </s>"
        assert_eq!(count_answer(&answer), (7, "backend".to_owned()));
    }
    let paths: Vec<String> = llama
        .requests()
        .iter()
        .map(|request| request.head.split_whitespace().nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(
        paths,
        [
            "/tokenize",
            "/apply-template",
            "/tokenize",
            "/apply-template",
            "/tokenize"
        ],
        "the server's kind is learnt once"
    );
    gateway.stop().await.unwrap();

    let anthropic = ScriptedServer::responding(|request: &Captured| {
        assert!(
            request.head.starts_with("post /v1/messages/count_tokens "),
            "{}",
            request.head
        );
        assert!(request.body.get("max_tokens").is_none(), "{}", request.body);
        Reply::json(200, &json!({"input_tokens": 42}))
    })
    .await;
    let gateway = one_route("anthropic", &anthropic.base, "").await;
    let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
    assert_eq!(count_answer(&answer), (42, "backend".to_owned()));
    assert_eq!(
        anthropic.requests()[0].body["system"][0]["text"],
        "Be brief."
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn count_tokens_estimates_where_the_backend_cannot_count() {
    let body =
        json!({"model": "qwen", "messages": [{"role": "user", "content": "0123456789abcdef"}]});
    let none = ScriptedServer::responding(tokenizer_backend("neither")).await;
    let gateway = one_route("openai", &format!("{}/v1", none.base), "").await;
    for _ in 0..2 {
        let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
        // 16 bytes: 4 tokens, and 4 for the message.
        assert_eq!(count_answer(&answer), (8, "estimate".to_owned()));
    }
    assert_eq!(
        none.requests().len(),
        2,
        "asked once, then known to have no tokenizer"
    );
    gateway.stop().await.unwrap();

    let ollama = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("ollama", &ollama.base, "").await;
    let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
    assert_eq!(count_answer(&answer), (8, "estimate".to_owned()));
    gateway.stop().await.unwrap();

    // A prompted route counts the prompt it would send: the tools are in it.
    let vllm = ScriptedServer::responding(tokenizer_backend("vllm")).await;
    let gateway = one_route(
        "openai",
        &format!("{}/v1", vllm.base),
        "tool_calling = \"prompted\"\nformat = \"hermes\"",
    )
    .await;
    let mut body = body.clone();
    body["tools"] = message_tools();
    let answer = post_anthropic(&gateway, "/v1/messages/count_tokens", &body).await;
    assert_eq!(count_answer(&answer), (102, "backend".to_owned()));
    let asked = &vllm.requests()[0].body;
    assert!(
        asked["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("get_weather"),
        "{asked}"
    );
    assert!(asked.get("tools").is_none(), "{asked}");
    let message = post_anthropic(
        &gateway,
        "/v1/messages/count_tokens",
        &json!({"model": "nope", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await
    .anthropic_error(404, "not_found_error");
    assert!(message.contains("nope"));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_streams_head_and_end_report_one_prompt_count() {
    let body = json!({"model": "qwen", "max_tokens": 64, "system": "Be brief.", "stream": true,
        "messages": [{"role": "user", "content": "three words here"}]});
    // vLLM's tokenizer counts 100 + 2 messages, as does its answer's usage.
    let script = OpenAiScript::new().text("Hi.").finish("stop", 102, 3);
    let tokenizer = tokenizer_backend("vllm");
    let vllm = ScriptedServer::responding(move |request: &Captured| {
        if request.head.starts_with("post /v1/chat/completions ") {
            script.reply()
        } else {
            tokenizer(request)
        }
    })
    .await;
    let gateway = one_route("openai", &format!("{}/v1", vllm.base), "").await;
    let streamed = post_messages_stream(&gateway, &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(streamed.headers["x-switchboard-token-count"], "backend");
    let start = &streamed.events[0].1["message"]["usage"];
    let end = &streamed
        .events
        .iter()
        .rev()
        .find(|(name, _)| name == "message_delta")
        .unwrap()
        .1["usage"];
    assert_eq!(start["input_tokens"], 102, "{}", streamed.text);
    assert_eq!(end["input_tokens"], 102, "{}", streamed.text);
    gateway.stop().await.unwrap();

    // Without a tokenizer the head carries the estimate, and says so.
    let script = OpenAiScript::new().text("Hi.").finish("stop", 10, 3);
    let none = ScriptedServer::responding(move |request: &Captured| {
        if request.head.starts_with("post /v1/chat/completions ") {
            script.reply()
        } else {
            Reply::json(404, &json!({"error": {"message": "Not Found"}}))
        }
    })
    .await;
    let gateway = one_route("openai", &format!("{}/v1", none.base), "").await;
    let streamed = post_messages_stream(&gateway, &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(streamed.headers["x-switchboard-token-count"], "estimate");
    gateway.stop().await.unwrap();
}
