//! What goes wrong, and how the client hears about it: the model's bad tool calls under both
//! policies, and backends that refuse, fail, stall, die mid-stream or are not there. Always
//! OpenAI's error shape with a meaningful status; after a stream began, an error event and
//! no `[DONE]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{AnthropicScript, OpenAiScript, Reply, ScriptedServer};

const REJECT: &str = "tool_call_errors = \"reject\"";
const GOOD_ID: &str = "call_abcdefghijklmnopqrstuvwx";

/// A model that makes one good call and one of each kind of bad call.
fn bad_calls() -> OpenAiScript {
    OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": \"Paris\"}"])
        .tool_call("", "get_stock", &["{\"ticker\": \"ACME\"}"])
        .tool_call("", "get_weather", &["{\"city\": \"Par"])
        .tool_call("", "get_weather", &["{\"city\": 7}"])
        .finish("tool_calls", 10, 20)
}

/// The error event that ends a stream that had begun.
fn error_event(streamed: &Streamed) -> Value {
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(
        !streamed.done,
        "no [DONE] after an error: {}",
        streamed.text
    );
    let last = streamed.chunks.last().unwrap();
    let error = &last["error"];
    assert!(
        error["message"].is_string() && error["type"].is_string(),
        "{last}"
    );
    error.clone()
}

#[tokio::test]
async fn bad_calls_are_passed_unchanged_and_reported() {
    let backend = ScriptedServer::start(vec![bad_calls().reply(), bad_calls().reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let body = with_tools("qwen", "Weather and stocks");
    let whole = post(&gateway, &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(&gateway, &streaming(body)).await;
    assert!(streamed.done, "{}", streamed.text);
    let whole = summary(&whole.json());
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulate(&streamed.chunks))
    );
    let calls: Vec<(&str, &str)> = whole["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            (
                call["function"]["name"].as_str().unwrap(),
                call["function"]["arguments"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("get_weather", "{\"city\": \"Paris\"}"),
            ("get_stock", "{\"ticker\": \"ACME\"}"),
            ("get_weather", "{\"city\": \"Par"),
            ("get_weather", "{\"city\": 7}"),
        ],
        "never dropped or altered"
    );
    let errors = whole["tool_call_errors"]
        .as_array()
        .unwrap_or_else(|| panic!("{whole}"));
    let codes: Vec<(u64, &str)> = errors
        .iter()
        .map(|error| {
            (
                error["index"].as_u64().unwrap(),
                error["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            (1, "unknown_tool_call"),
            (2, "malformed_tool_arguments"),
            (3, "invalid_tool_arguments")
        ]
    );
    for error in errors {
        assert!(
            error["message"].as_str().unwrap().starts_with("tool call "),
            "{error}"
        );
    }
    assert!(
        errors[0]["message"].as_str().unwrap().contains("get_stock"),
        "{errors:?}"
    );
    assert_eq!(whole["finish_reason"], "tool_calls");
    let metrics = get(&gateway, "/metrics").await.text;
    for code in [
        "unknown_tool_call",
        "malformed_tool_arguments",
        "invalid_tool_arguments",
    ] {
        assert!(
            metrics.contains(&format!(
                "gateway_tool_call_errors_total{{code=\"{code}\"}}"
            )),
            "{code} counted:\n{metrics}"
        );
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn under_reject_each_bad_call_is_an_error_with_its_code() {
    let cases = [
        ("get_stock", "{\"ticker\": \"ACME\"}", "unknown_tool_call"),
        (
            "get_weather",
            "{\"city\": \"Par",
            "malformed_tool_arguments",
        ),
        ("get_weather", "{\"days\": 2}", "invalid_tool_arguments"),
    ];
    for (name, arguments, code) in cases {
        let script = OpenAiScript::new()
            .tool_call(GOOD_ID, name, &[arguments])
            .finish("tool_calls", 1, 1);
        let with_text = OpenAiScript::new()
            .text("Calling now.")
            .tool_call(GOOD_ID, name, &[arguments])
            .finish("tool_calls", 1, 1);
        let backend =
            ScriptedServer::start(vec![script.reply(), script.reply(), with_text.reply()]).await;
        let gateway = one_route("openai", &backend.base, REJECT).await;
        let body = with_tools("qwen", "x");
        let error = post(&gateway, &body).await.error(502);
        assert_eq!(error["code"], code, "{error}");
        assert!(error["message"].as_str().unwrap().contains(name), "{error}");
        // Streamed with nothing sent yet: the same error response.
        let error = post(&gateway, &streaming(body.clone())).await.error(502);
        assert_eq!(error["code"], code, "{error}");
        // Streamed after text went out: an error event, and the bad call never sent.
        let streamed = post_stream(&gateway, &streaming(body)).await;
        assert_eq!(error_event(&streamed)["code"], code);
        assert!(!streamed.text.contains("tool_calls"), "{}", streamed.text);
        assert!(streamed.text.contains("Calling now."));
        gateway.stop().await.unwrap();
    }
    // A good call passes under reject too.
    let good = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": ", "\"Oslo\"}"])
        .finish("tool_calls", 1, 1);
    let backend = ScriptedServer::start(vec![good.reply()]).await;
    let gateway = one_route("openai", &backend.base, REJECT).await;
    let streamed = post_stream(&gateway, &streaming(with_tools("qwen", "x"))).await;
    assert!(streamed.done, "{}", streamed.text);
    let answer = accumulate(&streamed.chunks);
    assert_eq!(
        answer["tool_calls"][0]["function"]["arguments"],
        "{\"city\": \"Oslo\"}"
    );
    assert_eq!(answer["tool_call_errors"], Value::Null);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn prompted_routes_check_calls_the_same_way() {
    let text = "<tool_call>\n{\"name\": \"get_stock\", \"arguments\": {\"ticker\": \"ACME\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 7}}\n</tool_call>";
    let script = OpenAiScript::new().text(text).finish("stop", 5, 5);
    let backend = ScriptedServer::start(vec![script.reply(), script.reply(), script.reply()]).await;
    let gateway = start(
        "",
        &[
            route(
                "report",
                "openai",
                &backend.base,
                "tool_calling = \"prompted\"\nformat = \"hermes\"",
            ),
            route(
                "reject",
                "openai",
                &backend.base,
                "tool_calling = \"prompted\"\nformat = \"hermes\"\ntool_call_errors = \"reject\"",
            ),
        ],
    )
    .await;
    let whole = post(&gateway, &with_tools("report", "x")).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(&gateway, &streaming(with_tools("report", "x"))).await;
    let whole = summary(&whole.json());
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulate(&streamed.chunks))
    );
    let names: Vec<&str> = whole["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_stock", "get_weather"], "{whole}");
    let codes: Vec<&str> = whole["tool_call_errors"]
        .as_array()
        .unwrap_or_else(|| panic!("{whole}"))
        .iter()
        .map(|error| error["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["unknown_tool_call", "invalid_tool_arguments"]);
    let error = post(&gateway, &streaming(with_tools("reject", "x")))
        .await
        .error(502);
    assert_eq!(error["code"], "unknown_tool_call");
    gateway.stop().await.unwrap();
}

fn status(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"message": message, "type": "scripted"}}),
    )
    .header("retry-after", "0")
}

#[tokio::test]
async fn a_429_stays_a_429_after_the_retries() {
    let backend = ScriptedServer::start(vec![
        status(429, "slow down"),
        status(429, "slow down"),
        status(429, "slow down"),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let error = post(&gateway, &request("qwen", "hi")).await.error(429);
    assert_eq!(error["code"], "rate_limited");
    assert_eq!(error["type"], "rate_limit_error");
    assert!(
        error["message"].as_str().unwrap().contains("slow down"),
        "{error}"
    );
    assert_eq!(backend.requests().len(), 3, "the request and two retries");
    gateway.stop().await.unwrap();

    // One 429 and then an answer: the client never sees the 429.
    let ok = OpenAiScript::new().text("fine").finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![status(429, "slow down"), ok.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let streamed = post_stream(&gateway, &streaming(request("qwen", "hi"))).await;
    assert!(streamed.done, "{}", streamed.text);
    assert_eq!(accumulate(&streamed.chunks)["content"], "fine");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn backend_errors_keep_their_message_and_get_a_gateway_status() {
    let backend = ScriptedServer::start(vec![
        status(500, "model crashed"),
        status(500, "model crashed"),
        status(500, "model crashed"),
        status(400, "This model's maximum context length is 8192 tokens"),
        Reply::sse("data: {not json}\n\n", switchboard_testkit::Chunking::Whole),
    ])
    .await;
    let gateway = one_route("openai", &backend.base, "").await;
    let error = post(&gateway, &request("qwen", "hi")).await.error(502);
    assert_eq!(error["code"], "backend_error");
    assert!(
        error["message"].as_str().unwrap().contains("model crashed"),
        "{error}"
    );
    let error = post(&gateway, &streaming(request("qwen", "hi")))
        .await
        .error(400);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length"),
        "{error}"
    );
    let error = post(&gateway, &request("qwen", "hi")).await.error(502);
    assert_eq!(error["code"], "backend_bad_answer", "{error}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_stalled_backend_times_out_with_504() {
    let mut stalled = OpenAiScript::new()
        .text("late")
        .finish("stop", 1, 1)
        .reply();
    stalled.delay_before_body = Some(Duration::from_secs(5));
    let backend = ScriptedServer::start(vec![stalled.clone(), stalled]).await;
    let gateway = start(
        "request_timeout_secs = 1",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let started = std::time::Instant::now();
    let error = post(&gateway, &request("qwen", "hi")).await.error(504);
    assert_eq!(error["code"], "request_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "answered at the deadline, not when the backend woke"
    );
    let error = post(&gateway, &streaming(request("qwen", "hi")))
        .await
        .error(504);
    assert_eq!(error["code"], "request_timeout");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_stream_that_stalls_after_it_began_ends_with_an_error_event() {
    let never = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("Once ")
        .text("upon")
        .text(" a time")
        .finish("stop", 1, 1)
        .reply();
    reply.gate = Some((2, Arc::clone(&never)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = start(
        "request_timeout_secs = 1",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let streamed = post_stream(&gateway, &streaming(request("qwen", "story"))).await;
    assert_eq!(error_event(&streamed)["code"], "request_timeout");
    assert_eq!(
        accumulate(&streamed.chunks[..streamed.chunks.len() - 1])["content"],
        "Once upon"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_stream_cut_mid_way_ends_with_an_error_event_and_no_done() {
    let script = OpenAiScript::new()
        .text("The answer ")
        .text("is ")
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": ", "\"Pa"])
        .finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![script.cut_after(4), script.cut_after(4)]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let streamed = post_stream(&gateway, &streaming(with_tools("qwen", "x"))).await;
    let error = error_event(&streamed);
    assert_eq!(error["code"], "backend_stream_cut", "{error}");
    let before = accumulate(&streamed.chunks[..streamed.chunks.len() - 1]);
    assert_eq!(before["content"], "The answer is ");
    assert!(
        before["finish_reason"].is_null(),
        "no finish after a cut: {before}"
    );
    let error = post(&gateway, &with_tools("qwen", "x")).await.error(502);
    assert_eq!(error["code"], "backend_stream_cut");
    gateway.stop().await.unwrap();

    // Anthropic reports an overload inside the stream.
    let overloaded = format!(
        "{}event: error\ndata: {}\n\n",
        AnthropicScript::new(3).text("Hel").body(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    let backend = ScriptedServer::start(vec![Reply::sse(
        overloaded,
        switchboard_testkit::Chunking::PerEvent("\n\n"),
    )])
    .await;
    let gateway = one_route("anthropic", &backend.base, "").await;
    let streamed = post_stream(&gateway, &streaming(request("qwen", "hi"))).await;
    let error = error_event(&streamed);
    assert!(
        error["message"].as_str().unwrap().contains("Overloaded"),
        "{error}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_backend_is_a_502() {
    let gateway = one_route("openai", &closed_url().await, "").await;
    for body in [request("qwen", "hi"), streaming(request("qwen", "hi"))] {
        let error = post(&gateway, &body).await.error(502);
        assert_eq!(error["code"], "backend_unreachable");
        assert!(
            error["message"].as_str().unwrap().contains("127.0.0.1"),
            "{error}"
        );
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_backend_that_hangs_up_without_answering_is_named_as_such() {
    // Two hang-ups: the pooled connection and the fresh one the transport retries on. (The
    // route's own retries are off here: `replicas.rs` covers them.)
    let backend = ScriptedServer::start(vec![Reply::hang_up(), Reply::hang_up()]).await;
    let gateway = one_route("openai", &backend.base, "retries = 0\n").await;
    let error = post(&gateway, &request("qwen", "hi")).await.error(502);
    assert_eq!(error["code"], "backend_closed_connection", "{error}");
    assert_eq!(
        backend.requests().len(),
        2,
        "the request is tried once more on a new connection"
    );
    gateway.stop().await.unwrap();
}

/// The same request asked for whole and streamed through `gateway`; the agreed summary.
async fn whole_and_streamed(gateway: &switchboard_server::RunningGateway, body: &Value) -> Value {
    let whole = post(gateway, body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let streamed = post_stream(gateway, &streaming(body.clone())).await;
    assert!(streamed.done, "{}", streamed.text);
    let whole = summary(&whole.json());
    assert_eq!(
        without_ids(whole.clone()),
        without_ids(accumulate(&streamed.chunks)),
        "streamed and whole answers differ"
    );
    whole
}

fn error_codes(answer: &Value) -> Vec<(u64, String)> {
    answer["tool_call_errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|error| {
            (
                error["index"].as_u64().unwrap(),
                error["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_call_cut_by_the_length_limit_finishes_with_length_under_every_policy() {
    let openai = OpenAiScript::new()
        .text("Checking. ")
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": ", "\"Par"])
        .finish("length", 10, 8);
    let anthropic = AnthropicScript::new(10)
        .text("Checking. ")
        .tool_use("toolu_01", "get_weather", &["{\"city\": ", "\"Par"])
        .finish("max_tokens", 8);
    for (provider, reply) in [("openai", openai.reply()), ("anthropic", anthropic.reply())] {
        for policy in ["report", "reject", "repair"] {
            let backend = ScriptedServer::start(vec![reply.clone(), reply.clone()]).await;
            let gateway = one_route(
                provider,
                &backend.base,
                &format!("tool_call_errors = \"{policy}\""),
            )
            .await;
            let mut body = with_tools("qwen", "Weather in Paris?");
            body["max_tokens"] = json!(8);
            let answer = whole_and_streamed(&gateway, &body).await;
            let context = format!("{provider}, {policy}: {answer}");
            assert_eq!(answer["finish_reason"], "length", "{context}");
            assert_eq!(answer["content"], "Checking. ", "{context}");
            assert_eq!(
                answer["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Par",
                "the call is passed on unchanged: {context}"
            );
            assert_eq!(
                error_codes(&answer),
                [(0, "malformed_tool_arguments".to_owned())],
                "{context}"
            );
            assert_eq!(
                backend.requests().len(),
                2,
                "no second try under the same limit: {context}"
            );
            assert_eq!(sent(&backend, 0)["max_tokens"], 8, "{context}");
            gateway.stop().await.unwrap();
        }
    }
}

/// A model that gets the city's type wrong, then right once it reads the error.
fn wrong_then_fixed() -> [OpenAiScript; 2] {
    [
        OpenAiScript::new()
            .text("Let me check. ")
            .tool_call(GOOD_ID, "get_weather", &["{\"city\": ", "7}"])
            .finish("tool_calls", 10, 6),
        OpenAiScript::new()
            .text("Sorry, the city is a name. ")
            .tool_call("", "get_weather", &["{\"city\": \"Paris\"}"])
            .finish("tool_calls", 30, 7),
    ]
}

#[tokio::test]
async fn repair_asks_once_more_and_passes_on_only_the_corrected_call() {
    const REPAIR: &str = "tool_call_errors = \"repair\"";
    let [wrong, fixed] = wrong_then_fixed();
    let replies = vec![wrong.reply(), fixed.reply(), wrong.reply(), fixed.reply()];
    let backend = ScriptedServer::start(replies).await;
    let gateway = one_route("openai", &backend.base, REPAIR).await;
    let answer = whole_and_streamed(&gateway, &with_tools("qwen", "Weather in Paris?")).await;
    assert_eq!(
        answer["content"], "Let me check. ",
        "the second try's words are not said again: {answer}"
    );
    let calls = answer["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{answer}");
    assert_eq!(calls[0]["function"]["arguments"], "{\"city\": \"Paris\"}");
    assert_ne!(calls[0]["id"], GOOD_ID, "the broken call is not passed on");
    assert_eq!(answer["tool_call_errors"], Value::Null, "{answer}");
    assert_eq!(answer["finish_reason"], "tool_calls");
    assert_eq!(
        answer["usage"],
        json!({"prompt_tokens": 40, "completion_tokens": 13, "total_tokens": 53}),
        "both requests are paid for"
    );
    // The second try shows the model its answer and the error its call got, as a tool result.
    let retry = sent(&backend, 1);
    let messages = retry["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{retry}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], "Let me check. ");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        "{\"city\": 7}"
    );
    let bad_id = messages[1]["tool_calls"][0]["id"].clone();
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], bad_id);
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: Invalid parameters - /city: expected string"),
        "{retry}"
    );
    assert_eq!(retry["tools"], sent(&backend, 0)["tools"]);
    gateway.stop().await.unwrap();

    // A good first answer is passed on as it is, with one request.
    let good = OpenAiScript::new()
        .tool_call(GOOD_ID, "get_weather", &["{\"city\": \"Oslo\"}"])
        .finish("tool_calls", 1, 1);
    let backend = ScriptedServer::start(vec![good.reply(), good.reply()]).await;
    let gateway = one_route("openai", &backend.base, REPAIR).await;
    let answer = whole_and_streamed(&gateway, &with_tools("qwen", "x")).await;
    assert_eq!(answer["tool_calls"][0]["id"], GOOD_ID);
    assert_eq!(backend.requests().len(), 2);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn repair_reports_a_call_still_broken_after_the_second_try() {
    let [wrong, _] = wrong_then_fixed();
    let unknown = OpenAiScript::new()
        .tool_call("", "get_forecast", &["{\"city\": \"Paris\"}"])
        .finish("tool_calls", 30, 7);
    let replies = vec![
        wrong.reply(),
        unknown.reply(),
        wrong.reply(),
        unknown.reply(),
    ];
    let backend = ScriptedServer::start(replies).await;
    let gateway = one_route("openai", &backend.base, "tool_call_errors = \"repair\"").await;
    let answer = whole_and_streamed(&gateway, &with_tools("qwen", "Weather in Paris?")).await;
    assert_eq!(
        answer["tool_calls"][0]["function"]["name"], "get_forecast",
        "the second try's call, as report passes calls: {answer}"
    );
    assert_eq!(error_codes(&answer), [(0, "unknown_tool_call".to_owned())]);
    assert_eq!(answer["finish_reason"], "tool_calls");
    assert_eq!(backend.requests().len(), 4, "one second try per answer");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn repair_works_on_prompted_routes_in_the_family_markup() {
    let wrong = OpenAiScript::new()
        .text(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 7}}\n</tool_call>",
        )
        .finish("stop", 10, 6);
    let fixed = OpenAiScript::new()
        .text("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
        .finish("stop", 30, 7);
    let replies = vec![wrong.reply(), fixed.reply(), wrong.reply(), fixed.reply()];
    let backend = ScriptedServer::start(replies).await;
    let gateway = one_route(
        "openai",
        &backend.base,
        "tool_calling = \"prompted\"\nformat = \"hermes\"\ntool_call_errors = \"repair\"",
    )
    .await;
    let answer = whole_and_streamed(&gateway, &with_tools("qwen", "Weather in Paris?")).await;
    let arguments = answer["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"city": "Paris"}),
        "{answer}"
    );
    assert_eq!(answer["tool_call_errors"], Value::Null, "{answer}");
    let retry = sent(&backend, 1);
    let messages = retry["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(
        last["role"], "user",
        "results are a user turn in markup: {retry}"
    );
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("Error: Invalid parameters - /city"),
        "{retry}"
    );
    assert!(retry.get("tools").is_none(), "{retry}");
    gateway.stop().await.unwrap();
}
