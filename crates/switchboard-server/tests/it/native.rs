//! Native tool calling through the gateway, for each provider: the backend's calls come out
//! as OpenAI tool calls with OpenAI's ids, `{}` for calls without arguments, a finish reason
//! that agrees with the calls, usage that adds up, and the same answer streamed or not
//! whatever the backend's chunking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{
    AnthropicScript, Chunking, OllamaScript, OpenAiScript, Reply, ScriptedServer, sse_body,
};

const GOOD_ID: &str = "call_abcdefghijklmnopqrstuvwx";
const CHUNKINGS: [Chunking; 3] = [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole];

/// Asks the same backend output once whole and once streamed (with usage) and checks the
/// two agree; returns the summary, the stream, and the backend.
async fn both_ways(
    provider: &str,
    reply: Reply,
    body: &Value,
) -> (Value, Streamed, ScriptedServer) {
    let backend = ScriptedServer::start(vec![reply.clone(), reply]).await;
    let gateway = one_route(provider, &backend.base, "").await;
    let whole = post(&gateway, body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(&gateway, &streaming(body.clone())).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(streamed.done, "no [DONE]: {}", streamed.text);
    assert_eq!(
        streamed.headers["content-type"], "text/event-stream",
        "{:?}",
        streamed.headers
    );
    let last = streamed.chunks.last().unwrap();
    assert_eq!(
        last["choices"],
        json!([]),
        "the usage chunk comes last: {last}"
    );
    assert!(last["usage"].is_object(), "{last}");
    let whole = summary(&whole.json());
    let accumulated = accumulate(&streamed.chunks);
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulated),
        "streamed and whole answers differ"
    );
    gateway.stop().await.unwrap();
    (whole, streamed, backend)
}

fn check_usage(summary: &Value, prompt: u64, completion: u64) {
    assert_eq!(
        summary["usage"],
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}),
        "{summary}"
    );
}

fn single_call() -> OpenAiScript {
    OpenAiScript::new()
        .text("Let me check. ")
        .tool_call(GOOD_ID, "get_weather", &["{\"ci", "ty\": \"Par", "is\"}"])
        .finish("tool_calls", 10, 5)
}

#[tokio::test]
async fn a_single_call_is_the_same_streamed_or_not_in_every_chunking() {
    for chunking in CHUNKINGS {
        let (answer, _, backend) = both_ways(
            "openai",
            single_call().reply_in(chunking),
            &with_tools("qwen", "Weather in Paris?"),
        )
        .await;
        assert_eq!(answer["content"], "Let me check. ", "{chunking:?}");
        assert_eq!(
            answer["tool_calls"],
            json!([{"id": GOOD_ID, "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]),
            "a well-formed backend id is kept"
        );
        assert_eq!(answer["finish_reason"], "tool_calls");
        assert_eq!(answer["tool_call_errors"], Value::Null);
        check_usage(&answer, 10, 5);
        let sent = sent(&backend, 0);
        assert_eq!(sent["model"], BACKEND_MODEL);
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    }
}

#[tokio::test]
async fn parallel_calls_keep_their_indexes_and_a_call_without_arguments_ends_with_braces() {
    let script = OpenAiScript::new()
        .tool_call(
            "",
            "get_weather",
            &["{\"days\": ", "3", ", \"city\": \"Rome\"}"],
        )
        .tool_call("chatcmpl-tool-7f3", "get_time", &[])
        .tool_call("", "get_weather", &["{\"city\": \"Oslo\"}"])
        .finish("tool_calls", 20, 9);
    for chunking in CHUNKINGS {
        let (answer, streamed, _) = both_ways(
            "openai",
            script.reply_in(chunking),
            &with_tools("qwen", "Plan my trip"),
        )
        .await;
        let calls = answer["tool_calls"].as_array().unwrap();
        let names: Vec<&str> = calls
            .iter()
            .map(|call| call["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_weather", "get_time", "get_weather"]);
        // A first argument that is not a string arrives whole.
        assert_eq!(
            calls[0]["function"]["arguments"],
            "{\"days\": 3, \"city\": \"Rome\"}"
        );
        assert_eq!(calls[1]["function"]["arguments"], "{}");
        assert_eq!(calls[2]["function"]["arguments"], "{\"city\": \"Oslo\"}");
        let ids: Vec<&str> = calls
            .iter()
            .map(|call| call["id"].as_str().unwrap())
            .collect();
        for id in &ids {
            assert!(
                id.len() == 29 && is_call_id(id),
                "missing and badly formed ids are replaced: {id}"
            );
        }
        assert!(
            ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
            "{ids:?}"
        );
        assert_eq!(answer["content"], Value::Null);
        assert_eq!(answer["finish_reason"], "tool_calls");
        check_usage(&answer, 20, 9);
        // The stream's `{}` for the call without arguments is a delta of its own.
        let braces = streamed.chunks.iter().any(|chunk| {
            chunk["choices"][0]["delta"]["tool_calls"][0]
                == json!({"index": 1, "function": {"arguments": "{}"}})
        });
        assert!(braces, "{}", streamed.text);
    }
}

#[tokio::test]
async fn text_and_calls_in_one_delta_are_neither_merged_nor_lost() {
    let script = OpenAiScript::new()
        .delta(json!({"content": "Sure.", "tool_calls": [{"index": 0, "id": GOOD_ID, "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}))
        .delta(json!({"tool_calls": [
            {"index": 1, "id": GOOD_ID, "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Bergen\"}"}},
            {"index": 2, "type": "function", "function": {"name": "get_time", "arguments": ""}}]}))
        .finish("tool_calls", 3, 4);
    for chunking in CHUNKINGS {
        let (answer, _, _) = both_ways(
            "openai",
            script.reply_in(chunking),
            &with_tools("qwen", "Two cities"),
        )
        .await;
        assert_eq!(answer["content"], "Sure.");
        let calls = answer["tool_calls"].as_array().unwrap();
        let arguments: Vec<&str> = calls
            .iter()
            .map(|call| call["function"]["arguments"].as_str().unwrap())
            .collect();
        assert_eq!(
            arguments,
            ["{\"city\": \"Oslo\"}", "{\"city\": \"Bergen\"}", "{}"]
        );
        assert_eq!(calls[0]["id"], GOOD_ID);
        let duplicate = calls[1]["id"].as_str().unwrap();
        assert!(
            duplicate != GOOD_ID && is_call_id(duplicate),
            "a reused id is replaced: {duplicate}"
        );
    }
}

#[tokio::test]
async fn the_finish_reason_agrees_with_the_calls() {
    // A backend claiming tool_calls without any, and one claiming stop after a call.
    let claims_calls = OpenAiScript::new()
        .text("No tools needed.")
        .finish("tool_calls", 2, 3);
    let (answer, _, _) = both_ways("openai", claims_calls.reply(), &with_tools("qwen", "hi")).await;
    assert_eq!(answer["finish_reason"], "stop");
    assert_eq!(answer["tool_calls"], json!([]));
    assert_eq!(answer["content"], "No tools needed.");
    let claims_stop = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_time", &["{}"])
        .finish("stop", 2, 3);
    let (answer, _, _) =
        both_ways("openai", claims_stop.reply(), &with_tools("qwen", "time?")).await;
    assert_eq!(answer["finish_reason"], "tool_calls");
    let length = OpenAiScript::new().text("Once upon").finish("length", 2, 3);
    let (answer, _, _) = both_ways("openai", length.reply(), &request("qwen", "story")).await;
    assert_eq!(answer["finish_reason"], "length");
}

#[tokio::test]
async fn usage_is_only_streamed_when_asked_for() {
    let backend = ScriptedServer::start(vec![single_call().reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = with_tools("qwen", "Weather?");
    body["stream"] = json!(true);
    let streamed = post_stream(&gateway, &body).await;
    assert!(streamed.done);
    assert!(
        streamed
            .chunks
            .iter()
            .all(|chunk| chunk.get("usage").is_none_or(Value::is_null)),
        "{}",
        streamed.text
    );
    assert!(streamed.text.ends_with("data: [DONE]\n\n"));
    let answer = accumulate(&streamed.chunks);
    assert_eq!(answer["finish_reason"], "tool_calls");
    // The role is announced once, on the first chunk.
    assert_eq!(
        streamed.chunks[0]["choices"][0]["delta"]["role"],
        "assistant"
    );
    let roles = streamed
        .chunks
        .iter()
        .filter(|chunk| !chunk["choices"][0]["delta"]["role"].is_null())
        .count();
    assert_eq!(roles, 1);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn history_and_tool_choice_reach_the_backend_and_history_ids_are_not_reused() {
    let history_id = "call_historyhistoryhistory123";
    let script = OpenAiScript::new()
        .tool_call(history_id, "get_weather", &["{\"city\": \"Lyon\"}"])
        .finish("tool_calls", 30, 6);
    let backend = ScriptedServer::start(vec![script.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = with_tools("qwen", "Weather in Paris?");
    body["messages"] = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": history_id, "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": history_id, "content": "sunny"},
        {"role": "user", "content": "And Lyon?"}
    ]);
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    body["parallel_tool_calls"] = json!(false);
    body["temperature"] = json!(0.2);
    let answer = post(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let call = &answer.json()["choices"][0]["message"]["tool_calls"][0];
    let id = call["id"].as_str().unwrap();
    assert!(
        id != history_id && is_call_id(id),
        "an id from the history is not handed out again: {id}"
    );
    let sent = sent(&backend, 0);
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(sent["temperature"], 0.2);
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{sent}");
    assert_eq!(messages[2]["tool_calls"][0]["id"], history_id);
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\": \"Paris\"}"
    );
    assert_eq!(messages[3]["tool_call_id"], history_id);
    assert_eq!(messages[3]["content"], "sunny");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn anthropic_tool_use_comes_out_as_openai_tool_calls() {
    let script = AnthropicScript::new(42)
        .ping()
        .text("Looking that up ")
        .text("now.")
        .tool_use(
            "toolu_01A",
            "get_weather",
            &["{\"city\":", " \"Paris\"", ", \"days\": 2}"],
        )
        .ping()
        .tool_use("toolu_01B", "get_time", &[])
        .finish("tool_use", 55);
    for chunking in CHUNKINGS {
        let (answer, _, backend) = both_ways(
            "anthropic",
            script.reply_in(chunking),
            &with_tools("qwen", "Weather?"),
        )
        .await;
        assert_eq!(answer["content"], "Looking that up now.");
        let calls = answer["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{answer}");
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert_eq!(
            calls[0]["function"]["arguments"], "{\"city\": \"Paris\", \"days\": 2}",
            "streamed input is not `{{}}`"
        );
        assert_eq!(calls[1]["function"]["name"], "get_time");
        assert_eq!(calls[1]["function"]["arguments"], "{}");
        assert_eq!(answer["finish_reason"], "tool_calls");
        check_usage(&answer, 42, 55);
        let request = &backend.requests()[0];
        assert!(
            request.head.starts_with("post /v1/messages "),
            "{}",
            request.head
        );
        assert_eq!(request.body["model"], BACKEND_MODEL);
        assert_eq!(request.body["tools"][0]["name"], "get_weather");
        assert!(
            request.body["tools"][0]["input_schema"].is_object(),
            "{}",
            request.body
        );
    }
    // `end_turn` with a call is still a tool_calls finish; a text-only answer has no empty calls.
    let end_turn = AnthropicScript::new(5)
        .tool_use("toolu_9", "get_time", &["{}"])
        .finish("end_turn", 3);
    let (answer, _, _) =
        both_ways("anthropic", end_turn.reply(), &with_tools("qwen", "time")).await;
    assert_eq!(answer["finish_reason"], "tool_calls");
    assert_eq!(
        answer["content"],
        Value::Null,
        "no spurious empty text: {answer}"
    );
    let text = AnthropicScript::new(5).text("Hello.").finish("end_turn", 3);
    let (answer, _, _) = both_ways("anthropic", text.reply(), &request("qwen", "hi")).await;
    assert_eq!(
        (answer["content"].as_str(), answer["finish_reason"].as_str()),
        (Some("Hello."), Some("stop"))
    );
}

#[tokio::test]
async fn anthropic_history_ids_survive_the_round_trip() {
    // The client's ids go to Anthropic in its alphabet and the answer comes back in OpenAI's.
    let script = AnthropicScript::new(5)
        .tool_use("toolu_01X", "get_weather", &["{\"city\": \"Nice\"}"])
        .finish("tool_use", 3);
    let backend = ScriptedServer::start(vec![script.reply()]).await;
    let gateway = one_route("anthropic", &backend.base, "").await;
    let mut body = with_tools("qwen", "x");
    body["messages"] = json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_abc.def:1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_abc.def:1", "content": "sunny"},
        {"role": "user", "content": "And Nice?"}
    ]);
    let answer = post(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(is_call_id(
        answer.json()["choices"][0]["message"]["tool_calls"][0]["id"]
            .as_str()
            .unwrap()
    ));
    let sent = sent(&backend, 0);
    let use_id = sent["messages"][1]["content"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"));
    let result_id = sent["messages"][2]["content"][0]["tool_use_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(use_id, result_id);
    assert!(
        use_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'),
        "{use_id}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn ollama_tool_calls_come_out_as_openai_tool_calls() {
    let script = OllamaScript::new()
        .text("Let me ")
        .text("check.")
        .tool_calls(&[
            (
                "get_weather",
                json!({"city": "São Paulo \"SP\"", "days": 2}),
            ),
            ("get_time", json!({})),
        ])
        .finish("stop", 122, 33);
    for chunking in [Chunking::Bytes, Chunking::PerEvent("\n"), Chunking::Whole] {
        let (answer, _, backend) = both_ways(
            "ollama",
            script.reply_in(chunking),
            &with_tools("qwen", "Weather?"),
        )
        .await;
        assert_eq!(answer["content"], "Let me check.");
        let calls = answer["tool_calls"].as_array().unwrap();
        let arguments: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"city": "São Paulo \"SP\"", "days": 2}));
        assert_eq!(calls[1]["function"]["arguments"], "{}");
        assert!(
            calls
                .iter()
                .all(|call| is_call_id(call["id"].as_str().unwrap()))
        );
        assert_ne!(calls[0]["id"], calls[1]["id"]);
        assert_eq!(answer["finish_reason"], "tool_calls");
        check_usage(&answer, 122, 33);
        let request = &backend.requests()[0];
        assert!(
            request.head.starts_with("post /api/chat "),
            "{}",
            request.head
        );
        assert_eq!(request.body["tools"][1]["function"]["name"], "get_time");
    }
}

#[tokio::test]
async fn ollama_cannot_be_made_to_call_a_tool_and_says_so() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("ollama", &backend.base, "").await;
    let mut body = with_tools("qwen", "Weather?");
    body["tool_choice"] = json!("required");
    let error = post(&gateway, &body).await.error(400);
    assert_eq!(error["code"], "unsupported_by_backend");
    assert!(
        error["message"].as_str().unwrap().contains("required"),
        "{error}"
    );
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_backend_that_reports_no_usage_still_gives_usage_both_ways() {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let body = sse_body(
        &[
            chunk(
                json!({"reasoning_content": "The user greets me."}),
                Value::Null,
            ),
            chunk(json!({"content": "Hello!"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ],
        true,
    );
    for chunking in CHUNKINGS {
        let (answer, _, _) = both_ways(
            "openai",
            Reply::sse(body.clone(), chunking),
            &request("qwen", "hi"),
        )
        .await;
        assert_eq!(answer["content"], "Hello!");
        assert_eq!(answer["reasoning_content"], "The user greets me.");
        check_usage(&answer, 0, 0);
    }
}

#[tokio::test]
async fn tool_choice_required_and_named_are_enforced_on_native_routes() {
    let prose = OpenAiScript::new()
        .text("I would rather chat.")
        .finish("stop", 5, 5);
    let call = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": \"Rome\"}"])
        .finish("tool_calls", 5, 5);
    let time = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_time", &["{}"])
        .finish("tool_calls", 5, 5);
    let backend = ScriptedServer::start(vec![
        prose.reply(),
        call.reply(),
        prose.reply(),
        prose.reply(),
        time.reply(),
        time.reply(),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut body = with_tools("qwen", "Weather in Rome?");
    body["tool_choice"] = json!("required");
    // Prose first, then the call: only the call reaches the client.
    let streamed = post_stream(&gateway, &streaming(body.clone())).await;
    assert!(streamed.done, "{}", streamed.text);
    let answer = accumulate(&streamed.chunks);
    assert_eq!(answer["content"], Value::Null, "{answer}");
    assert_eq!(answer["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(answer["finish_reason"], "tool_calls");
    assert_eq!(sent(&backend, 1)["tool_choice"], "required");
    // Prose twice: an error, never prose with a tool_calls finish.
    let error = post(&gateway, &body).await.error(502);
    assert_eq!(error["code"], "tool_call_required");
    // A call to another tool does not satisfy a named choice.
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let error = post(&gateway, &body).await.error(502);
    assert_eq!(error["code"], "tool_call_required");
    assert!(
        error["message"].as_str().unwrap().contains("get_weather"),
        "{error}"
    );
    assert_eq!(backend.requests().len(), 6);
    gateway.stop().await.unwrap();

    // none and auto are the backend's to honour: passed on, and its answer returned.
    let backend = ScriptedServer::start(vec![prose.reply(), prose.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    for (index, choice) in ["none", "auto"].into_iter().enumerate() {
        let mut body = with_tools("qwen", "hi");
        body["tool_choice"] = json!(choice);
        let answer = post(&gateway, &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(
            answer.json()["choices"][0]["message"]["content"],
            "I would rather chat."
        );
        assert_eq!(sent(&backend, index)["tool_choice"], choice);
    }
    gateway.stop().await.unwrap();
}
