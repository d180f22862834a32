//! Running the gateway: the model list, liveness with backend reachability, Prometheus
//! metrics, request ids, and a shutdown that lets streams in flight finish.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{OpenAiScript, ScriptedServer};

#[tokio::test]
async fn models_lists_routes_then_characters() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = start(
        "",
        &[
            route("qwen", "openai", &backend.base, ""),
            route("claude", "anthropic", &backend.base, ""),
        ],
    )
    .await;
    let answer = get(&gateway, "/v1/models").await;
    assert_eq!(answer.status, 200);
    let list = answer.json();
    assert_eq!(list["object"], "list");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| {
            assert_eq!(model["object"], "model", "{model}");
            model["id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(&ids[..2], ["qwen", "claude"]);
    for character in [
        "character/narrator",
        "character/game-master",
        "character/quiz-show",
    ] {
        assert!(ids.contains(&character), "{character} in {ids:?}");
    }
    assert!(
        ids[2..].iter().all(|id| id.starts_with("character/")),
        "{ids:?}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn healthz_reports_which_backends_answered() {
    // The probe only opens a connection: a listener is a backend that answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let live_url = format!("http://{}", listener.local_addr().unwrap());
    let gateway = start(
        "",
        &[
            route("up", "openai", &live_url, ""),
            route("down", "openai", &closed_url().await, ""),
        ],
    )
    .await;
    gateway.state.snapshot().health.check().await;
    let health = get(&gateway, "/healthz").await;
    assert_eq!(health.status, 200);
    let health = health.json();
    // A route with no replica taking requests makes the gateway degraded, not down.
    assert_eq!(health["status"], "degraded");
    let reachable: Vec<(&str, Value)> = health["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|backend| {
            (
                backend["route"].as_str().unwrap(),
                backend["reachable"].clone(),
            )
        })
        .collect();
    assert_eq!(reachable, [("up", json!(true)), ("down", json!(false))]);
    assert!(health["backends"][1]["detail"].is_string(), "{health}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let ok = OpenAiScript::new().text("hi").finish("stop", 3, 4);
    let backend = ScriptedServer::start(vec![ok.reply(), ok.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    assert_eq!(post(&gateway, &request("qwen", "hi")).await.status, 200);
    let streamed = post_stream(&gateway, &streaming(request("qwen", "hi"))).await;
    assert!(streamed.done);
    assert_eq!(post(&gateway, &request("", "hi")).await.status, 400);
    let metrics = get(&gateway, "/metrics").await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"),
        "{:?}",
        metrics.headers
    );
    let count = |labels: &str| -> f64 {
        metrics
            .text
            .lines()
            .find(|line| line.starts_with(&format!("gateway_requests_total{{{labels}}}")))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("gateway_requests_total{{{labels}}}:\n{}", metrics.text))
    };
    // Other tests in this binary share the process's recorder: at least, not exactly.
    assert!(count("endpoint=\"chat_completions\",route=\"qwen\",status=\"200\"") >= 2.0);
    assert!(count("endpoint=\"chat_completions\",route=\"-\",status=\"400\"") >= 1.0);
    assert!(
        metrics
            .text
            .contains("gateway_request_duration_seconds_bucket"),
        "{}",
        metrics.text
    );
    assert!(
        metrics.text.contains("gateway_tokens_total"),
        "{}",
        metrics.text
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn every_answer_carries_a_request_id_and_a_clients_id_is_echoed() {
    let ok = OpenAiScript::new().text("hi").finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![ok.reply(), ok.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let mut seen = Vec::new();
    for body in [
        request("qwen", "hi"),
        streaming(request("qwen", "hi")),
        request("nope", "hi"),
    ] {
        let answer = post(&gateway, &body).await;
        let id = answer.headers["x-request-id"].to_str().unwrap().to_owned();
        assert!(id.starts_with("req_") && id.len() > 10, "{id}");
        seen.push(id);
    }
    seen.dedup();
    assert_eq!(seen.len(), 3, "ids are unique: {seen:?}");
    let health = get(&gateway, "/healthz").await;
    assert!(health.headers.contains_key("x-request-id"));
    let answer = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .header("x-request-id", "trace-1234")
        .json(&request("nope", "hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["x-request-id"], "trace-1234");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_stream_in_flight_when_stop_is_called_still_completes() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("First ")
        .text("second ")
        .text("third.")
        .finish("stop", 2, 3)
        .reply();
    reply.gate = Some((1, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let base = gateway.base_url();
    let mut response = client()
        .post(format!("{base}/v1/chat/completions"))
        .json(&streaming(request("qwen", "count")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut received =
        String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    assert!(received.contains("First"), "{received}");
    let stopping = tokio::spawn(gateway.stop());
    // The gateway stops accepting while the stream is still open.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !stopping.is_finished(),
        "stop() waits for the stream in flight"
    );
    let refused = client()
        .get(format!("{base}/healthz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(refused.is_err(), "new requests are refused while stopping");
    gate.notify_one();
    while let Some(bytes) = response.chunk().await.unwrap() {
        received.push_str(&String::from_utf8_lossy(&bytes));
    }
    let (chunks, done) = parse_sse(&received);
    assert!(done, "{received}");
    let answer = accumulate(&chunks);
    assert_eq!(answer["content"], "First second third.");
    assert_eq!(answer["finish_reason"], "stop");
    tokio::time::timeout(Duration::from_secs(5), stopping)
        .await
        .expect("stop() returns once the stream is done")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn wrong_methods_and_paths_get_openai_shaped_errors() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = start("", &[route("qwen", "openai", &backend.base, "")]).await;
    let error = get(&gateway, "/v1/chat/completions").await.error(405);
    assert_eq!(error["code"], "method_not_allowed");
    let error = get(&gateway, "/v1/embeddings").await.error(404);
    assert_eq!(error["code"], "not_found");
    gateway.stop().await.unwrap();
}

/// A client that goes away mid-stream cancels the backend request: the backend sees its
/// connection closed while it still had more to send.
#[tokio::test]
async fn a_client_leaving_mid_stream_cancels_the_backend_request() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("The first words")
        .text(" and the rest.")
        .finish("stop", 1, 1)
        .reply();
    reply.gate = Some((1, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = start("", &[route("qwen", "openai", &backend.base, "")]).await;
    let mut response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(&streaming(request("qwen", "hello")))
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("The first words"));
    drop(response);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while backend.hung_up() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        backend.hung_up(),
        1,
        "the backend connection was closed when the client left"
    );
    gateway.stop().await.unwrap();
}
