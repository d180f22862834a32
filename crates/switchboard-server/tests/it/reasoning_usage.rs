//! The tokens a backend says its model spent reasoning
//! (`usage.completion_tokens_details.reasoning_tokens`) reach every API that has a place for
//! them, whole and streamed alike: Gemini's `usageMetadata.thoughtsTokenCount` (apart from
//! `candidatesTokenCount`, as Google counts), Chat's `completion_tokens_details` and the
//! Responses API's `output_tokens_details`; and where the backend says nothing, Gemini's
//! answer has no `thoughtsTokenCount`, as Google's has none.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Answer, parse_sse, post, post_to, post_with, request, streaming};
use serde_json::{Value, json};
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

/// 20 prompt tokens, 9 completion tokens of which 5 reasoning.
fn reasoned() -> OpenAiScript {
    OpenAiScript::new()
        .delta(json!({"reasoning_content": "Paris is in France."}))
        .text("It is ")
        .text("sunny.")
        .finish("stop", 20, 9)
        .reasoning_tokens(5)
}

fn gemini_body() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "weather?"}]}]})
}

async fn gemini(gateway: &switchboard_server::RunningGateway, method: &str) -> Answer {
    let answer = post_with(
        gateway,
        &format!("/v1beta/models/native:{method}"),
        &gemini_body(),
        &[],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer
}

/// The `usageMetadata` of a Gemini answer: the whole body's, or a stream's last response's.
fn usage_metadata(responses: &[Value]) -> Value {
    responses
        .iter()
        .rev()
        .find_map(|response| response.get("usageMetadata").cloned())
        .unwrap_or(Value::Null)
}

fn sse_data(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// Gemini whole, as SSE and as Google's JSON array: each `usageMetadata` as read.
async fn gemini_usages(backend: &ScriptedServer) -> Vec<Value> {
    let gateway = common::native_route(backend).await;
    let whole = gemini(&gateway, "generateContent").await;
    let sse = gemini(&gateway, "streamGenerateContent?alt=sse").await;
    let array = gemini(&gateway, "streamGenerateContent").await;
    let array: Vec<Value> = serde_json::from_str(&array.text).unwrap();
    gateway.stop().await.unwrap();
    vec![
        usage_metadata(&[whole.json()]),
        usage_metadata(&sse_data(&sse.text)),
        usage_metadata(&array),
    ]
}

/// Per SSE event, and one byte per HTTP chunk.
fn replies(script: &OpenAiScript) -> [Reply; 2] {
    [script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

/// For [`gemini_usages`]' three requests.
fn three_replies(script: &OpenAiScript) -> Vec<Reply> {
    let mut replies = replies(script).to_vec();
    replies.push(script.reply_in(Chunking::Bytes));
    replies
}

#[tokio::test]
async fn gemini_counts_thoughts_apart_whole_and_streamed() {
    let script = reasoned();
    let backend = ScriptedServer::start(three_replies(&script)).await;
    for usage in gemini_usages(&backend).await {
        assert_eq!(
            usage,
            json!({"promptTokenCount": 20, "candidatesTokenCount": 4, "totalTokenCount": 29,
                "thoughtsTokenCount": 5})
        );
    }
}

#[tokio::test]
async fn gemini_has_no_thoughts_count_where_the_backend_gives_none() {
    let script = OpenAiScript::new().text("Sunny.").finish("stop", 20, 9);
    let backend = ScriptedServer::start(three_replies(&script)).await;
    for usage in gemini_usages(&backend).await {
        assert_eq!(
            usage,
            json!({"promptTokenCount": 20, "candidatesTokenCount": 9, "totalTokenCount": 29})
        );
    }
}

#[tokio::test]
async fn chat_and_responses_pass_the_reasoning_count_on_whole_and_streamed() {
    let script = reasoned();
    let backend = ScriptedServer::start(
        replies(&script)
            .into_iter()
            .chain(replies(&script))
            .collect(),
    )
    .await;
    let gateway = common::native_route(&backend).await;
    let details = json!({"reasoning_tokens": 5});

    let whole = post(&gateway, &request("native", "weather?")).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let usage = &whole.json()["usage"];
    assert_eq!(usage["completion_tokens"], 9, "{usage}");
    assert_eq!(usage["completion_tokens_details"], details, "{usage}");
    let streamed = post(&gateway, &streaming(request("native", "weather?"))).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let (chunks, done) = parse_sse(&streamed.text);
    assert!(done, "{}", streamed.text);
    let usage = chunks
        .iter()
        .find_map(|chunk| chunk.get("usage").filter(|usage| !usage.is_null()))
        .unwrap();
    assert_eq!(usage["completion_tokens_details"], details, "{usage}");

    let body = json!({"model": "native", "input": "weather?", "store": false});
    let whole = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let usage = &whole.json()["usage"];
    assert_eq!(usage["output_tokens"], 9, "{usage}");
    assert_eq!(usage["output_tokens_details"], details, "{usage}");
    let mut body = body;
    body["stream"] = json!(true);
    let streamed = post_to(&gateway, "/v1/responses", &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let completed = sse_data(&streamed.text)
        .into_iter()
        .find(|event| event["type"] == "response.completed")
        .unwrap();
    assert_eq!(
        completed["response"]["usage"]["output_tokens_details"], details,
        "{completed}"
    );
    gateway.stop().await.unwrap();
}
