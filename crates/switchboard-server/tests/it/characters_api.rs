//! The characters API and the playground's assets: listing with every problem, one
//! character's prompt, a tool run exactly as a conversation runs it, a broken save that
//! keeps the last good version serving, the page served with a strict policy, and a
//! character's own events on a chat answer for a client that asks (streamed and whole alike).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

/// A gateway on its own copy of the repository's narrator (so a test may break it), in
/// front of `backend`.
async fn gateway_on_copy(backend: &ScriptedServer) -> (RunningGateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(CHARACTERS).join("narrator.js"),
        dir.path().join("narrator.js"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.js"),
        "export const CHARACTER_NAME = ;\n",
    )
    .unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{}",
        dir.path().display(),
        route("qwen", "openai", &backend.base, "")
    );
    let config = Config::from_toml(&text).unwrap();
    (
        RunningGateway::start(&config, &|_| None).await.unwrap(),
        dir,
    )
}

async fn call_tool(gateway: &RunningGateway, character: &str, tool: &str, body: &Value) -> Answer {
    let response = client()
        .post(format!(
            "{}/v1/characters/{character}/tools/{tool}",
            gateway.base_url()
        ))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Answer {
        status,
        headers,
        text: response.text().await.unwrap(),
    }
}

#[tokio::test]
async fn the_list_shows_characters_with_their_tools_and_failed_files_with_every_problem() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let (gateway, _dir) = gateway_on_copy(&backend).await;
    let list = get(&gateway, "/v1/characters").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let list = list.json();
    let narrator = &list["characters"][0];
    assert_eq!(narrator["id"], "narrator");
    assert_eq!(narrator["name"], "Narrator");
    assert_eq!(narrator["model"], "character/narrator");
    assert_eq!(narrator["file"], "narrator.js");
    assert_eq!(narrator["listed"], true);
    assert_eq!(narrator["tool_timeout_ms"], 100);
    assert_eq!(
        narrator["voice_source"]["path_on_server"],
        "voices/narrator.wav"
    );
    assert_eq!(narrator["instructions"]["language"], "en");
    assert_eq!(narrator["problems"], json!([]));
    let tool = &narrator["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["name"], "log_story_event");
    assert_eq!(
        tool["function"]["parameters"]["properties"]["importance"]["enum"],
        json!(["low", "medium", "high"])
    );

    assert_eq!(list["rejected"].as_array().unwrap().len(), 1, "{list}");
    let rejected = &list["rejected"][0];
    assert_eq!(rejected["file"], "broken.js");
    let problem = &rejected["problems"][0];
    assert_eq!(problem["kind"], "syntax_error");
    assert_eq!(problem["file"], "broken.js");
    assert_eq!(problem["line"], 1);
    assert!(problem["column"].as_u64().unwrap() > 0, "{problem}");
    assert!(
        problem["message"]
            .as_str()
            .unwrap()
            .starts_with("syntax error at line 1"),
        "{problem}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn one_character_comes_with_the_system_prompt_its_code_builds() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let narrator = get(&gateway, "/v1/characters/NARRATOR").await;
    assert_eq!(narrator.status, 200, "{}", narrator.text);
    let narrator = narrator.json();
    assert_eq!(narrator["name"], "Narrator");
    let prompt = narrator["system_prompt"].as_str().unwrap();
    assert!(
        prompt.contains("narrator of an interactive adventure"),
        "{prompt}"
    );
    assert!(prompt.contains("call log_story_event"), "{prompt}");

    let missing = get(&gateway, "/v1/characters/nobody").await.error(404);
    assert_eq!(missing["code"], "character_not_found");
    assert!(
        missing["message"].as_str().unwrap().contains("\"nobody\""),
        "{missing}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_tool_runs_as_a_conversation_runs_it_and_errors_are_the_models_strings() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;

    let ok = call_tool(
        &gateway,
        "narrator",
        "log_story_event",
        &json!({"arguments": {"event": "The hero fell"}}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let ok = ok.json();
    assert_eq!(ok["content"], "Logged story event: The hero fell");
    assert_eq!(ok["is_error"], false);
    assert!(ok["duration_ms"].as_f64().unwrap() >= 0.0);

    let cases = [
        (
            json!({"arguments": {"event": "x", "importance": "loud"}}),
            "Error: Invalid parameters - /importance: \"loud\" is not one of the allowed values: \"low\", \"medium\", \"high\"",
        ),
        (
            json!({"arguments": {}}),
            "Error: Missing required parameter: event",
        ),
        (
            json!({"arguments": "{\"event\": "}),
            "Error: Invalid JSON arguments - ",
        ),
    ];
    for (body, expected) in cases {
        let answer = call_tool(&gateway, "narrator", "log_story_event", &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let answer = answer.json();
        assert_eq!(answer["is_error"], true, "{answer}");
        assert!(
            answer["content"].as_str().unwrap().starts_with(expected),
            "{body}: {answer}"
        );
    }
    let unknown = call_tool(&gateway, "narrator", "fly", &json!({}))
        .await
        .json();
    assert_eq!(unknown["content"], "Error: Unknown tool: fly");

    let error = call_tool(
        &gateway,
        "narrator",
        "log_story_event",
        &json!({"arguments": 7}),
    )
    .await
    .error(400);
    assert_eq!(error["param"], "arguments");
    let error = call_tool(&gateway, "nobody", "log_story_event", &json!({}))
        .await
        .error(404);
    assert_eq!(error["code"], "character_not_found");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_broken_save_keeps_the_last_good_version_answering_with_its_problems_listed() {
    let [call, words] = narrator_turn();
    let backend = ScriptedServer::start(vec![call, words]).await;
    let (gateway, dir) = gateway_on_copy(&backend).await;
    let file = dir.path().join("narrator.js");
    let source = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        source.replace("export class PromptGenerator {", "export class {"),
    )
    .unwrap();
    let registry = std::sync::Arc::clone(&gateway.state.characters);
    tokio::task::spawn_blocking(move || registry.reload())
        .await
        .unwrap();

    let list = get(&gateway, "/v1/characters").await.json();
    let narrator = &list["characters"][0];
    assert_eq!(
        narrator["name"], "Narrator",
        "the last good version is listed: {list}"
    );
    let problem = &narrator["problems"][0];
    assert_eq!(problem["kind"], "syntax_error", "{list}");
    assert!(problem["line"].as_u64().unwrap() > 40, "{problem}");
    assert_eq!(
        list["rejected"].as_array().unwrap().len(),
        1,
        "only broken.js: {list}"
    );

    let answer = post(
        &gateway,
        &request("character/narrator", "I search the desk."),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(summary(&answer.json())["content"], "The door creaks open.");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let page = get(&gateway, "/").await;
    assert_eq!(page.status, 200);
    assert!(
        page.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("default-src 'self';"), "{policy}");
    assert!(
        page.text
            .contains("<script type=\"module\" src=\"/playground/app.js\">")
    );
    for (asset, kind) in [
        ("app.js", "text/javascript"),
        ("api.js", "text/javascript"),
        ("chat.js", "text/javascript"),
        ("schema-form.js", "text/javascript"),
        ("dom.js", "text/javascript"),
        ("style.css", "text/css"),
        ("favicon.svg", "image/svg+xml"),
    ] {
        let answer = get(&gateway, &format!("/playground/{asset}")).await;
        assert_eq!(answer.status, 200, "{asset}");
        assert!(
            answer.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind),
            "{asset}"
        );
        assert_eq!(answer.headers["x-content-type-options"], "nosniff");
        // Nothing from elsewhere: no URL with a scheme in any asset but the SVG's namespace.
        assert!(
            !answer
                .text
                .replace("http://www.w3.org/2000/svg", "")
                .contains("://"),
            "{asset} refers to another origin"
        );
    }
    let missing = get(&gateway, "/playground/secret.txt").await.error(404);
    assert_eq!(missing["code"], "not_found");
    gateway.stop().await.unwrap();
}

/// The model first logs a story event, then narrates.
fn narrator_turn() -> [Reply; 2] {
    let call = OpenAiScript::new()
        .tool_call(
            "call_narratornarratornarrator1",
            "log_story_event",
            &[
                "{\"event\": \"The hero found the key\", ",
                "\"importance\": \"loud\"}",
            ],
        )
        .finish("tool_calls", 100, 20);
    let words = OpenAiScript::new()
        .text("The door ")
        .text("creaks open.")
        .finish("stop", 150, 12);
    [call.reply_in(Chunking::Bytes), words.reply()]
}

async fn post_with_events(gateway: &RunningGateway, body: &Value) -> Answer {
    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .header("x-switchboard-character-events", "true")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Answer {
        status,
        headers,
        text: response.text().await.unwrap(),
    }
}

/// The events without what differs between two runs (durations).
fn comparable(mut events: Value) -> Value {
    for event in events.as_array_mut().unwrap() {
        if let Some(ms) = event.get("duration_ms") {
            assert!(ms.as_f64().unwrap() >= 0.0, "{event}");
            event["duration_ms"] = json!("<ms>");
        }
    }
    events
}

#[tokio::test]
async fn character_events_come_in_order_streamed_and_whole_alike_and_only_when_asked() {
    let [call, words] = narrator_turn();
    let [call2, words2] = narrator_turn();
    let [call3, words3] = narrator_turn();
    let backend = ScriptedServer::start(vec![call, words, call2, words2, call3, words3]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = request("character/narrator", "I search the desk.");

    let streamed = post_with_events(&gateway, &streaming(body.clone())).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let (chunks, done) = parse_sse(&streamed.text);
    assert!(done);
    let events: Vec<Value> = chunks
        .iter()
        .filter_map(|chunk| chunk.get("character_event").cloned())
        .collect();
    for chunk in chunks
        .iter()
        .filter(|chunk| chunk.get("character_event").is_some())
    {
        assert_eq!(chunk["choices"], json!([]), "{chunk}");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], chunks[0]["id"]);
    }
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["system_prompt", "tool_started", "tool_finished"]);
    assert!(
        events[0]["content"]
            .as_str()
            .unwrap()
            .contains("narrator of an interactive adventure")
    );
    assert_eq!(events[1]["name"], "log_story_event");
    assert_eq!(events[1]["id"], "call_narratornarratornarrator1");
    assert_eq!(
        events[1]["arguments"],
        "{\"event\": \"The hero found the key\", \"importance\": \"loud\"}"
    );
    assert_eq!(events[2]["is_error"], true);
    assert!(
        events[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: Invalid parameters - /importance"),
        "{}",
        events[2]
    );
    // The tool's card comes before the words that follow it.
    let position = |wanted: &dyn Fn(&Value) -> bool| chunks.iter().position(wanted).unwrap();
    let finished = position(&|chunk| chunk["character_event"]["type"] == "tool_finished");
    let words = position(&|chunk| chunk["choices"][0]["delta"]["content"].is_string());
    assert!(finished < words);
    assert_eq!(accumulate(&chunks)["content"], "The door creaks open.");

    let whole = post_with_events(&gateway, &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    assert_eq!(
        comparable(whole["character_events"].clone()),
        comparable(Value::Array(events))
    );
    assert_eq!(summary(&whole)["content"], "The door creaks open.");

    // A client that did not ask sees a plain Chat Completions stream.
    let plain = post_stream(&gateway, &streaming(body)).await;
    assert!(plain.done);
    assert!(
        plain
            .chunks
            .iter()
            .all(|chunk| chunk.get("character_event").is_none()),
        "{}",
        plain.text
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_failure_after_the_characters_own_events_is_an_error_response_unless_they_were_shown() {
    // The model calls the tool; the next round finds the backend gone.
    let failing = || async {
        let [call, _] = narrator_turn();
        let backend = ScriptedServer::start(vec![call]).await;
        one_route("openai", &backend.base, "").await
    };
    let body = streaming(request("character/narrator", "I search the desk."));

    // Nothing reached this client before the failure: an ordinary error response.
    let gateway = failing().await;
    let error = post(&gateway, &body).await.error(502);
    assert_eq!(error["code"], "backend_unreachable");
    gateway.stop().await.unwrap();

    // This client was shown the prompt and the call already: the error ends the stream.
    let gateway = failing().await;
    let shown = post_with_events(&gateway, &body).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let events: Vec<&str> = shown.text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(
        events.iter().any(|e| e.contains("\"tool_finished\"")),
        "{}",
        shown.text
    );
    let last = events.last().unwrap();
    assert!(last.contains("\"backend_unreachable\""), "{}", shown.text);
    assert!(!shown.text.contains("[DONE]"), "{}", shown.text);
    gateway.stop().await.unwrap();
}
