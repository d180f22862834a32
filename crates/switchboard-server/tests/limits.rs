//! The gateway's bounds, each replayed as the attack that found it: answers that never end,
//! one enormous event from a backend, metric labels from client strings, and clients that
//! leave. (Connection-level attacks: `tests/it/connections.rs`; whole processes under a
//! lowered descriptor limit, RSS and signals: the `switchboard` crate's
//! `tests/it/reliability.rs`.)
//!
//! A binary of its own, not a module of `tests/it`: the metrics recorder is the process's, and
//! `client_spellings_of_a_model_do_not_grow_the_metrics` compares the whole of `/metrics`
//! before and after, so a test of another file adding a series in between (a route, a key, a
//! status) would fail it. Here only this file's tests share the process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

/// An answer of `pieces` text deltas of 100 bytes whose backend then holds the stream open
/// (a backend that never stops); only a gateway that gives up closes the connection.
fn endless(pieces: usize) -> (Reply, Arc<tokio::sync::Notify>) {
    let mut script = OpenAiScript::new();
    for _ in 0..pieces {
        script = script.text(&"x".repeat(100));
    }
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = script.finish("stop", 1, 1).reply();
    reply.gate = Some((pieces, Arc::clone(&gate)));
    (reply, gate)
}

async fn wait_for_hang_up(backend: &ScriptedServer) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while backend.hung_up() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(backend.hung_up(), 1, "the backend request was closed");
}

/// A whole answer, and a streamed one, stop at `max_answer_bytes` with
/// `backend_answer_too_large` and close the backend request.
#[tokio::test]
async fn an_answer_past_max_answer_bytes_is_stopped_whole_or_streamed() {
    let (whole, _whole_gate) = endless(30);
    let (streamed, _streamed_gate) = endless(30);
    let backend = ScriptedServer::start(vec![whole]).await;
    let streaming_backend = ScriptedServer::start(vec![streamed]).await;
    let gateway = start(
        "max_answer_bytes = 1000",
        &[
            route("whole", "openai", &backend.base, ""),
            route("streamed", "openai", &streaming_backend.base, ""),
        ],
    )
    .await;
    let error = post(&gateway, &request("whole", "talk")).await.error(502);
    assert_eq!(error["code"], "backend_answer_too_large", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("1000 bytes"),
        "{error}"
    );
    wait_for_hang_up(&backend).await;

    let answer = post(&gateway, &streaming(request("streamed", "talk"))).await;
    assert_eq!(answer.status, 200);
    let last = answer.text.trim_end().rsplit("\n\n").next().unwrap();
    let event: serde_json::Value =
        serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(
        event["error"]["code"], "backend_answer_too_large",
        "{}",
        answer.text
    );
    assert!(!answer.text.contains("[DONE]"));
    wait_for_hang_up(&streaming_backend).await;
    gateway.stop().await.unwrap();
}

/// One SSE line longer than the decoders accept (16 MiB) ends the answer the same way,
/// without the gateway holding the whole line.
#[tokio::test]
async fn one_enormous_backend_event_is_stopped() {
    let text = "y".repeat(switchboard_wire::MAX_EVENT_BYTES + 1024);
    let body = OpenAiScript::new().text(&text).finish("stop", 1, 1).body();
    let reply = Reply::sse(body, Chunking::Whole);
    let backend = ScriptedServer::start(vec![reply.clone(), reply]).await;
    let gateway = start(
        "max_answer_bytes = 67108864",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let error = post(&gateway, &request("qwen", "talk")).await.error(502);
    assert_eq!(error["code"], "backend_answer_too_large", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("an event longer than 16777216 bytes"),
        "{error}"
    );
    let streamed = post(&gateway, &streaming(request("qwen", "talk"))).await;
    assert!(
        streamed.text.contains("backend_answer_too_large"),
        "{}",
        &streamed.text[..streamed.text.len().min(500)]
    );
    gateway.stop().await.unwrap();
}

/// Metric labels are the resolved route or character, never the client's string: 2,048
/// capitalisations of one character's name and 2,048 unknown models add no series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_spellings_of_a_model_do_not_grow_the_metrics() {
    use futures::StreamExt;
    let answer = OpenAiScript::new()
        .text("Once.")
        .finish("stop", 1, 1)
        .reply();
    let backend = ScriptedServer::start(vec![answer; 2049]).await;
    let gateway = start("", &[route("qwen", "openai", &backend.base, "")]).await;
    let gateway = &gateway;
    assert_eq!(
        post(gateway, &request("character/french-tutor", "hi"))
            .await
            .status,
        200
    );
    assert_eq!(
        post(gateway, &request("unknown-model", "hi")).await.status,
        404
    );
    let before = get(gateway, "/metrics").await.text;
    // Eleven letters: 2,048 spellings of the same file stem.
    let stem = "french-tutor";
    let letters: Vec<usize> = stem
        .char_indices()
        .filter(|(_, letter)| letter.is_ascii_alphabetic())
        .map(|(position, _)| position)
        .collect();
    assert_eq!(letters.len(), 11);
    let spellings: Vec<String> = (0..2048u32)
        .map(|variant| {
            let spelled: String = stem
                .chars()
                .enumerate()
                .map(|(position, letter)| {
                    let bit = letters.iter().position(|&at| at == position);
                    if bit.is_some_and(|bit| variant & (1 << bit) != 0) {
                        letter.to_ascii_uppercase()
                    } else {
                        letter
                    }
                })
                .collect();
            format!("character/{spelled}")
        })
        .collect();
    assert_eq!(
        spellings
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        2048
    );
    let client = &client();
    let url = &format!("{}/v1/chat/completions", gateway.base_url());
    let status = |model: String| async move {
        let response = client
            .post(url)
            .json(&request(&model, "hi"))
            .send()
            .await
            .unwrap();
        response.status().as_u16()
    };
    let statuses: Vec<(u16, u16)> = futures::stream::iter(spellings.into_iter().enumerate())
        .map(|(variant, spelled)| async move {
            (
                status(spelled).await,
                status(format!("unknown-{variant}")).await,
            )
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(
        statuses.iter().all(|pair| *pair == (200, 404)),
        "{statuses:?}"
    );
    let after = get(gateway, "/metrics").await.text;
    let series = |text: &str| {
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| {
                line.rsplit_once(' ')
                    .map_or(line, |(name, _)| name)
                    .to_owned()
            })
            .collect::<std::collections::BTreeSet<_>>()
    };
    let added: Vec<_> = series(&after)
        .difference(&series(&before))
        .cloned()
        .collect();
    assert!(added.is_empty(), "new series: {added:#?}");
    assert!(
        after.contains("route=\"character/French Tutor\""),
        "labelled with the character's own name"
    );
}

/// `count` tools with 20 patterned properties each (about 1.4 KB of JSON per tool).
fn heavy_tools(count: usize, tag: &str) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|index| {
            (
                format!("p{index}"),
                json!({"type": "string", "pattern": "^[a-z]+$", "enum": ["a", "b", "c"]}),
            )
        })
        .collect();
    (0..count)
        .map(|index| {
            json!({"type": "function", "function": {"name": format!("{tag}_{index}"),
                "description": "x", "parameters": {"type": "object", "properties": properties}}})
        })
        .collect()
}

/// A gauge's value in a Prometheus text.
fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
}

/// Kept tool lists are bounded by the memory they hold, not by their count: 60 distinct
/// lists of 60 KB (about 3 MB each compiled) leave at most 128 MiB kept.
#[tokio::test]
async fn kept_tool_lists_are_bounded_by_their_memory() {
    let gateway = start("", &[]).await;
    for list in 0..60 {
        let mut body = request("no-such-route", "hi");
        body["tools"] = heavy_tools(42, &format!("list{list}"));
        assert!(body["tools"].to_string().len() > 55_000);
        assert_eq!(post(&gateway, &body).await.status, 404);
    }
    let metrics = get(&gateway, "/metrics").await.text;
    let kept = gauge(&metrics, "gateway_tool_lists_kept_bytes").expect("the kept bytes gauge");
    assert!(kept <= 128.0 * 1024.0 * 1024.0, "{kept}");
    assert!(
        kept >= 100.0 * 1024.0 * 1024.0,
        "lists are kept up to the bound: {kept}"
    );
    gateway.stop().await.unwrap();
}

/// A list near the body limit compiles off the request-serving threads: on a gateway with
/// one worker thread, other requests are answered while it compiles (the gauge of lists
/// compiling is read at 1 through `/metrics`, which could not answer otherwise).
#[test]
fn a_huge_tool_list_does_not_stall_other_requests() {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let gateway = server.block_on(start("", &[]));
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = gateway.base_url();
    client.block_on(async {
        let mut body = request("no-such-route", "hi");
        body["tools"] = heavy_tools(2400, "huge");
        let size = body.to_string().len();
        assert!((3_000_000..4 * 1024 * 1024).contains(&size), "{size}");
        let url = format!("{base}/v1/chat/completions");
        let mut huge = tokio::spawn(async move {
            reqwest::Client::new().post(url).json(&body).send().await.unwrap().status()
        });
        let metrics = reqwest::Client::new();
        let mut answered_while_compiling = false;
        loop {
            tokio::select! {
                status = &mut huge => {
                    assert_eq!(status.unwrap(), 404);
                    break;
                }
                text = async {
                    metrics.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap()
                } => {
                    if gauge(&text, "gateway_tool_lists_compiling") == Some(1.0) {
                        answered_while_compiling = true;
                    }
                }
            }
        }
        assert!(answered_while_compiling, "no request was answered while the list compiled");
    });
    server.block_on(gateway.stop()).unwrap();
}

/// The count of `gateway_requests_total` with these labels.
fn requests_total(metrics: &str, labels: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&format!("gateway_requests_total{{{labels}}} ")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Polls `/metrics` until the count reaches `expected` (or a generous bound passes).
async fn wait_for_count(
    gateway: &switchboard_server::RunningGateway,
    labels: &str,
    expected: f64,
) -> f64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let count = requests_total(&get(gateway, "/metrics").await.text, labels);
        if count >= expected || tokio::time::Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every request is logged and counted however it ends: 200 streams abandoned mid-answer
/// and a whole (non-streamed) answer abandoned while it was collected each count as
/// `client_closed`, and each cancels its backend request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_requests_are_logged_and_counted() {
    use tokio::io::AsyncWriteExt;
    let (whole, _whole_gate) = endless(1);
    let whole_backend = ScriptedServer::start(vec![whole]).await;
    let mut streams = Vec::new();
    let mut gates = Vec::new();
    for _ in 0..200 {
        let (reply, gate) = endless(1);
        streams.push(reply);
        gates.push(gate);
    }
    let streams_backend = ScriptedServer::start(streams).await;
    let gateway = start(
        "",
        &[
            route("abandoned-whole", "openai", &whole_backend.base, ""),
            route("abandoned-streams", "openai", &streams_backend.base, ""),
        ],
    )
    .await;

    let body = request("abandoned-whole", "hi").to_string();
    let mut socket = tokio::net::TcpStream::connect(gateway.address)
        .await
        .unwrap();
    socket
        .write_all(
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // Once the backend has the request, the client leaves without an answer.
    while whole_backend.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(socket);
    wait_for_hang_up(&whole_backend).await;
    let labels = "endpoint=\"chat_completions\",route=\"abandoned-whole\",status=\"client_closed\"";
    assert_eq!(wait_for_count(&gateway, labels, 1.0).await, 1.0);

    let clients = (0..200).map(|_| {
        let url = format!("{}/v1/chat/completions", gateway.base_url());
        tokio::spawn(async move {
            let mut response = client()
                .post(url)
                .json(&streaming(request("abandoned-streams", "hi")))
                .send()
                .await
                .unwrap();
            let first = response.chunk().await.unwrap().unwrap();
            assert!(String::from_utf8_lossy(&first).contains("xxxx"));
        })
    });
    for client in clients.collect::<Vec<_>>() {
        client.await.unwrap();
    }
    let labels =
        "endpoint=\"chat_completions\",route=\"abandoned-streams\",status=\"client_closed\"";
    assert_eq!(wait_for_count(&gateway, labels, 200.0).await, 200.0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while streams_backend.hung_up() < 200 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        streams_backend.hung_up(),
        200,
        "every backend request was closed"
    );
    gateway.stop().await.unwrap();
}
