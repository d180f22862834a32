//! The official `openai` Python SDK and the OpenAI Agents SDK against the gateway's
//! Responses API (tests/sdk/responses_client.py reports what they made of each answer):
//! `responses.stream(...).get_final_response()` equals `responses.create(...)` for the same
//! backend output, through a native and a prompted route; calls, call outputs, the store
//! and errors as the SDK's own types.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_server::RunningGateway;
use switchboard_testkit::{Captured, Chunking, OpenAiScript, Reply, ScriptedServer};

const BACKEND_ID: &str = "call_abcdefghijklmnopqrstuvwx12";

/// A gateway with a native route `native` and a prompted (hermes) route `hermes`, both in
/// front of `backend`.
async fn gateway(backend: &ScriptedServer) -> RunningGateway {
    start(
        "",
        &[
            route("native", "openai", &format!("{}/v1", backend.base), ""),
            route(
                "hermes",
                "openai",
                &format!("{}/v1", backend.base),
                "tool_calling = \"prompted\"\nformat = \"hermes\"",
            ),
        ],
    )
    .await
}

async fn client(gateway: &RunningGateway, case: &str, model: &str) -> Value {
    python_client(
        "sdk/responses_client.py",
        &[&gateway.base_url(), case, model],
        "openai and openai-agents",
        None,
    )
    .await
}

/// The same answer twice: per SSE event for the SDK's whole request, one byte per HTTP
/// chunk for its streamed one.
fn twice(script: &OpenAiScript) -> Vec<Reply> {
    vec![script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

/// A response as the SDK parsed it, without what two answers cannot share, nor the
/// `parsed`/`parsed_arguments` fields (null here) the stream helper's own model adds.
fn comparable(response: &Value) -> Value {
    let mut response = response.clone();
    for item in response["output"].as_array_mut().unwrap() {
        let item = item.as_object_mut().unwrap();
        if item.get("parsed_arguments").is_some_and(Value::is_null) {
            item.remove("parsed_arguments");
        }
        for part in item
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if part.get("parsed").is_some_and(Value::is_null) {
                part.as_object_mut().unwrap().remove("parsed");
            }
        }
    }
    assert!(
        response["id"].as_str().unwrap().starts_with("resp_"),
        "{response}"
    );
    response["id"] = json!("resp");
    response["created_at"] = json!(0);
    for item in response["output"].as_array_mut().unwrap() {
        item["id"] = json!("item");
        if let Some(call_id) = item["call_id"].as_str() {
            assert!(is_call_id(call_id), "{item}");
            item["call_id"] = json!("call");
        }
    }
    response
}

/// Checks that the SDK's streamed final response equals the whole one; returns the whole.
fn agreed(result: &Value) -> Value {
    assert_eq!(
        comparable(&result["streamed"]),
        comparable(&result["whole"]),
        "get_final_response() differs from create()"
    );
    assert_eq!(result["streamed_text"], result["whole_text"]);
    let types = result["event_types"].as_array().unwrap();
    assert_eq!(types.first().unwrap(), "response.created");
    assert_eq!(types.last().unwrap(), "response.completed");
    result["whole"].clone()
}

fn types(response: &Value) -> Vec<&str> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn function_tools_streamed_equal_whole_on_a_native_route() {
    let script = OpenAiScript::new()
        .text("Let me ")
        .text("check.")
        .tool_call(
            BACKEND_ID,
            "get_weather",
            &["{\"city\":", " \"Par", "is\"}"],
        )
        .finish("tool_calls", 20, 9);
    let backend = ScriptedServer::start(twice(&script)).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "tools", "native").await;
    let whole = agreed(&result);
    assert_eq!(whole["model"], "native");
    assert_eq!(whole["instructions"], "You are terse.");
    assert_eq!(types(&whole), ["message", "function_call"]);
    assert_eq!(result["whole_text"], "Let me check.");
    assert_eq!(whole["output"][1]["call_id"], BACKEND_ID);
    assert_eq!(whole["output"][1]["arguments"], "{\"city\": \"Paris\"}");
    assert_eq!(whole["usage"]["total_tokens"], 29);
    for event in [
        "response.output_item.added",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.output_item.done",
    ] {
        assert!(
            result["event_types"]
                .as_array()
                .unwrap()
                .contains(&json!(event)),
            "{event}"
        );
    }
    for request in backend.requests() {
        assert_eq!(
            request.body["messages"][0],
            json!({"role": "system", "content": "You are terse."})
        );
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn function_tools_streamed_equal_whole_on_a_prompted_route() {
    let markup = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let script = markup
        .as_bytes()
        .chunks(9)
        .fold(OpenAiScript::new().text("Checking.\n"), |script, piece| {
            script.text(std::str::from_utf8(piece).unwrap())
        })
        .finish("stop", 40, 17);
    let backend = ScriptedServer::start(twice(&script)).await;
    let gateway = gateway(&backend).await;
    let whole = agreed(&client(&gateway, "tools", "hermes").await);
    assert_eq!(types(&whole), ["message", "function_call"]);
    assert_eq!(whole["output"][1]["name"], "get_weather");
    // The parser re-serialises the markup's arguments compactly.
    assert_eq!(whole["output"][1]["arguments"], "{\"city\":\"Paris\"}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn reasoning_parallel_and_custom_tool_calls_streamed_equal_whole() {
    let patch =
        json!({"input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"}).to_string();
    let script = OpenAiScript::new()
        .delta(json!({"reasoning_content": "Two things to do."}))
        .tool_call("", "apply_patch", &[&patch[..9], &patch[9..]])
        .tool_call("", "get_weather", &["{\"city\": \"Oslo\"}"])
        .finish("tool_calls", 30, 12);
    let backend = ScriptedServer::start(twice(&script)).await;
    let gateway = gateway(&backend).await;
    let whole = agreed(&client(&gateway, "custom", "native").await);
    assert_eq!(
        types(&whole),
        ["reasoning", "custom_tool_call", "function_call"]
    );
    assert_eq!(
        whole["output"][0]["summary"][0]["text"],
        "Two things to do."
    );
    assert_eq!(
        whole["output"][1]["input"],
        "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    );
    assert_eq!(whole["reasoning"]["effort"], "high");
    assert_eq!(backend.requests()[0].body["reasoning_effort"], "high");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn text_format_json_schema_reaches_the_backend_and_the_answer_parses() {
    let script = OpenAiScript::new()
        .text("{\"city\": \"Paris\", ")
        .text("\"celsius\": 21}")
        .finish("stop", 12, 8);
    let backend = ScriptedServer::start(twice(&script)).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "json-schema", "native").await;
    let whole = agreed(&result);
    let parsed: Value = serde_json::from_str(result["whole_text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"city": "Paris", "celsius": 21}));
    assert_eq!(whole["text"]["format"]["type"], "json_schema");
    let format = &backend.requests()[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "weather");
    assert_eq!(format["json_schema"]["strict"], true);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_function_call_output_round_trip() {
    let call = OpenAiScript::new()
        .tool_call(BACKEND_ID, "get_weather", &["{\"city\": \"Paris\"}"])
        .finish("tool_calls", 5, 5);
    let answer = OpenAiScript::new()
        .text("Sunny, 21 C.")
        .finish("stop", 9, 4);
    let backend = ScriptedServer::start(vec![call.reply(), answer.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "round-trip", "native").await;
    assert_eq!(result["second_text"], "Sunny, 21 C.");
    let messages = &backend.requests()[1].body["messages"];
    assert_eq!(messages[1]["tool_calls"][0]["id"], BACKEND_ID, "{messages}");
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": BACKEND_ID, "content": "sunny, 21 C"})
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn previous_response_id_continues_a_stored_response() {
    let call = OpenAiScript::new()
        .tool_call("", "get_weather", &["{\"city\": \"Rome\"}"])
        .finish("tool_calls", 5, 5);
    let answer = OpenAiScript::new()
        .text("Sunny in Rome.")
        .finish("stop", 9, 4);
    let backend = ScriptedServer::start(vec![call.reply(), answer.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "store", "native").await;
    assert_eq!(result["retrieved"], result["first"]);
    assert_eq!(result["first"]["store"], true);
    assert_eq!(result["second_text"], "Sunny in Rome.");
    assert_eq!(
        result["second"]["previous_response_id"],
        result["first"]["id"]
    );
    let messages = &backend.requests()[1].body["messages"];
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool"],
        "the stored conversation, without the old instructions"
    );
    let after = result["after_delete"].as_array().unwrap();
    assert_eq!(
        (after[0]["class"].as_str(), after[0]["status"].as_u64()),
        (Some("NotFoundError"), Some(404))
    );
    assert_eq!(after[1]["class"], "BadRequestError");
    assert_eq!(after[1]["code"], "previous_response_not_found");
    assert_eq!(backend.requests().len(), 2);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn each_error_is_the_sdks_typed_exception() {
    let limited =
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "0");
    let cut = OpenAiScript::new()
        .text("Half")
        .text(" an answer")
        .finish("stop", 1, 1)
        .cut_after(2);
    let backend = ScriptedServer::start(vec![limited.clone(), limited.clone(), limited, cut]).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "errors", "native").await;
    let errors = result["errors"].as_array().unwrap();
    let expected = [
        ("temperature", "BadRequestError", Some("temperature"), None),
        ("call_id", "BadRequestError", Some("input[0].call_id"), None),
        (
            "model",
            "NotFoundError",
            Some("model"),
            Some("model_not_found"),
        ),
        (
            "previous",
            "BadRequestError",
            Some("previous_response_id"),
            Some("previous_response_not_found"),
        ),
        ("rate_limit", "RateLimitError", None, Some("rate_limited")),
    ];
    for (error, (label, class, param, code)) in errors.iter().zip(expected) {
        assert_eq!(error["label"], label);
        assert_eq!(error["class"], class, "{error}");
        assert_eq!(error["param"].as_str(), param, "{error}");
        if let Some(code) = code {
            assert_eq!(error["code"], code, "{error}");
        }
    }
    // An error after the stream began: a response.failed event, and no final response.
    let cut = &errors[5];
    assert_eq!(cut["class"], "RuntimeError", "{cut}");
    assert!(
        cut["message"]
            .as_str()
            .unwrap()
            .contains("backend_stream_cut"),
        "{cut}"
    );
    assert_eq!(
        backend.requests().len(),
        4,
        "refused requests never reach the backend"
    );
    gateway.stop().await.unwrap();
}

/// The scripted model behind the agent: a call to get_weather, then an answer quoting the
/// tool's result.
fn weather_model(request: &Captured) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let script = if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        OpenAiScript::new()
            .text("The tool says: ")
            .text(result)
            .finish("stop", 30, 10)
    } else {
        OpenAiScript::new()
            .tool_call("", "get_weather", &["{\"city\": ", "\"Paris\"}"])
            .finish("tool_calls", 20, 5)
    };
    script.reply()
}

#[tokio::test]
async fn an_agents_sdk_agent_gets_its_tools_result_into_its_final_answer() {
    let backend = ScriptedServer::responding(weather_model).await;
    let gateway = gateway(&backend).await;
    let result = client(&gateway, "agent", "native").await;
    for run in ["whole", "streamed"] {
        let answer = result[run].as_str().unwrap_or_else(|| panic!("{result}"));
        assert!(
            answer.contains("In Paris it is 21 C and sunny (report 7f3a)."),
            "{run}: {answer}"
        );
    }
    let requests = backend.requests();
    assert_eq!(requests.len(), 4, "a call and an answer, twice");
    assert_eq!(
        requests[0].body["tools"][0]["function"]["name"],
        "get_weather"
    );
    gateway.stop().await.unwrap();
}
