//! The 2025-11-25 sessions of `/mcp` under attack: each is its key's alone (another key is
//! told it does not exist), they are bounded overall and per key (503 and 429), opening one
//! and holding its GET stream count against the key's limits, and a GET stream that
//! carries nothing ends, so such streams cannot hold every connection the gateway accepts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::mcp::{LEGACY, key};

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::RunningGateway;

const ALICE: &str = "sk-sb-sessions-alice-9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0L";
const BOB: &str = "sk-sb-sessions-bob-0Zx9Cv8Bn7Mm6Lk5Jh4Gf3Ds2Aa1Q";

/// An answer of `/mcp`: its status, session id and body.
struct Sent {
    status: u16,
    session: Option<String>,
    text: String,
}

async fn send(
    gateway: &RunningGateway,
    method: reqwest::Method,
    key: Option<&str>,
    session: Option<&str>,
    message: Option<Value>,
) -> Sent {
    let mut request = client()
        .request(method, format!("{}/mcp", gateway.base_url()))
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY);
    }
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(message) = message {
        request = request.json(&message);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|id| id.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    Sent {
        status,
        session,
        text,
    }
}

/// `initialize` (and `notifications/initialized` when it opened one): the session's id, or
/// the refusal.
async fn open(gateway: &RunningGateway, key: Option<&str>) -> Result<String, Sent> {
    let opened = send(
        gateway,
        reqwest::Method::POST,
        key,
        None,
        Some(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        ),
    )
    .await;
    let Some(session) = opened.session.clone().filter(|_| opened.status == 200) else {
        return Err(opened);
    };
    let done = send(
        gateway,
        reqwest::Method::POST,
        key,
        Some(&session),
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.text);
    Ok(session)
}

async fn list(gateway: &RunningGateway, key: Option<&str>, session: &str) -> Sent {
    send(
        gateway,
        reqwest::Method::POST,
        key,
        Some(session),
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})),
    )
    .await
}

/// A session's GET stream, as a client that listens holds it.
async fn listen(gateway: &RunningGateway, key: Option<&str>, session: &str) -> reqwest::Response {
    let mut request = client()
        .get(format!("{}/mcp", gateway.base_url()))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LEGACY);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap()
}

fn keys(alice: &str, bob: &str) -> String {
    format!("{}{}", key("alice", ALICE, alice), key("bob", BOB, bob))
}

/// A gateway with `settings` (top-level lines, keys last).
async fn gateway(settings: &str) -> RunningGateway {
    start(
        settings,
        &[route("qwen", "openai", "http://127.0.0.1:9", "")],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_its_keys_alone() {
    let gateway = gateway(&keys("", "")).await;
    let session = open(&gateway, Some(ALICE))
        .await
        .map_err(|sent| sent.text)
        .unwrap();
    assert_eq!(list(&gateway, Some(ALICE), &session).await.status, 200);

    // Bob holds Alice's session id: to him it does not exist, whatever he does with it.
    let used = list(&gateway, Some(BOB), &session).await;
    let stream = listen(&gateway, Some(BOB), &session)
        .await
        .status()
        .as_u16();
    let deleted = send(
        &gateway,
        reqwest::Method::DELETE,
        Some(BOB),
        Some(&session),
        None,
    )
    .await;
    eprintln!(
        "another key with the session id: tools/list {}, GET {stream}, DELETE {}",
        used.status, deleted.status
    );
    assert_eq!(used.status, 404, "{}", used.text);
    assert_eq!(stream, 404);
    assert_eq!(deleted.status, 404, "{}", deleted.text);
    // An id nobody opened is answered the same.
    assert_eq!(
        list(&gateway, Some(BOB), "no-such-session").await.text,
        used.text
    );

    // Alice's session is untouched, and hers to end.
    assert_eq!(list(&gateway, Some(ALICE), &session).await.status, 200);
    let ended = send(
        &gateway,
        reqwest::Method::DELETE,
        Some(ALICE),
        Some(&session),
        None,
    )
    .await;
    assert_eq!(ended.status, 202, "{}", ended.text);
    assert_eq!(list(&gateway, Some(ALICE), &session).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_overall_and_per_key() {
    let gateway = gateway(&format!(
        "mcp_max_sessions = 3\nmcp_max_sessions_per_key = 2\n{}",
        keys("", "")
    ))
    .await;
    let mut alices = Vec::new();
    let mut refused = None;
    for _ in 0..5 {
        match open(&gateway, Some(ALICE)).await {
            Ok(session) => alices.push(session),
            Err(sent) => {
                refused = Some(sent);
                break;
            }
        }
    }
    eprintln!(
        "sessions one key opened, of 5 tried, under a bound of 2: {}",
        alices.len()
    );
    let refused = refused.expect("a third session of one key was opened");
    assert_eq!(alices.len(), 2);
    assert_eq!(refused.status, 429, "{}", refused.text);
    let error: Value = serde_json::from_str(&refused.text).unwrap();
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("most MCP sessions (2)"),
        "{error}"
    );

    // Bob takes the last place; past it, the endpoint is full for everyone.
    let bob = open(&gateway, Some(BOB))
        .await
        .map_err(|sent| sent.text)
        .unwrap();
    let full = open(&gateway, Some(BOB))
        .await
        .expect_err("a fourth session was opened");
    assert_eq!(full.status, 503, "{}", full.text);
    assert!(full.text.contains("most sessions (3)"), "{}", full.text);

    // An ended session gives its place back.
    let ended = send(
        &gateway,
        reqwest::Method::DELETE,
        Some(ALICE),
        Some(&alices[0]),
        None,
    )
    .await;
    assert_eq!(ended.status, 202);
    let again = open(&gateway, Some(ALICE))
        .await
        .map_err(|sent| sent.text)
        .unwrap();
    assert_eq!(list(&gateway, Some(ALICE), &again).await.status, 200);
    assert_eq!(list(&gateway, Some(BOB), &bob).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_session_and_holding_its_stream_count_against_the_keys_limits() {
    let gateway = gateway(&keys("requests_per_minute = 1", "max_concurrent = 1")).await;
    // One request a minute: one session, then 429.
    let mut opened = 0;
    let mut last = None;
    for _ in 0..20 {
        match open(&gateway, Some(ALICE)).await {
            Ok(_) => opened += 1,
            Err(sent) => last = Some(sent),
        }
    }
    eprintln!("sessions opened of 20 by a key of requests_per_minute = 1: {opened}");
    assert_eq!(opened, 1);
    let last = last.unwrap();
    assert_eq!(last.status, 429, "{}", last.text);
    assert!(last.text.contains("1 requests per minute"), "{}", last.text);

    // One request at a time: a GET stream is one while it is open.
    let first = open(&gateway, Some(BOB))
        .await
        .map_err(|sent| sent.text)
        .unwrap();
    let second = open(&gateway, Some(BOB))
        .await
        .map_err(|sent| sent.text)
        .unwrap();
    let held = listen(&gateway, Some(BOB), &first).await;
    assert_eq!(held.status(), 200);
    let mut streams = vec![held];
    for _ in 0..20 {
        let another = listen(&gateway, Some(BOB), &second).await;
        if another.status() == 200 {
            streams.push(another);
        } else {
            assert_eq!(another.status(), 429);
        }
    }
    eprintln!(
        "GET streams held at once by a key of max_concurrent = 1: {}",
        streams.len()
    );
    assert_eq!(streams.len(), 1);
    drop(streams);
    // Its slot comes back once the stream is closed.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let another = listen(&gateway, Some(BOB), &second).await;
        if another.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_get_streams_end_so_they_cannot_hold_every_connection() {
    const STREAMS: usize = 40;
    let gateway = gateway("max_connections = 32\nidle_timeout_secs = 2").await;
    let mut sessions = Vec::new();
    for _ in 0..STREAMS {
        sessions.push(
            open(&gateway, None)
                .await
                .map_err(|sent| sent.text)
                .unwrap(),
        );
    }
    // Each stream on a connection of its own, held open and never read.
    let base = gateway.base_url();
    let mut held = Vec::new();
    for session in sessions {
        let url = format!("{base}/mcp");
        held.push(tokio::spawn(async move {
            let stream = reqwest::Client::new()
                .get(url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", LEGACY)
                .send()
                .await;
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(stream);
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let began = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        reqwest::Client::new().get(format!("{base}/healthz")).send(),
    )
    .await;
    let waited = began.elapsed();
    for task in held {
        task.abort();
    }
    eprintln!("/healthz behind {STREAMS} GET streams and max_connections = 32: {waited:?}");
    let health = health.expect("/healthz waited 30 s").unwrap();
    assert_eq!(health.status(), 200);
    assert!(waited < Duration::from_secs(20), "{waited:?}");
}
