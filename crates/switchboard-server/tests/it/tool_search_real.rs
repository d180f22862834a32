//! Tool search on the real llama-server (SmolLM2, few-shot as `real_backend.rs` does): the
//! model calls the gateway's search tool, the gateway runs it, and the next round offers the
//! tool found, in full, to the real model. Checked is behaviour, never the model's wording.
//! Without the server this prints SKIP and passes (and fails under
//! `SWITCHBOARD_REQUIRE_PEERS=1`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_testkit::{LlamaServer, Tap, tool_names};

use crate::common::{post, route, start};

/// Turns in which the assistant searched for the weather tool, then the question for `ask`:
/// a model this small calls a tool only after seeing it done.
fn few_shot(ask: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for (index, city) in ["Paris", "Berlin", "Rome", "Oslo"].iter().enumerate() {
        let id = format!("call_{index}");
        messages.push(json!({"role": "user", "content": format!("Weather in {city}?")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "tool_search", "arguments": json!({"query": "weather"}).to_string()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id,
            "content": "Tools found (callable from your next turn):\n- get_weather: Current weather in a city"}));
        messages.push(json!({"role": "assistant", "content": "18 C"}));
    }
    messages.push(json!({"role": "user", "content": format!("Weather in {ask}?")}));
    messages
}

#[tokio::test]
async fn the_real_model_searches_and_the_next_round_offers_the_tool_found() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let tap = Tap::start(server.base_url()).await;
    let gateway = start(
        "",
        &[route(
            "native",
            "openai",
            &format!("{}/v1", tap.base),
            "max_tool_rounds = 2",
        )],
    )
    .await;
    let mut tools = vec![json!({"type": "tool_search"})];
    tools.push(json!({"type": "function", "defer_loading": true, "function": {"name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}));
    tools.extend((0..20).map(|n| {
        json!({"type": "function", "defer_loading": true, "function": {"name": format!("inventory_bin_{n}"),
            "description": "Count the parts in a storage bin",
            "parameters": {"type": "object", "properties": {"bin": {"type": "string"}}}}})
    }));
    let answer = post(
        &gateway,
        &json!({"model": "native", "messages": few_shot("Tokyo"), "tools": tools,
            "temperature": 0, "max_tokens": 60}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = answer.json();
    let sent = tap.requests();
    assert!(sent.len() >= 2, "the model never searched: {answer}");
    assert_eq!(tool_names(&sent[0]), ["tool_search"], "{}", sent[0]);
    let ran = &answer["choices"][0]["gateway_tool_calls"][0];
    assert_eq!(ran["name"], "tool_search", "{answer}");
    assert!(
        ran["content"].as_str().unwrap().contains("- get_weather"),
        "{answer}"
    );
    let next = &sent[1];
    assert!(
        tool_names(next).iter().any(|name| name == "get_weather"),
        "{next}"
    );
    assert!(
        next["tools"].to_string().contains("\"city\""),
        "offered in full: {next}"
    );
    gateway.stop().await.unwrap();
}
