//! Access control as an operator runs it: `switchboard key new`, `serve` refusing a public
//! address without keys (and starting with the override), and two `serve` processes sharing
//! one real Redis server that enforce one budget together, continue each other's stored
//! Responses conversations, and keep serving when Redis dies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{PROCESS_TIMEOUT, Served, characters, switchboard};
use switchboard_testkit::{OpenAiScript, RedisServer, Reply, ScriptedServer};

/// `switchboard key new NAME`: the key and the `[[key]]` block.
fn new_key(name: &str) -> (String, String) {
    let output = switchboard().args(["key", "new", name]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let key = stdout.lines().next().unwrap().to_owned();
    let block = &stdout[stdout.find("[[key]]").unwrap()..];
    assert!(!block.contains(&key), "the block holds no secret: {stdout}");
    (key, block.to_owned())
}

/// Starts `serve` with this configuration file and waits until it listens.
fn serve(config: &Path, listen: &str) -> Served {
    Served::start(config, listen, &[])
}

/// Runs `serve` expecting it to exit by itself.
fn serve_and_exit(config: &Path, listen: &str) -> Output {
    let mut child = switchboard()
        .args(["serve", "--config"])
        .arg(config)
        .args(["--listen", listen])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PROCESS_TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "serve kept running:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

async fn chat(served: &Served, key: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.base))
        .bearer_auth(key)
        .json(
            &serde_json::json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap()
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn key_new_refuses_a_name_logs_could_not_carry() {
    let output = switchboard()
        .args(["key", "new", "two words"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"two words\" cannot name a key"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_a_public_address_without_keys_and_the_override_starts_it() {
    let dir = tempfile::tempdir().unwrap();
    let routes = "[[route]]\nname = \"qwen\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    let config = write_config(
        dir.path(),
        &format!("characters = \"{}\"\n{routes}", characters()),
    );
    let output = serve_and_exit(&config, "0.0.0.0:0");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without keys")
            && stderr.contains("allow_unauthenticated = true"),
        "{stderr}"
    );

    let config = write_config(
        dir.path(),
        &format!(
            "characters = \"{}\"\nallow_unauthenticated = true\n{routes}",
            characters()
        ),
    );
    let served = serve(&config, "0.0.0.0:0");
    let health = reqwest::get(format!("{}/healthz", served.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(
        served
            .log()
            .contains("without keys (allow_unauthenticated = true)"),
        "{}",
        served.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_enforce_one_budget_through_redis_and_keep_serving_when_it_dies() {
    let mut redis = RedisServer::start();
    // Each replica's start-up probe takes a connection too.
    let backend = ScriptedServer::start(
        (0..12)
            .map(|_| {
                OpenAiScript::new()
                    .text("Hello.")
                    .finish("stop", 1, 1)
                    .reply()
            })
            .collect(),
    )
    .await;
    let (key, block) = new_key("replicas");
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "characters = \"{}\"\nstate = \"{}\"\n{block}requests_per_minute = 3\n\n[[route]]\nname = \"qwen\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\n",
            characters(),
            redis.url,
            backend.base
        ),
    );
    let a = serve(&config, "127.0.0.1:0");
    let b = serve(&config, "127.0.0.1:0");
    assert!(
        a.log()
            .contains("rate limits are shared through Redis at 127.0.0.1:"),
        "{}",
        a.log()
    );

    let mut remaining = Vec::new();
    for served in [&a, &b, &a] {
        let answer = chat(served, &key).await;
        assert_eq!(answer.status(), 200);
        remaining.push(
            answer.headers()["x-ratelimit-remaining-requests"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(
        remaining,
        ["2", "1", "0"],
        "one budget across both replicas"
    );
    for served in [&b, &a] {
        let refused = chat(served, &key).await;
        assert_eq!(refused.status(), 429);
        assert!(refused.headers().contains_key("retry-after"));
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
    }
    let unknown = chat(&a, "sk-sb-not-a-key-of-this-gateway-at-all-0000").await;
    assert_eq!(unknown.status(), 401);

    // Redis dies: both replicas keep answering (fail open), and say so.
    redis.kill();
    for served in [&a, &b] {
        let answer = chat(served, &key).await;
        assert_eq!(answer.status(), 200, "{}", served.log());
    }
    let metrics = reqwest::get(format!("{}/metrics", a.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let errors: f64 = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("gateway_rate_limit_state_errors_total{operation=\"admit\"} ")
        })
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no state error count:\n{metrics}"));
    assert!(errors >= 1.0, "{metrics}");
    assert!(
        metrics.contains("gateway_rate_limited_total{key=\"replicas\",limit=\"requests\"} 1"),
        "{metrics}"
    );
    let log = a.log();
    assert!(
        log.contains("is unreachable") && log.contains("fail open"),
        "{log}"
    );
    assert!(
        log.contains("replicas"),
        "requests are logged with the key's name:\n{log}"
    );
    for text in [a.log(), b.log(), metrics] {
        assert!(!text.contains(&key), "the key leaked:\n{text}");
    }
}

/// `POST /v1/responses` with `key`.
async fn respond(served: &Served, key: &str, body: serde_json::Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/v1/responses", served.base))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stored_through_one_replica_is_continued_through_the_other() {
    let mut redis = RedisServer::start();
    // Each replica's start-up probe asks too: answers are chosen by looking at the request.
    let backend = ScriptedServer::responding(|request| {
        if !request.head.starts_with("post ") {
            return Reply::json(200, &serde_json::json!({"object": "list", "data": []}));
        }
        let turns = request.body["messages"].as_array().map_or(0, Vec::len);
        let text = if turns > 1 {
            "Still sunny."
        } else {
            "Paris is sunny."
        };
        OpenAiScript::new().text(text).finish("stop", 5, 4).reply()
    })
    .await;
    let (key, block) = new_key("owner");
    let (other_key, other_block) = new_key("other");
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "characters = \"{}\"\nstate = \"{}\"\n{block}\n{other_block}\n[[route]]\nname = \"qwen\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\n",
            characters(),
            redis.url,
            backend.base
        ),
    );
    let a = serve(&config, "127.0.0.1:0");
    let b = serve(&config, "127.0.0.1:0");

    let first = respond(
        &a,
        &key,
        serde_json::json!({"model": "qwen", "input": "Weather in Paris?"}),
    )
    .await;
    assert_eq!(first.status(), 200);
    let first: serde_json::Value = first.json().await.unwrap();
    let id = first["id"].as_str().unwrap().to_owned();

    // Another key learns nothing of it, on either replica.
    let hidden = reqwest::Client::new()
        .get(format!("{}/v1/responses/{id}", b.base))
        .bearer_auth(&other_key)
        .send()
        .await
        .unwrap();
    assert_eq!(hidden.status(), 404);

    let second = respond(
        &b,
        &key,
        serde_json::json!({"model": "qwen", "input": "And tomorrow?", "previous_response_id": id}),
    )
    .await;
    assert_eq!(second.status(), 200, "{}", b.log());
    let second: serde_json::Value = second.json().await.unwrap();
    assert_eq!(second["output"][0]["content"][0]["text"], "Still sunny.");
    let asked: Vec<_> = backend
        .requests()
        .into_iter()
        .filter(|request| request.head.starts_with("post "))
        .collect();
    let sent = &asked[1].body["messages"];
    let texts: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        ["Weather in Paris?", "Paris is sunny.", "And tomorrow?"],
        "replica b sent the conversation replica a kept: {sent}"
    );

    // Without Redis a stored response cannot be read: 503, naming the cause.
    redis.kill();
    let unavailable = reqwest::Client::new()
        .get(format!("{}/v1/responses/{id}", a.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(unavailable.status(), 503);
    let body: serde_json::Value = unavailable.json().await.unwrap();
    assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("Redis at 127.0.0.1:"), "{message}");
    assert!(!message.contains(&key), "{message}");
}
