//! `character/<name>` routes: the gateway plays the repository's narrator itself — its
//! system prompt and its tool, run in the gateway — and the client only hears the words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{OpenAiScript, Reply, ScriptedServer};

/// The model first logs a story event, then narrates.
fn narrator_turn() -> [Reply; 2] {
    let call = OpenAiScript::new()
        .tool_call(
            "call_narratornarratornarrator1",
            "log_story_event",
            &[
                "{\"event\": \"The hero found the brass key\", ",
                "\"importance\": \"high\"}",
            ],
        )
        .finish("tool_calls", 100, 20);
    let words = OpenAiScript::new()
        .text("The door ")
        .text("creaks open. ")
        .text("What do you do?")
        .finish("stop", 150, 12);
    [call.reply(), words.reply()]
}

#[tokio::test]
async fn the_narrator_runs_its_tool_and_streams_the_follow_up() {
    let [call, words] = narrator_turn();
    let backend = ScriptedServer::start(vec![call, words]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = streaming(json!({"model": "character/narrator", "messages": [
        {"role": "user", "content": "I search the old desk."}]}));
    let streamed = post_stream(&gateway, &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(streamed.done, "{}", streamed.text);
    let answer = accumulate(&streamed.chunks);
    assert_eq!(answer["content"], "The door creaks open. What do you do?");
    assert_eq!(
        answer["tool_calls"],
        json!([]),
        "the character's own calls stay inside"
    );
    assert_eq!(answer["finish_reason"], "stop");
    assert_eq!(
        answer["usage"]["total_tokens"],
        answer["usage"]["prompt_tokens"].as_u64().unwrap()
            + answer["usage"]["completion_tokens"].as_u64().unwrap()
    );
    assert_eq!(streamed.chunks[0]["model"], "character/narrator");

    let first = sent(&backend, 0);
    assert_eq!(first["model"], BACKEND_MODEL);
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("narrator of an interactive adventure"),
        "{system}"
    );
    assert_eq!(first["tools"][0]["function"]["name"], "log_story_event");
    let second = sent(&backend, 1);
    let messages = second["messages"].as_array().unwrap();
    let result = messages.last().unwrap();
    assert_eq!(result["role"], "tool", "{second}");
    assert_eq!(result["tool_call_id"], "call_narratornarratornarrator1");
    assert_eq!(
        result["content"],
        "Logged story event: The hero found the brass key"
    );

    let metrics = get(&gateway, "/metrics").await.text;
    let line = metrics
        .lines()
        .find(|line| {
            line.starts_with("character_tool_calls_total") && line.contains("log_story_event")
        })
        .unwrap_or_else(|| panic!("character_tool_calls_total:\n{metrics}"));
    assert!(!line.ends_with(" 0"), "{line}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_character_answers_whole_too_and_keeps_the_history() {
    let [call, words] = narrator_turn();
    let backend = ScriptedServer::start(vec![call, words]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = json!({"model": "character/narrator", "messages": [
        {"role": "user", "content": "Where am I?"},
        {"role": "assistant", "content": "In a dusty study."},
        {"role": "user", "content": "I search the old desk."}]});
    let answer = post(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = summary(&answer.json());
    assert_eq!(answer["content"], "The door creaks open. What do you do?");
    assert_eq!(answer["finish_reason"], "stop");
    let first = sent(&backend, 0);
    let texts: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|message| message["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        texts,
        ["Where am I?", "In a dusty study.", "I search the old desk."]
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn character_routes_refuse_what_they_cannot_take() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = with_tools("character/narrator", "hi");
    let error = post(&gateway, &body).await.error(400);
    assert_eq!(error["param"], "tools");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("character's own tools"),
        "{error}"
    );
    body["tools"] = Value::Null;
    body["messages"] =
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]);
    let error = post(&gateway, &body).await.error(400);
    assert_eq!(error["param"], "messages[1]");
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_gateway_with_only_prompted_routes_starts_and_says_characters_have_no_route() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route(
        "openai",
        &backend.base,
        "tool_calling = \"prompted\"\nformat = \"hermes\"",
    )
    .await;
    let error = post(&gateway, &request("character/narrator", "hi"))
        .await
        .error(503);
    assert_eq!(error["code"], "no_character_route");
    gateway.stop().await.unwrap();
    // Naming a prompted route for characters is still a mistake the start-up reports.
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\ncharacter_route = \"qwen\"\n{}",
        route(
            "qwen",
            "openai",
            &backend.base,
            "tool_calling = \"prompted\""
        )
    );
    let config = switchboard_server::Config::from_toml(&text).unwrap();
    let error = switchboard_server::RunningGateway::start(&config, &|_| None)
        .await
        .unwrap_err();
    assert!(error.contains("native tool calling"), "{error}");
}

#[tokio::test]
async fn a_character_turn_is_bound_by_the_request_timeout() {
    let mut stalled = OpenAiScript::new()
        .text("Too late.")
        .finish("stop", 1, 1)
        .reply();
    stalled.delay_before_body = Some(Duration::from_secs(5));
    let backend = ScriptedServer::start(vec![stalled.clone(), stalled]).await;
    let gateway = start(
        "request_timeout_secs = 1",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let started = Instant::now();
    let error = post(&gateway, &request("character/narrator", "hi"))
        .await
        .error(504);
    assert_eq!(error["code"], "request_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let error = post(&gateway, &streaming(request("character/narrator", "hi")))
        .await
        .error(504);
    assert_eq!(error["code"], "request_timeout");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn max_tokens_bounds_the_whole_character_turn_and_a_cut_reply_is_length() {
    let [call, _] = narrator_turn();
    let cut = OpenAiScript::new()
        .text("The door ")
        .text("creaks")
        .finish("length", 150, 10)
        .reply();
    let backend = ScriptedServer::start(vec![call.clone(), cut.clone(), call, cut]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = request("character/narrator", "I search the old desk.");
    body["max_tokens"] = json!(30);
    let whole = post(&gateway, &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = summary(&whole.json());
    let streamed = post_stream(&gateway, &streaming(body)).await;
    assert!(streamed.done, "{}", streamed.text);
    assert_eq!(whole, accumulate(&streamed.chunks));
    assert_eq!(whole["finish_reason"], "length", "{whole}");
    assert_eq!(whole["content"], "The door creaks");
    // The tool round took 20 of the 30 tokens; the reply after it may take what is left.
    let asked: Vec<Value> = backend
        .requests()
        .iter()
        .map(|request| request.body["max_tokens"].clone())
        .collect();
    assert_eq!(asked, [json!(30), json!(10), json!(30), json!(10)]);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn character_max_tokens_caps_every_character_reply() {
    let words = || {
        OpenAiScript::new()
            .text("Quiet.")
            .finish("stop", 5, 2)
            .reply()
    };
    let backend = ScriptedServer::start(vec![words(), words()]).await;
    let gateway = start(
        "character_max_tokens = 25",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let mut body = request("character/narrator", "Listen.");
    assert_eq!(post(&gateway, &body).await.status, 200);
    body["max_tokens"] = json!(1000);
    let answer = post(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["choices"][0]["finish_reason"], "stop");
    assert_eq!(sent(&backend, 0)["max_tokens"], 25);
    assert_eq!(sent(&backend, 1)["max_tokens"], 25);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn at_max_tool_rounds_a_character_answers_in_words_whatever_its_routes_policy() {
    // The model's call breaks the tool's schema: under `reject` a client would get an
    // error, but the character's own tools answer it with an `Error: …` result instead.
    let bad_call = || {
        OpenAiScript::new()
            .tool_call(
                "call_narratornarratornarrator1",
                "log_story_event",
                &[r#"{"event": "A key", "importance": "loud"}"#],
            )
            .finish("tool_calls", 100, 20)
            .reply()
    };
    let words = || {
        OpenAiScript::new()
            .text("The key glints.")
            .finish("stop", 150, 12)
            .reply()
    };
    let backend = ScriptedServer::start(vec![bad_call(), words(), bad_call(), words()]).await;
    let gateway = one_route(
        "openai",
        &backend.base,
        "max_tool_rounds = 1\ntool_call_errors = \"reject\"",
    )
    .await;
    let body = request("character/narrator", "I search the old desk.");
    let whole = post(&gateway, &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    assert!(
        whole["choices"][0].get("tool_call_errors").is_none(),
        "the character's calls are not the client's: {whole}"
    );
    let whole = summary(&whole);
    let streamed = post_stream(&gateway, &streaming(body)).await;
    assert!(streamed.done, "{}", streamed.text);
    assert_eq!(whole, accumulate(&streamed.chunks));
    assert_eq!(whole["content"], "The key glints.");
    assert_eq!(whole["finish_reason"], "stop");

    let first = sent(&backend, 0);
    assert_eq!(first["tools"][0]["function"]["name"], "log_story_event");
    let second = sent(&backend, 1);
    assert!(
        second.get("tools").is_none(),
        "past the bound the model answers without tools: {second}"
    );
    let result = last_sent(&backend, 1);
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: Invalid parameters - /importance"),
        "{result}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_call_to_a_tool_the_character_lacks_is_answered_inside_the_turn() {
    let stray = OpenAiScript::new()
        .tool_call("call_narratornarratornarrator1", "open_door", &["{}"])
        .finish("tool_calls", 100, 20)
        .reply();
    let words = OpenAiScript::new()
        .text("The door is stuck.")
        .finish("stop", 150, 12)
        .reply();
    let backend = ScriptedServer::start(vec![stray, words]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let answer = post(&gateway, &request("character/narrator", "I open the door.")).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = summary(&answer.json());
    assert_eq!(answer["content"], "The door is stuck.");
    assert_eq!(answer["tool_calls"], json!([]));
    let result = last_sent(&backend, 1);
    assert_eq!(result["content"], "Error: Unknown tool: open_door");
    gateway.stop().await.unwrap();
}
