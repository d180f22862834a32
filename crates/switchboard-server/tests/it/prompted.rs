//! Prompted tool calling through the gateway: the backend model gets the tools in its system
//! prompt and the history in the family's markup, and its text comes back as proper tool
//! calls, streamed or not, with `tool_choice` enforced by one corrective retry. Native routes
//! read the same markup back out of text their backend failed to parse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

const HERMES: &str = "tool_calling = \"prompted\"\nformat = \"hermes\"";
const JSON_FORMAT: &str = "tool_calling = \"prompted\"\nformat = \"json\"";
/// A native route whose model writes Hermes markup.
const NATIVE_HERMES: &str = "format = \"hermes\"";

/// The model's text as streamed content deltas of `piece` characters each.
fn says(text: &str, piece: usize) -> OpenAiScript {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(piece.max(1))
        .fold(OpenAiScript::new(), |script, part| {
            script.text(&part.iter().collect::<String>())
        })
        .finish("stop", 40, 12)
}

fn weather_call(city: &str) -> String {
    format!(
        "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>"
    )
}

/// Content of message `index` of a captured request, as text.
fn text_of(sent: &Value, index: usize) -> String {
    let content = &sent["messages"][index]["content"];
    content
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| content.to_string())
}

/// The content of the complete SSE events received so far.
fn content_so_far(received: &str) -> String {
    let complete = received
        .rfind("\n\n")
        .map_or("", |end| &received[..end + 2]);
    let (chunks, _) = parse_sse(complete);
    accumulate(&chunks)["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The same model output asked for whole and streamed (two backend replies); returns the
/// agreed summary and the backend.
async fn both_ways(format: &str, reply: Reply, body: &Value) -> (Value, ScriptedServer) {
    let backend = ScriptedServer::start(vec![reply.clone(), reply]).await;
    let gateway = one_route("openai", &backend.base, format).await;
    let whole = post(&gateway, body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(&gateway, &streaming(body.clone())).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(streamed.done, "{}", streamed.text);
    let whole = summary(&whole.json());
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulate(&streamed.chunks)),
        "streamed and whole answers differ"
    );
    gateway.stop().await.unwrap();
    (whole, backend)
}

#[tokio::test]
async fn the_backend_gets_the_tools_in_its_prompt_and_the_history_in_markup() {
    let backend = ScriptedServer::start(vec![says("It is sunny in Lyon too.", 5).reply()]).await;
    let gateway = one_route("openai", &backend.base, HERMES).await;
    let mut body = with_tools("qwen", "x");
    body["messages"] = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24 C"},
        {"role": "user", "content": "And Lyon?"}
    ]);
    let answer = post(&gateway, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = answer.json();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "It is sunny in Lyon too."
    );
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    let sent = sent(&backend, 0);
    assert!(
        sent.get("tools").is_none_or(|tools| tools == &json!([])),
        "{sent}"
    );
    assert!(sent.get("tool_choice").is_none(), "{sent}");
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "user"]);
    let system = text_of(&sent, 0);
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    for needle in [
        "get_weather",
        "get_time",
        "Current weather in a city",
        "<tool_call>",
    ] {
        assert!(system.contains(needle), "{needle} in {system}");
    }
    let call = text_of(&sent, 2);
    assert!(
        call.contains("<tool_call>") && call.contains("\"city\": \"Paris\""),
        "{call}"
    );
    assert!(sent["messages"][2].get("tool_calls").is_none(), "{sent}");
    let result = text_of(&sent, 3);
    assert!(
        result.contains("<tool_response>") && result.contains("sunny, 24 C"),
        "{result}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn markup_becomes_tool_calls_and_the_text_before_it_content() {
    let text = format!("I'll check.\n{}", weather_call("Paris"));
    for piece in [1, 3, 1000] {
        for chunking in [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole] {
            let (answer, _) = both_ways(
                HERMES,
                says(&text, piece).reply_in(chunking),
                &with_tools("qwen", "Weather in Paris?"),
            )
            .await;
            assert_eq!(
                answer["content"].as_str().map(str::trim),
                Some("I'll check."),
                "{answer}"
            );
            let calls = answer["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), 1, "{answer}");
            assert_eq!(calls[0]["function"]["name"], "get_weather");
            let arguments: Value =
                serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(arguments, json!({"city": "Paris"}));
            assert!(is_call_id(calls[0]["id"].as_str().unwrap()));
            assert_eq!(answer["finish_reason"], "tool_calls");
            assert!(
                !answer["content"].as_str().unwrap().contains("<tool_call>"),
                "{answer}"
            );
        }
    }
}

#[tokio::test]
async fn content_streams_before_the_call_begins() {
    for route in [HERMES, NATIVE_HERMES] {
        content_streams_before_the_call_on(route).await;
    }
}

async fn content_streams_before_the_call_on(route: &str) {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = says(&format!("Checking the sky. {}", weather_call("Oslo")), 6).reply();
    // Three content deltas go out, then the backend waits until the client has seen them.
    reply.gate = Some((3, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = one_route("openai", &backend.base, route).await;
    let mut response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(&streaming(with_tools("qwen", "Weather?")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    let early = tokio::time::timeout(Duration::from_secs(10), async {
        while !content_so_far(&seen).contains("Checking the sky") {
            let bytes = response
                .chunk()
                .await
                .unwrap()
                .expect("the stream ended early");
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    })
    .await;
    assert!(
        early.is_ok(),
        "{route}: content was held back until the model finished: {seen}"
    );
    gate.notify_one();
    while let Some(bytes) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    let (chunks, done) = parse_sse(&seen);
    assert!(done);
    let answer = accumulate(&chunks);
    assert_eq!(answer["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(answer["finish_reason"], "tool_calls");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn parallel_calls_and_parallel_tool_calls_false() {
    let text = format!(
        "{}\n{}\n<tool_call>\n{{\"name\": \"get_time\", \"arguments\": {{}}}}\n</tool_call>",
        weather_call("Rome"),
        weather_call("Oslo")
    );
    let (answer, backend) = both_ways(
        HERMES,
        says(&text, 2).reply(),
        &with_tools("qwen", "Rome, Oslo, time"),
    )
    .await;
    let calls = answer["tool_calls"].as_array().unwrap();
    let cities: Vec<String> = calls
        .iter()
        .map(|call| call["function"]["arguments"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(calls.len(), 3, "{answer}");
    assert!(
        cities[0].contains("Rome") && cities[1].contains("Oslo"),
        "{cities:?}"
    );
    assert_eq!(cities[2], "{}");
    let ids: Vec<&str> = calls
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "{ids:?}");
    let parallel_prompt = text_of(&sent(&backend, 0), 0);

    let mut body = with_tools("qwen", "Rome, Oslo, time");
    body["parallel_tool_calls"] = json!(false);
    let (answer, backend) = both_ways(HERMES, says(&text, 2).reply(), &body).await;
    let calls = answer["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "only the first call: {answer}");
    assert!(
        calls[0]["function"]["arguments"]
            .as_str()
            .unwrap()
            .contains("Rome")
    );
    assert_eq!(answer["finish_reason"], "tool_calls");
    let single_prompt = text_of(&sent(&backend, 0), 0);
    assert_ne!(
        single_prompt, parallel_prompt,
        "the prompt asks for one call"
    );
}

#[tokio::test]
async fn tool_choice_none_sends_no_tools_and_parses_nothing() {
    let text = format!("Here is how: {}", weather_call("Paris"));
    let mut body = with_tools("qwen", "Show me the markup");
    body["tool_choice"] = json!("none");
    let (answer, backend) = both_ways(HERMES, says(&text, 4).reply(), &body).await;
    assert_eq!(answer["content"], text.as_str());
    assert_eq!(answer["tool_calls"], json!([]));
    assert_eq!(answer["finish_reason"], "stop");
    let sent = sent(&backend, 0);
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "Show me the markup"}])
    );
}

#[tokio::test]
async fn tool_choice_auto_lets_the_model_answer_in_prose() {
    let mut body = with_tools("qwen", "Hello");
    body["tool_choice"] = json!("auto");
    let (answer, backend) = both_ways(HERMES, says("Hello there!", 3).reply(), &body).await;
    assert_eq!(answer["content"], "Hello there!");
    assert_eq!(answer["finish_reason"], "stop");
    assert_eq!(backend.requests().len(), 2, "no retry for auto");
    assert!(text_of(&sent(&backend, 0), 0).contains("get_weather"));
}

#[tokio::test]
async fn required_retries_once_with_a_corrective_message() {
    let prose = says("The weather is probably fine.", 5);
    let call = says(&weather_call("Paris"), 7);
    let backend = ScriptedServer::start(vec![
        prose.reply(),
        call.reply(),
        prose.reply(),
        call.reply(),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, HERMES).await;
    let mut body = with_tools("qwen", "Weather in Paris?");
    body["tool_choice"] = json!("required");
    let whole = post(&gateway, &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(&gateway, &streaming(body)).await;
    assert!(streamed.done, "{}", streamed.text);
    let whole = summary(&whole.json());
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulate(&streamed.chunks))
    );
    assert_eq!(
        whole["content"],
        Value::Null,
        "the first reply's prose is not returned: {whole}"
    );
    assert_eq!(whole["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(whole["finish_reason"], "tool_calls");
    // Both attempts are paid for.
    assert_eq!(whole["usage"]["prompt_tokens"], 80, "{whole}");
    let retry = sent(&backend, 1);
    let messages = retry["messages"].as_array().unwrap();
    let count = messages.len();
    assert_eq!(messages[count - 2]["role"], "assistant");
    assert_eq!(
        messages[count - 2]["content"],
        "The weather is probably fine."
    );
    assert_eq!(messages[count - 1]["role"], "user");
    let corrective = text_of(&retry, count - 1);
    assert!(
        corrective.contains("a tool call is required") && corrective.contains("<tool_call>"),
        "{corrective}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn required_without_a_call_twice_is_a_502() {
    let prose = says("No.", 2);
    let backend = ScriptedServer::start(vec![
        prose.reply(),
        prose.reply(),
        prose.reply(),
        prose.reply(),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, HERMES).await;
    let mut body = with_tools("qwen", "Weather?");
    body["tool_choice"] = json!("required");
    let error = post(&gateway, &body).await.error(502);
    assert_eq!(error["code"], "tool_call_required");
    let streamed = post(&gateway, &streaming(body)).await;
    let error = streamed.error(502);
    assert_eq!(error["code"], "tool_call_required");
    assert_eq!(backend.requests().len(), 4, "one retry per request");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_named_tool_choice_wants_that_tool() {
    let other = says(
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
        5,
    );
    let named = says(&weather_call("Paris"), 5);
    let backend = ScriptedServer::start(vec![other.reply(), named.reply()]).await;
    let gateway = one_route("openai", &backend.base, HERMES).await;
    let mut body = with_tools("qwen", "Weather in Paris?");
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let streamed = post_stream(&gateway, &streaming(body)).await;
    assert!(streamed.done, "{}", streamed.text);
    let answer = accumulate(&streamed.chunks);
    let names: Vec<&str> = answer["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_weather"], "{answer}");
    let retry = sent(&backend, 1);
    let corrective = text_of(&retry, retry["messages"].as_array().unwrap().len() - 1);
    assert!(
        corrective.contains("a call to get_weather is required"),
        "{corrective}"
    );
    assert!(
        text_of(&sent(&backend, 0), 0).contains("get_weather"),
        "the prompt names the tool"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_closing_marker_inside_a_string_argument_does_not_end_the_call() {
    let text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a</tool_call>b\"}}\n</tool_call>";
    for piece in [1, 4, 1000] {
        let (answer, _) =
            both_ways(HERMES, says(text, piece).reply(), &with_tools("qwen", "x")).await;
        let calls = answer["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{answer}");
        let arguments: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            arguments,
            json!({"city": "a</tool_call>b"}),
            "piece {piece}"
        );
        assert!(
            answer["content"].is_null() || answer["content"].as_str().unwrap().trim().is_empty(),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn the_json_format_works_the_same_way() {
    let text = "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}, {\"name\": \"get_time\", \"arguments\": {}}]}";
    for piece in [1, 5, 1000] {
        let (answer, backend) = both_ways(
            JSON_FORMAT,
            says(text, piece).reply(),
            &with_tools("qwen", "Weather and time"),
        )
        .await;
        let calls = answer["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{answer}");
        let arguments: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"city": "Paris", "days": 2}));
        assert_eq!(calls[1]["function"]["name"], "get_time");
        assert_eq!(calls[1]["function"]["arguments"], "{}");
        assert_eq!(answer["finish_reason"], "tool_calls");
        assert_eq!(answer["content"], Value::Null, "{answer}");
        let system = text_of(&sent(&backend, 0), 0);
        assert!(
            system.contains("get_weather") && system.contains("\"tool_calls\""),
            "{system}"
        );
    }
    // Prose stays prose.
    let (answer, _) = both_ways(
        JSON_FORMAT,
        says("Just text, {not a call}.", 3).reply(),
        &with_tools("qwen", "hi"),
    )
    .await;
    assert_eq!(answer["content"], "Just text, {not a call}.");
    assert_eq!(answer["finish_reason"], "stop");
}

#[tokio::test]
async fn native_routes_recover_calls_written_as_text() {
    let text = format!("I'll check.\n{}", weather_call("Paris"));
    for piece in [1, 7, 1000] {
        for chunking in [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole] {
            let (answer, backend) = both_ways(
                NATIVE_HERMES,
                says(&text, piece).reply_in(chunking),
                &with_tools("qwen", "Weather in Paris?"),
            )
            .await;
            assert_eq!(answer["content"], "I'll check.", "{answer}");
            let calls = answer["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), 1, "{answer}");
            assert_eq!(calls[0]["function"]["name"], "get_weather");
            let arguments: Value =
                serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(arguments, json!({"city": "Paris"}));
            assert_eq!(answer["finish_reason"], "tool_calls");
            // Still a native route: the tools go to the backend as tools.
            let sent = sent(&backend, 0);
            assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
            assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
        }
    }
}

#[tokio::test]
async fn the_family_comes_from_the_model_name_and_recoveries_are_counted() {
    let backend = ScriptedServer::start(vec![says(&weather_call("Rome"), 9).reply()]).await;
    let route = format!(
        "[[route]]\nname = \"local-qwen\"\nprovider = \"openai\"\nurl = \"{}\"\nmodel = \"Qwen/Qwen2.5-7B-Instruct\"\n",
        backend.base
    );
    let gateway = start("", &[route]).await;
    let answer = post(&gateway, &with_tools("local-qwen", "Weather in Rome?")).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = summary(&answer.json());
    assert_eq!(
        answer["tool_calls"][0]["function"]["name"], "get_weather",
        "{answer}"
    );
    let metrics = get(&gateway, "/metrics").await.text;
    assert!(
        metrics.lines().any(|line| line
            == "gateway_recovered_tool_calls_total{route=\"local-qwen\",family=\"hermes\"} 1"),
        "{metrics}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn recovery_is_off_with_false_or_tool_choice_none_and_native_calls_pass_as_they_are() {
    let text = format!("I'll check.\n{}", weather_call("Paris"));
    let (answer, _) = both_ways(
        "format = \"hermes\"\nrecover_text_calls = false",
        says(&text, 5).reply(),
        &with_tools("qwen", "Weather in Paris?"),
    )
    .await;
    assert_eq!(answer["content"], text.as_str(), "{answer}");
    assert_eq!(answer["tool_calls"], json!([]));
    assert_eq!(answer["finish_reason"], "stop");
    let mut none = with_tools("qwen", "Weather in Paris?");
    none["tool_choice"] = json!("none");
    let (answer, _) = both_ways(NATIVE_HERMES, says(&text, 5).reply(), &none).await;
    assert_eq!(answer["content"], text.as_str(), "{answer}");
    // A backend that parses calls itself: its calls pass as they are, and the text before
    // them is content.
    let native = OpenAiScript::new()
        .text("Checking <the> sky. ")
        .tool_call(
            "call_abcdefghijklmnopqrstuvwx",
            "get_weather",
            &["{\"city\": ", "\"Oslo\"}"],
        )
        .finish("tool_calls", 10, 5);
    let (answer, _) = both_ways(
        NATIVE_HERMES,
        native.reply(),
        &with_tools("qwen", "Weather in Oslo?"),
    )
    .await;
    assert_eq!(answer["content"], "Checking <the> sky. ", "{answer}");
    assert_eq!(
        answer["tool_calls"],
        json!([{"id": "call_abcdefghijklmnopqrstuvwx", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}])
    );
}

/// A model served under a name that names no family (`--served-model-name coder`, an Ollama
/// tag): calls written in any markup prose cannot produce are still recovered, for the
/// tools the request offered, streamed and whole alike, and counted by family; prose that
/// mentions a tool or the markup stays prose; `recover_text_calls = false` turns it off.
#[tokio::test]
async fn calls_written_as_text_are_recovered_whatever_the_model_is_called() {
    let mistral = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]";
    let llama = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
    let hermes = format!("I'll check.\n{}", weather_call("Paris"));
    for (text, family) in [
        (hermes.as_str(), "hermes"),
        (mistral, "mistral"),
        (llama, "llama3_json"),
    ] {
        for piece in [1, 6, 1000] {
            let (answer, _) = both_ways(
                "",
                says(text, piece).reply(),
                &with_tools("qwen", "Weather in Paris?"),
            )
            .await;
            let calls = answer["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), 1, "{family}: {answer}");
            assert_eq!(calls[0]["function"]["name"], "get_weather");
            let arguments: Value =
                serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(arguments, json!({"city": "Paris"}));
            assert_eq!(answer["finish_reason"], "tool_calls");
        }
    }
    let backend = ScriptedServer::start(vec![says(mistral, 4).reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let answer = post(&gateway, &with_tools("qwen", "Weather in Paris?")).await;
    assert_eq!(summary(&answer.json())["finish_reason"], "tool_calls");
    let metrics = get(&gateway, "/metrics").await.text;
    assert!(
        metrics.lines().any(|line| line
            .starts_with("gateway_recovered_tool_calls_total{route=\"qwen\",family=\"mistral\"} ")),
        "{metrics}"
    );
    gateway.stop().await.unwrap();

    // Near misses: prose about markup or tools, and a call to a tool nobody offered.
    for text in [
        "Wrap a call in <tool_call> tags: <tool_call>get_weather</tool_call> is how.",
        "I would call get_weather with {\"city\": \"Paris\"}.",
        "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>",
        "{\"name\": \"rm_rf\", \"parameters\": {}}",
        "The [TOOL_CALLS] marker opens calls.",
    ] {
        let (answer, _) = both_ways(
            "",
            says(text, 3).reply(),
            &with_tools("qwen", "Weather in Paris?"),
        )
        .await;
        assert_eq!(answer["content"], text, "{answer}");
        assert_eq!(answer["tool_calls"], json!([]), "{answer}");
        assert_eq!(answer["finish_reason"], "stop", "{answer}");
    }
    let (answer, _) = both_ways(
        "recover_text_calls = false",
        says(mistral, 3).reply(),
        &with_tools("qwen", "Weather in Paris?"),
    )
    .await;
    assert_eq!(answer["content"], mistral, "{answer}");
    assert_eq!(answer["tool_calls"], json!([]));
}
