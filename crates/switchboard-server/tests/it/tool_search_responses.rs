//! The hosted tool search on the Responses API (`{"type": "tool_search"}` over tools marked
//! `defer_loading`: 40 functions, a namespace's functions, an `mcp` server), asked through
//! the official `openai` SDK (tests/sdk/tool_search_client.py reports what it made of each
//! answer): the gateway runs the search the model asks for, the answer carries
//! `tool_search_call` and `tool_search_output` items the SDK parses as its own types, the
//! tools found are offered in the same request (a found MCP tool runs in the gateway, a
//! found function's call goes back to the client), streamed equals whole, and the backend
//! never sees a deferred definition before the search. Bad input is the model's to read;
//! searching forever stops at `max_tool_rounds`; a stored response and replayed items keep
//! the found tools offered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use switchboard_server::RunningGateway;
use switchboard_testkit::{
    Captured, Chunking, OpenAiScript, Reply, ScriptedServer, last_message, message_text, tool_names,
};

use crate::common::{self, post_with, python_client, route};
use crate::gateway_tools::{everything, gateway};

/// A parameter's description no request before a search may carry.
const HIDDEN: &str = "zz-hidden-parameter";

fn schema() -> Value {
    json!({"type": "object", "properties": {"id": {"type": "string", "description": HIDDEN}},
        "required": ["id"]})
}

/// The request's tools: the hosted search, one function offered at once, 40 deferred
/// functions, a namespace of deferred functions, and `mcp` (server-everything, deferred)
/// when given.
fn tools(mode: &str, mcp: bool) -> Vec<Value> {
    let mut tools = vec![
        json!({"type": "tool_search", "mode": mode}),
        json!({"type": "function", "name": "get_time", "description": "The time now",
            "parameters": {"type": "object", "properties": {}}}),
        json!({"type": "function", "name": "get_weather", "description": "Current weather in a city",
            "defer_loading": true, "parameters": schema()}),
        json!({"type": "namespace", "name": "crm", "description": "The customer records",
        "tools": [
            {"type": "function", "name": "lookup_customer", "description": "Find a customer by id",
                "defer_loading": true, "parameters": schema()},
            {"type": "function", "name": "delete_customer", "description": "Remove a customer record",
                "defer_loading": true, "parameters": schema()}
        ]}),
    ];
    tools.extend((0..39).map(|n| {
        json!({"type": "function", "name": format!("inventory_bin_{n}"),
            "description": "Count the parts in a storage bin", "defer_loading": true,
            "parameters": schema()})
    }));
    if mcp {
        tools.push(
            json!({"type": "mcp", "server_label": "everything", "require_approval": "never",
            "server_description": "A reference MCP server", "defer_loading": true}),
        );
    }
    tools
}

/// The chunkings the backend's answers take in turn.
fn chunking(turn: usize) -> Chunking {
    [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole][turn % 3]
}

/// Searches, calls the MCP tool found, then the namespace's function found.
fn searching_model() -> impl Fn(&Captured) -> Reply + Send + Sync + 'static {
    let turns = Arc::new(AtomicUsize::new(0));
    move |request: &Captured| {
        let turn = turns.fetch_add(1, Ordering::SeqCst);
        let last = last_message(&request.body);
        let tools = tool_names(&request.body);
        let script = if last["role"] == "tool" && message_text(&last).starts_with("Echo:") {
            OpenAiScript::new()
                .tool_call(
                    "call_c",
                    "crm__lookup_customer",
                    &[r#"{"id": "#, r#""42"}"#],
                )
                .finish("tool_calls", 140, 8)
        } else if tools.iter().any(|tool| tool == "echo") {
            OpenAiScript::new()
                .tool_call("call_e", "echo", &[r#"{"message": "found it"}"#])
                .finish("tool_calls", 120, 8)
        } else {
            OpenAiScript::new()
                .tool_call(
                    "call_s",
                    "tool_search",
                    &[r#"{"query": "echo cust"#, r#"omer lookup"}"#],
                )
                .finish("tool_calls", 100, 10)
        };
        script.reply_in(chunking(turn))
    }
}

async fn sdk(gateway: &RunningGateway, case: &str, request: &Value) -> Value {
    python_client(
        "sdk/tool_search_client.py",
        &[&gateway.base_url(), case],
        "openai",
        Some(request),
    )
    .await
}

fn classes(items: &Value) -> Vec<&str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["class"].as_str().unwrap())
        .collect()
}

/// Items without what two answers cannot share (their ids, the gateway's call ids), nor
/// the `parsed_arguments` (null here) the stream helper's own class adds.
fn comparable(items: &Value) -> Value {
    let mut items = items.clone();
    for item in items.as_array_mut().unwrap() {
        item["id"] = json!("item");
        if item["type"] == "function_call" {
            item["call_id"] = json!("call");
        }
        let item = item.as_object_mut().unwrap();
        if item.get("parsed_arguments").is_some_and(Value::is_null) {
            item.remove("parsed_arguments");
        }
        let class = item["class"].as_str().unwrap().trim_start_matches("Parsed");
        item["class"] = json!(class);
    }
    items
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_reads_a_hosted_search_and_the_found_tools_run() {
    let Some(servers) = everything() else { return };
    let backend = ScriptedServer::responding(searching_model()).await;
    let gateway = gateway(&servers, &backend, "").await;
    let request = json!({"model": "local", "input": "Echo something, then find customer 42.",
        "tools": tools("bm25", true), "store": false});
    let answer = sdk(&gateway, "both", &request).await;
    assert_eq!(
        classes(&answer["whole"]),
        [
            "McpListTools",
            "ResponseToolSearchCall",
            "ResponseToolSearchOutputItem",
            "McpCall",
            "ResponseFunctionToolCall"
        ],
        "{answer}"
    );
    assert_eq!(
        comparable(&answer["streamed"]),
        comparable(&answer["whole"]),
        "streamed equals whole"
    );
    let types: Vec<&str> = answer["event_types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types.last(), Some(&"response.completed"));
    assert!(types.contains(&"response.output_item.added"), "{types:?}");
    let whole = &answer["whole"];
    let call = &whole[1];
    assert_eq!(call["execution"], "server");
    assert_eq!(call["call_id"], Value::Null);
    assert_eq!(call["status"], "completed");
    assert_eq!(call["arguments"], json!({"query": "echo customer lookup"}));
    let output = &whole[2];
    assert_eq!(output["execution"], "server");
    assert_eq!(output["call_id"], Value::Null);
    // The tools found, best first: the server's tool in its mcp entry, the namespace's
    // function inside its namespace, with its whole definition.
    let loaded = output["tools"].as_array().unwrap();
    let mcp = loaded.iter().find(|tool| tool["type"] == "mcp").unwrap();
    assert_eq!(mcp["server_label"], "everything");
    assert_eq!(mcp["allowed_tools"], json!(["echo"]));
    let crm = loaded
        .iter()
        .find(|tool| tool["type"] == "namespace")
        .unwrap();
    assert_eq!(crm["name"], "crm");
    assert_eq!(crm["description"], "The customer records");
    assert_eq!(crm["tools"][0]["name"], "lookup_customer");
    assert_eq!(crm["tools"][0]["parameters"], schema());
    // The found MCP tool really ran, in the gateway.
    assert_eq!(whole[3]["server_label"], "everything");
    assert_eq!(whole[3]["name"], "echo");
    assert_eq!(whole[3]["output"], "Echo: found it");
    // The found function's call went back to the client, in its namespace.
    assert_eq!(whole[4]["name"], "lookup_customer");
    assert_eq!(whole[4]["namespace"], "crm");
    assert_eq!(whole[4]["arguments"], r#"{"id": "42"}"#);

    // The backend: before the search, the search tool and the function offered at once,
    // the deferred tools by name only (in the search tool's description).
    let first = common::sent(&backend, 0);
    assert_eq!(tool_names(&first), ["get_time", "tool_search"]);
    assert!(!first.to_string().contains(HIDDEN), "{first}");
    let about = first["tools"][1]["function"]["description"]
        .as_str()
        .unwrap();
    for shown in [
        "- get_weather: Current weather in a city",
        "- crm: The customer records",
        "- everything: A reference MCP server",
        "- inventory_bin_38",
    ] {
        assert!(about.contains(shown), "{shown} in {about}");
    }
    assert!(!about.contains("lookup_customer"), "{about}");
    // After it, the tools found, whole.
    let second = common::sent(&backend, 1);
    let names = tool_names(&second);
    assert!(
        names.contains(&"echo".to_owned()) && names.contains(&"crm__lookup_customer".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"inventory_bin_0".to_owned()), "{names:?}");
    assert!(second.to_string().contains(HIDDEN));
    gateway.stop().await.unwrap();
}

/// Searches for the weather, calls it, then answers from its result.
fn weather_model(request: &Captured) -> Reply {
    let last = last_message(&request.body);
    let tools = tool_names(&request.body);
    let script = if last["role"] == "tool" && message_text(&last) == "18 degrees" {
        OpenAiScript::new()
            .text("It is 18 degrees.")
            .finish("stop", 150, 6)
    } else if tools.iter().any(|tool| tool == "get_weather") {
        OpenAiScript::new()
            .tool_call("call_w", "get_weather", &[r#"{"id": "Paris"}"#])
            .finish("tool_calls", 130, 8)
    } else {
        OpenAiScript::new()
            .tool_call("call_s", "tool_search", &[r#"{"pattern": "weather"}"#])
            .finish("tool_calls", 100, 10)
    };
    script.reply()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stored_response_and_replayed_items_keep_the_found_tools_offered() {
    let backend = ScriptedServer::responding(weather_model).await;
    let gateway = common::native_route(&backend).await;
    let request = json!({"model": "native", "input": "Weather in Paris?",
        "tools": tools("regex", false)});
    let answer = sdk(&gateway, "continue", &request).await;
    assert_eq!(
        classes(&answer["first"]),
        [
            "ResponseToolSearchCall",
            "ResponseToolSearchOutputItem",
            "ResponseFunctionToolCall"
        ],
        "{answer}"
    );
    assert_eq!(answer["first"][1]["tools"][0]["name"], "get_weather");
    assert_eq!(answer["stored_text"], "It is 18 degrees.");
    assert_eq!(answer["replayed_text"], "It is 18 degrees.");
    // Two rounds for the first request; then one each, offered the found tool at once.
    assert_eq!(backend.requests().len(), 4);
    for index in [2, 3] {
        let sent = common::sent(&backend, index);
        assert_eq!(
            tool_names(&sent),
            ["get_time", "get_weather", "tool_search"],
            "{sent}"
        );
        let roles: Vec<&str> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant", "tool"]);
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn an_invalid_pattern_is_the_models_to_read() {
    let backend = ScriptedServer::responding(|request: &Captured| {
        let last = last_message(&request.body);
        let script = if last["role"] == "tool" {
            OpenAiScript::new()
                .text("The search failed.")
                .finish("stop", 110, 4)
        } else {
            OpenAiScript::new()
                .tool_call("call_s", "tool_search", &[r#"{"pattern": "(unclosed"}"#])
                .finish("tool_calls", 100, 10)
        };
        script.reply()
    })
    .await;
    let gateway = common::native_route(&backend).await;
    let body = json!({"model": "native", "input": "Weather?", "tools": tools("regex", false)});
    let answer = post_with(&gateway, "/v1/responses", &body, &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = answer.json();
    assert_eq!(answer["status"], "completed");
    let output = answer["output"].as_array().unwrap();
    let types: Vec<&str> = output
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["tool_search_call", "tool_search_output", "message"]);
    assert_eq!(output[1]["status"], "incomplete");
    assert_eq!(output[1]["tools"], json!([]));
    let result = last_message(&common::sent(&backend, 1));
    assert_eq!(result["role"], "tool");
    assert!(
        message_text(&result).starts_with("Error: invalid_tool_input"),
        "{result}"
    );

    // Streamed: each item announced and closed in order, the same items as whole.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = post_with(&gateway, "/v1/responses", &streamed, &[]).await;
    assert_eq!(events.status, 200);
    let events: Vec<Value> = events
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let items = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|event| event["type"] == kind)
            .map(|event| event["item"]["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = ["tool_search_call", "tool_search_output", "message"];
    assert_eq!(items("response.output_item.added"), expected);
    assert_eq!(items("response.output_item.done"), expected);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.completed");
    let same = |output: &Value| {
        let mut output = output.clone();
        for item in output.as_array_mut().unwrap() {
            item["id"] = json!("item");
        }
        output
    };
    assert_eq!(same(&done["response"]["output"]), same(&answer["output"]));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_model_that_searches_forever_stops_at_max_tool_rounds() {
    let backend = ScriptedServer::responding(|_: &Captured| {
        OpenAiScript::new()
            .tool_call("call_s", "tool_search", &[r#"{"query": "bin"}"#])
            .finish("tool_calls", 100, 10)
            .reply()
    })
    .await;
    let gateway = common::start(
        "",
        &[route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "max_tool_rounds = 3",
        )],
    )
    .await;
    let mut body = json!({"model": "native", "input": "Count", "tools": tools("bm25", false)});
    let whole = post_with(&gateway, "/v1/responses", &body, &[]).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    assert_eq!(whole["status"], "incomplete");
    assert_eq!(whole["incomplete_details"]["reason"], "max_tool_calls");
    let calls = whole["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "tool_search_call")
        .count();
    assert_eq!(calls, 3);
    assert_eq!(backend.requests().len(), 3);

    body["stream"] = json!(true);
    let streamed = post_with(&gateway, "/v1/responses", &body, &[]).await;
    assert_eq!(streamed.status, 200);
    assert!(streamed.text.contains("event: response.incomplete"));
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stored_response_keeps_a_deferred_servers_found_tool_offered() {
    let Some(servers) = everything() else { return };
    let backend = ScriptedServer::responding(searching_model()).await;
    let gateway = gateway(&servers, &backend, "").await;
    let body = json!({"model": "local", "input": "Echo something, then find customer 42.",
        "tools": tools("bm25", true)});
    let first = post_with(&gateway, "/v1/responses", &body, &[]).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    let call = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap()
        .clone();
    let asked = backend.requests().len();
    let next = json!({"model": "local", "previous_response_id": first["id"],
        "tools": tools("bm25", true),
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "Ada"}]});
    let answer = post_with(&gateway, "/v1/responses", &next, &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    // Offered from the start: the server's tool and the namespace's function found before,
    // not the tools no search found.
    let names = tool_names(&common::sent(&backend, asked));
    for found in ["echo", "crm__lookup_customer", "tool_search"] {
        assert!(names.contains(&found.to_owned()), "{found} in {names:?}");
    }
    assert!(!names.contains(&"get_weather".to_owned()), "{names:?}");
    assert!(!names.contains(&"get-sum".to_owned()), "{names:?}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_function_named_like_the_hosted_search_is_refused() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = common::native_route(&backend).await;
    let body = json!({"model": "native", "input": "hi", "tools": [
        {"type": "tool_search"}, {"type": "function", "name": "tool_search"}]});
    let answer = post_with(&gateway, "/v1/responses", &body, &[]).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert_eq!(answer.json()["error"]["param"], "tools");
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}
