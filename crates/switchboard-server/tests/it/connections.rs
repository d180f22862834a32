//! Connections replayed as the attacks that held them open: silent connections, trickled
//! headers, a body shorter than its `Content-Length`, idle keep-alive connections, a
//! declared body far past the limit, more connections than the cap; HTTP/2 beside
//! HTTP/1.1; and streams cut at the end of the shutdown grace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use switchboard_server::RunningGateway;
use switchboard_testkit::{OpenAiScript, ScriptedServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Timeouts of one second, so each attack is over quickly.
const QUICK: &str =
    "header_read_timeout_secs = 1\nbody_read_timeout_secs = 1\nidle_timeout_secs = 1";

/// Everything the server sends until it closes the connection; fails if it is still open
/// after `bound` (far longer than the timeouts under test).
async fn read_until_closed(socket: &mut TcpStream, bound: Duration) -> String {
    let mut received = Vec::new();
    let closed = tokio::time::timeout(bound, async {
        let mut buffer = [0u8; 4096];
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => received.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&received).into_owned();
    assert!(
        closed.is_ok(),
        "the connection is still open; received: {text}"
    );
    text
}

async fn connect(gateway: &RunningGateway) -> TcpStream {
    TcpStream::connect(gateway.address).await.unwrap()
}

#[tokio::test]
async fn silent_and_trickling_connections_are_closed() {
    let gateway = start(QUICK, &[]).await;
    // Connects and sends nothing.
    let mut silent = connect(&gateway).await;
    // Sends half a request head and stops.
    let mut trickling = connect(&gateway).await;
    trickling
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    // Sends a whole request, reads the answer, and keeps the connection without using it.
    let mut idle = connect(&gateway).await;
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let bound = Duration::from_secs(10);
    assert_eq!(read_until_closed(&mut silent, bound).await, "");
    let answer = read_until_closed(&mut trickling, bound).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    let answer = read_until_closed(&mut idle, bound).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"status\":\"ok\""), "{answer}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_body_shorter_than_its_length_is_a_408() {
    let gateway = start(QUICK, &[]).await;
    let mut socket = connect(&gateway).await;
    socket
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\":")
        .await
        .unwrap();
    let answer = read_until_closed(&mut socket, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"body_timeout\""), "{answer}");
    assert!(answer.contains("within 1 s"), "{answer}");
    gateway.stop().await.unwrap();
}

/// A declared body far past the limit is refused from its headers alone: the client never
/// has to send it (nothing is sent here, and the answer still comes).
#[tokio::test]
async fn a_declared_length_past_the_limit_is_a_413_at_once() {
    let gateway = start("max_body_bytes = 1000", &[]).await;
    let mut socket = connect(&gateway).await;
    socket
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 104857600\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buffer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&buffer[..read]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("request_too_large"), "{answer}");
    gateway.stop().await.unwrap();
}

/// Past `max_connections`, a new connection waits to be accepted; it is served as soon as
/// one of the open ones closes.
#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let gateway = start("max_connections = 4\nidle_timeout_secs = 60", &[]).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect(&gateway).await);
    }
    let url = format!("{}/healthz", gateway.base_url());
    let waiting = tokio::spawn(async move { client().get(url).send().await.unwrap().status() });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "a fifth connection is not served");
    held.pop();
    let status = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert_eq!(status, 200);
    drop(held);
    gateway.stop().await.unwrap();
}

/// HTTP/2 with prior knowledge: several requests, a stream among them, multiplexed over
/// one connection, answered exactly as over HTTP/1.1.
#[tokio::test]
async fn http2_with_prior_knowledge_multiplexes_requests() {
    let answer = OpenAiScript::new()
        .text("Hello there.")
        .finish("stop", 2, 3);
    let backend = ScriptedServer::start(vec![answer.reply(), answer.reply()]).await;
    let gateway = one_route("openai", &backend.base, "").await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let url = format!("{}/v1/chat/completions", gateway.base_url());
    let whole = h2.post(&url).json(&request("qwen", "hi")).send();
    let streamed = h2.post(&url).json(&streaming(request("qwen", "hi"))).send();
    let health = h2.get(format!("{}/healthz", gateway.base_url())).send();
    let (whole, streamed, health) = tokio::join!(whole, streamed, health);
    let (whole, streamed, health) = (whole.unwrap(), streamed.unwrap(), health.unwrap());
    for response in [&whole, &streamed, &health] {
        assert_eq!(response.version(), reqwest::Version::HTTP_2);
        assert_eq!(response.status(), 200);
    }
    let whole: serde_json::Value = whole.json().await.unwrap();
    let (chunks, done) = parse_sse(&streamed.text().await.unwrap());
    assert!(done);
    assert_eq!(
        without_ids(accumulate(&chunks)),
        without_ids(summary(&whole))
    );
    assert_eq!(whole["choices"][0]["message"]["content"], "Hello there.");
    gateway.stop().await.unwrap();
}

/// A stream still running when the shutdown grace ends gets the API's error event with
/// `server_shutting_down`, then the connection closes.
#[tokio::test]
async fn streams_cut_at_the_end_of_the_grace_get_an_error_event() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("The beginning")
        .text(" and the rest.")
        .finish("stop", 1, 1)
        .reply();
    reply.gate = Some((1, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![reply]).await;
    let gateway = start(
        "shutdown_grace_secs = 1",
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let mut response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(&streaming(request("qwen", "hi")))
        .send()
        .await
        .unwrap();
    let mut received =
        String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    assert!(received.contains("The beginning"), "{received}");
    let stopping = tokio::spawn(gateway.stop());
    while let Ok(Some(bytes)) = response.chunk().await {
        received.push_str(&String::from_utf8_lossy(&bytes));
    }
    let last = received.trim_end().rsplit("\n\n").next().unwrap();
    let event: serde_json::Value =
        serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(event["error"]["code"], "server_shutting_down", "{received}");
    assert!(!received.contains("[DONE]"));
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("stop() returns after the grace")
        .unwrap()
        .unwrap();
}

/// A chunk announced as 2^64−1 bytes reserves nothing (hyper reads chunks as they come and
/// does not expose their declared size): what arrives counts against `max_body_bytes`, and a
/// client that then sends nothing more gets the body timeout, not an open connection.
#[tokio::test]
async fn a_chunk_of_2_64_bytes_reserves_nothing_and_ends_at_the_body_timeout() {
    let gateway = start(&format!("{QUICK}\nmax_body_bytes = 1024"), &[]).await;
    let head = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffff\r\n";
    // Past the limit: 413 at once.
    let mut over = connect(&gateway).await;
    over.write_all(head.as_bytes()).await.unwrap();
    over.write_all(&[b' '; 2048]).await.unwrap();
    let answer = read_until_closed(&mut over, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Then silent: the body deadline.
    let mut silent = connect(&gateway).await;
    silent.write_all(head.as_bytes()).await.unwrap();
    silent.write_all(b"{").await.unwrap();
    let answer = read_until_closed(&mut silent, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    gateway.stop().await.unwrap();
}
