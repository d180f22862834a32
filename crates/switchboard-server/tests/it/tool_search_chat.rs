//! Tool search on Chat Completions: `{"type": "tool_search"}` and `"defer_loading": true`
//! beside `"function"`. The gateway runs the search; the client sees only the call to its
//! own tool the model then makes, whole as streamed; with `x-switchboard-tool-events` the
//! search shows as a gateway tool event. The route's `tool_search_max_results` bounds it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_testkit::{Captured, OpenAiScript, Reply, ScriptedServer, tool_names};

use crate::common::{self, accumulate, parse_sse, post_with, route, summary, without_ids};

/// Searches until the weather tool is offered, then calls it.
fn model(request: &Captured) -> Reply {
    let tools = tool_names(&request.body);
    let script = if tools.iter().any(|tool| tool == "get_weather") {
        OpenAiScript::new()
            .tool_call("call_w", "get_weather", &[r#"{"city": "#, r#""Paris"}"#])
            .finish("tool_calls", 130, 8)
    } else {
        OpenAiScript::new()
            .tool_call(
                "call_s",
                "tool_search",
                &[r#"{"pattern": "weath"#, r#"er|bin_1"}"#],
            )
            .finish("tool_calls", 100, 10)
    };
    script.reply()
}

fn body() -> Value {
    let city =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let mut tools = vec![
        json!({"type": "tool_search", "mode": "regex"}),
        json!({"type": "function", "defer_loading": true, "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": city}}),
    ];
    tools.extend((0..39).map(|n| {
        json!({"type": "function", "defer_loading": true, "function": {"name": format!("inventory_bin_{n}"), "description": "Count the parts in a storage bin", "parameters": city}})
    }));
    json!({"model": "native", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": tools})
}

#[tokio::test]
async fn the_gateway_searches_and_the_client_sees_only_its_own_call() {
    let backend = ScriptedServer::responding(model).await;
    let gateway = common::start(
        "",
        &[route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "tool_search_max_results = 3",
        )],
    )
    .await;
    let whole = post_with(&gateway, "/v1/chat/completions", &body(), &[]).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    let calls = &whole["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls.as_array().unwrap().len(), 1, "{whole}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    // The backend: the search tool alone, then the tools found (at most 3), in full.
    let first = common::sent(&backend, 0);
    assert_eq!(tool_names(&first), ["tool_search"]);
    let second = common::sent(&backend, 1);
    assert_eq!(
        tool_names(&second),
        [
            "tool_search",
            "get_weather",
            "inventory_bin_1",
            "inventory_bin_10"
        ]
    );
    let result = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("- get_weather: Current weather in a city"),
        "{result}"
    );

    let mut streamed = body();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let answer = post_with(
        &gateway,
        "/v1/chat/completions",
        &streamed,
        &[("x-switchboard-tool-events", "true")],
    )
    .await;
    let (chunks, done) = parse_sse(&answer.text);
    assert!(done);
    assert_eq!(
        without_ids(accumulate(&chunks)),
        without_ids(summary(&whole)),
        "streamed equals whole"
    );
    let kinds: Vec<&str> = chunks
        .iter()
        .filter_map(|chunk| chunk["character_event"]["type"].as_str())
        .collect();
    assert_eq!(kinds, ["tool_search", "tool_started", "tool_finished"]);
    gateway.stop().await.unwrap();
}

/// The client saw only its own call; in its next request the call in the history keeps the
/// tool found offered, without another search.
#[tokio::test]
async fn a_tool_the_history_called_stays_offered_in_the_next_request() {
    let backend = ScriptedServer::responding(model).await;
    let gateway = common::one_route("openai", &format!("{}/v1", backend.base), "").await;
    let mut request = body();
    request["model"] = json!("qwen");
    request["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_w", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_w", "content": "18 degrees"}),
    ]);
    let answer = post_with(&gateway, "/v1/chat/completions", &request, &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        tool_names(&common::sent(&backend, 0)),
        ["get_weather", "tool_search"]
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_deferred_tool_needs_the_search_tool() {
    let backend = ScriptedServer::responding(model).await;
    let gateway = common::one_route("openai", &format!("{}/v1", backend.base), "").await;
    let mut request = body();
    request["model"] = json!("qwen");
    request["tools"].as_array_mut().unwrap().remove(0);
    let answer = post_with(&gateway, "/v1/chat/completions", &request, &[]).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(
        answer
            .text
            .contains("needs a {\\\"type\\\": \\\"tool_search\\\"} tool"),
        "{}",
        answer.text
    );
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_problem_names_its_tool_where_it_stands_beside_the_search_tool() {
    let backend = ScriptedServer::responding(model).await;
    let gateway = common::one_route("openai", &format!("{}/v1", backend.base), "").await;
    let request = json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "tool_search", "mode": "regex"},
        {"type": "function", "defer_loading": true, "function": {"name": "bad name", "parameters": {"type": "object"}}}]});
    let answer = post_with(&gateway, "/v1/chat/completions", &request, &[]).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(
        answer.text.contains("tools[1].function.name"),
        "{}",
        answer.text
    );
    let mut request = request;
    request["tools"][0]["mode"] = json!("fuzzy");
    let answer = post_with(&gateway, "/v1/chat/completions", &request, &[]).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.text.contains("tools[0].mode"), "{}", answer.text);
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}
