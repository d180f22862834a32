//! Several `switchboard serve` processes as production runs them: behind a real nginx
//! (round-robin, no buffering, a request tried elsewhere only when connecting failed), one
//! `redis-server` shared, a scripted backend whose streams take their time. The test plays
//! the health checker open-source nginx lacks: it polls each replica's `/readyz` and takes
//! a replica out of nginx's list while it answers 503. What must hold: readiness turns 503
//! at SIGTERM while the replica keeps serving; limits and stored responses hold across
//! replicas; a rolling restart under streamed load loses no request and cuts no stream.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::mcp::free_port;
use switchboard_testkit::{Captured, Nginx, OpenAiScript, RedisServer, ScriptedServer};

use crate::common::{Served, characters};

/// A backend whose streamed answers take `pieces × pace`: a tool call in fragments when
/// the request offers tools, words otherwise; a request whose last message says `quick`
/// gets its answer at once; anything else (the start-up probe) a short answer.
async fn paced_backend(pieces: usize, pace: Duration) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let last = request.body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .map(|message| message["content"].to_string())
            .unwrap_or_default();
        if last.contains("quick") || request.body.is_null() {
            return OpenAiScript::new()
                .text("Quick.")
                .finish("stop", 1, 1)
                .reply();
        }
        let script = if request.body["tools"].is_array() {
            let fragments: Vec<String> = (0..pieces)
                .map(|piece| match piece {
                    0 => "{\"city\": \"".to_owned(),
                    last if last + 1 == pieces => "Paris\"}".to_owned(),
                    _ => "".to_owned(),
                })
                .filter(|fragment| !fragment.is_empty())
                .collect();
            let fragments: Vec<&str> = fragments.iter().map(String::as_str).collect();
            (0..pieces)
                .fold(OpenAiScript::new(), |script, _| script.text(""))
                .tool_call("call_1", "weather", &fragments)
                .finish("tool_calls", 5, 5)
        } else {
            (0..pieces)
                .fold(OpenAiScript::new(), |script, piece| {
                    script.text(&format!("word{piece} "))
                })
                .finish("stop", 5, 5)
        };
        script.reply().paced(pace)
    })
    .await
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, format!("characters = \"{}\"\n{text}", characters())).unwrap();
    path
}

fn route(backend: &ScriptedServer) -> String {
    format!(
        "[[route]]\nname = \"qwen\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\n",
        backend.base
    )
}

fn streamed(content: &str, tools: bool) -> Value {
    let mut body = json!({
        "model": "qwen",
        "stream": true,
        "messages": [{"role": "user", "content": content}],
    });
    if tools {
        body["tools"] = json!([{"type": "function", "function": {
            "name": "weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }}]);
    }
    body
}

/// What a streamed request came to: its status and its whole body.
async fn stream_whole(
    client: &reqwest::Client,
    base: &str,
    body: &Value,
) -> Result<String, String> {
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .map_err(|error| format!("request failed: {error}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|error| format!("stream broke ({status}): {error}"))?;
    if status != 200 {
        return Err(format!("{status}: {text}"));
    }
    if !text.trim_end().ends_with("data: [DONE]") || text.contains("\"error\"") {
        return Err(format!("cut or failed stream: {text}"));
    }
    Ok(text)
}

async fn readiness(client: &reqwest::Client, base: &str) -> Option<u16> {
    client
        .get(format!("{base}/readyz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()
        .map(|response| response.status().as_u16())
}

async fn wait_ready(client: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while readiness(client, base).await != Some(200) {
        assert!(Instant::now() < deadline, "{base} never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGTERM with 20 ten-second streams under way: `/readyz` answers 503 at once while
/// `/healthz` stays 200 and the replica still serves a request that reaches it; every
/// stream finishes whole, and then the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_turns_503_at_sigterm_while_twenty_streams_finish_whole() {
    let backend = paced_backend(10, Duration::from_secs(1)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("shutdown_grace_secs = 40\n{}", route(&backend)),
    );
    let mut served = Served::start(&config, "127.0.0.1:0", &[("RUST_LOG", "info")]);
    let client = reqwest::Client::new();
    wait_ready(&client, &served.base).await;

    let finished = Arc::new(AtomicUsize::new(0));
    let streams: Vec<_> = (0..20)
        .map(|_| {
            let client = client.clone();
            let base = served.base.clone();
            let finished = Arc::clone(&finished);
            tokio::spawn(async move {
                let text = stream_whole(&client, &base, &streamed("tell a story", false)).await;
                finished.fetch_add(1, Ordering::SeqCst);
                text
            })
        })
        .collect();
    // Every stream has begun: the backend has them all.
    let deadline = Instant::now() + Duration::from_secs(20);
    let begun = || {
        backend
            .requests()
            .iter()
            .filter(|request| request.body.to_string().contains("tell a story"))
            .count()
    };
    while begun() < 20 {
        assert!(Instant::now() < deadline, "the streams did not all begin");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let signalled = Instant::now();
    served.signal("TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(readiness(&client, &served.base).await, Some(503));
    let health = client
        .get(format!("{}/healthz", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // Work that still reaches a draining replica is served, not refused.
    let late = stream_whole(&client, &served.base, &streamed("quick", false)).await;
    assert!(late.is_ok(), "{late:?}");
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the streams run on");

    for stream in streams {
        let text = stream
            .await
            .unwrap()
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(text.contains("word9"), "{text}");
    }
    let exit = tokio::task::spawn_blocking(move || {
        let code = served.exit_code();
        (code, served.log())
    })
    .await
    .unwrap();
    assert_eq!(exit.0, Some(0), "{}", exit.1);
    let took = signalled.elapsed();
    eprintln!("drain: 20 streams finished whole; exited {took:?} after SIGTERM");
    assert!(exit.1.contains("/readyz answers 503"), "{}", exit.1);
}

/// Three replicas sharing one Redis behind nginx.
struct Fleet {
    redis: RedisServer,
    backend: ScriptedServer,
    config: PathBuf,
    ports: Vec<u16>,
    replicas: Vec<Option<Served>>,
    nginx: Nginx,
    _dir: tempfile::TempDir,
}

impl Fleet {
    async fn start(extra: &str, env: &[(&str, &str)], backend: ScriptedServer) -> Self {
        let redis = RedisServer::start();
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(
            dir.path(),
            &format!(
                "state = \"{}\"\nshutdown_grace_secs = 30\n{extra}\n{}",
                redis.url,
                route(&backend)
            ),
        );
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let replicas = ports
            .iter()
            .map(|port| Some(Served::start(&config, &format!("127.0.0.1:{port}"), env)))
            .collect();
        let nginx = Nginx::start(&upstreams(&ports));
        Self {
            redis,
            backend,
            config,
            ports,
            replicas,
            nginx,
            _dir: dir,
        }
    }

    fn base(&self, replica: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[replica])
    }
}

fn upstreams(ports: &[u16]) -> Vec<String> {
    ports
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect()
}

/// Limits hold across replicas: one budget, whichever replica nginx picks, and spent on
/// every replica alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_nginx_hold_one_budget() {
    let key = "sk-sb-fleet-7Hq2Lm9xK4pW8rT3vY6zB1nC5dF0gJ2";
    let busy = "sk-sb-busy-4Wm8Qr2Tz6Lp9Xv3Bn7Hc1Kd5Yf0Gj8";
    let fleet = Fleet::start(
        "[[key]]\nname = \"fleet\"\nkey_env = \"FLEET_KEY\"\nrequests_per_minute = 6\n[[key]]\nname = \"busy\"\nkey_env = \"BUSY_KEY\"\nmax_concurrent = 2\n",
        &[("FLEET_KEY", key), ("BUSY_KEY", busy)],
        paced_backend(10, Duration::from_millis(200)).await,
    )
    .await;
    let client = reqwest::Client::new();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
    }
    // Nine requests through nginx's round-robin: three to each replica, six in budget.
    let mut statuses = Vec::new();
    for _ in 0..9 {
        let response = client
            .post(format!("{}/v1/chat/completions", fleet.nginx.base))
            .bearer_auth(key)
            .json(&json!({"model": "qwen", "messages": [{"role": "user", "content": "quick"}]}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        6,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|status| **status == 429).count(),
        3,
        "{statuses:?}"
    );
    // The budget is spent on every replica, asked directly.
    for replica in 0..3 {
        let refused = client
            .post(format!("{}/v1/chat/completions", fleet.base(replica)))
            .bearer_auth(key)
            .json(&json!({"model": "qwen", "messages": [{"role": "user", "content": "quick"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 429, "replica {replica}");
    }
    // Concurrency is one count too: of six two-second streams spread by nginx over the
    // three replicas, two run and four are refused.
    let streams: Vec<_> = (0..6)
        .map(|_| {
            let client = client.clone();
            let base = fleet.nginx.base.clone();
            tokio::spawn(async move {
                client
                    .post(format!("{base}/v1/chat/completions"))
                    .bearer_auth(busy)
                    .json(&streamed("tell a story", false))
                    .send()
                    .await
                    .unwrap()
            })
        })
        .collect();
    // Every answer is held open until all are in: a stream let go would free its slot.
    let mut answers = Vec::new();
    for stream in streams {
        answers.push(stream.await.unwrap());
    }
    let statuses: Vec<u16> = answers
        .iter()
        .map(|answer| answer.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|status| **status == 429).count(),
        4,
        "{statuses:?}"
    );
}

/// A stored response made on one replica continues on each of the others: read, its input
/// items listed, continued with `previous_response_id`, and deleted from a third.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stored_on_one_replica_continues_on_the_others() {
    let fleet = Fleet::start("", &[], paced_backend(2, Duration::from_millis(10)).await).await;
    let client = reqwest::Client::new();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
    }
    let stored: Value = client
        .post(format!("{}/v1/responses", fleet.base(0)))
        .json(&json!({"model": "qwen", "input": "quick: remember the word walnut", "store": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = stored["id"].as_str().unwrap().to_owned();
    for replica in [1, 2] {
        let read = client
            .get(format!("{}/v1/responses/{id}", fleet.base(replica)))
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 200, "replica {replica}");
        let items: Value = client
            .get(format!(
                "{}/v1/responses/{id}/input_items",
                fleet.base(replica)
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(items.to_string().contains("walnut"), "{items}");
    }
    let continued = client
        .post(format!("{}/v1/responses", fleet.base(1)))
        .json(&json!({"model": "qwen", "input": "quick: which word?", "previous_response_id": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(continued.status(), 200);
    let last = fleet.backend.requests().pop().unwrap();
    assert!(last.body.to_string().contains("walnut"), "{}", last.body);
    let deleted = client
        .delete(format!("{}/v1/responses/{id}", fleet.base(2)))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let gone = client
        .get(format!("{}/v1/responses/{id}", fleet.base(0)))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
}

/// Each replica in turn gets SIGTERM, drains, exits 0 and starts again, while 20 clients
/// keep streamed requests with tools going through nginx for a minute: not one fails, not
/// one stream is cut. The test is the health checker: a replica answering 503 at
/// `/readyz` leaves nginx's list, and comes back once it answers 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_streamed_load_loses_nothing() {
    let mut fleet =
        Fleet::start("", &[], paced_backend(10, Duration::from_millis(150)).await).await;
    let client = reqwest::Client::new();
    // A connection per request: a keep-alive connection nginx closes as it reloads would
    // fail a request between the client and nginx, which is not what this test measures.
    let load = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
    }
    let until = Instant::now() + Duration::from_secs(60);
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let done = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let client = load.clone();
            let base = fleet.nginx.base.clone();
            let failures = Arc::clone(&failures);
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                while Instant::now() < until {
                    match stream_whole(&client, &base, &streamed("weather in Paris?", true)).await {
                        Ok(text) if text.contains("Paris") => {
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(text) => failures.lock().unwrap().push(format!("no call: {text}")),
                        Err(error) => failures.lock().unwrap().push(error),
                    }
                }
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut restarts = 0;
    while Instant::now() + Duration::from_secs(15) < until || restarts < 3 {
        let replica = restarts % 3;
        let base = fleet.base(replica);
        fleet.replicas[replica].as_ref().unwrap().signal("TERM");
        // The health checker's probe sees the drain and takes the replica out.
        let deadline = Instant::now() + Duration::from_secs(10);
        while readiness(&client, &base).await != Some(503) {
            assert!(
                Instant::now() < deadline,
                "replica {replica} never said 503"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let others: Vec<u16> = (0..3)
            .filter(|other| *other != replica)
            .map(|other| fleet.ports[other])
            .collect();
        fleet.nginx.set_upstreams(&upstreams(&others));
        let mut old = fleet.replicas[replica].take().unwrap();
        let (code, log) = tokio::task::spawn_blocking(move || (old.exit_code(), old.log()))
            .await
            .unwrap();
        assert_eq!(code, Some(0), "{log}");
        let config = fleet.config.clone();
        let listen = format!("127.0.0.1:{}", fleet.ports[replica]);
        fleet.replicas[replica] = Some(
            tokio::task::spawn_blocking(move || {
                Served::start(&config, &listen, &[("RUST_LOG", "info")])
            })
            .await
            .unwrap(),
        );
        wait_ready(&client, &base).await;
        fleet.nginx.set_upstreams(&upstreams(&fleet.ports));
        restarts += 1;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    for task in clients {
        task.await.unwrap();
    }
    let failures = failures.lock().unwrap();
    let done = done.load(Ordering::SeqCst);
    eprintln!(
        "rolling restart: {restarts} restarts, {done} streams whole, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failed of {}: {:?}\nnginx: {}",
        failures.len(),
        done + failures.len(),
        &failures[..failures.len().min(5)],
        fleet.nginx.error_log()
    );
    assert!(done > 100, "only {done} streams in a minute");
}

/// A key added to the file and SIGHUP sent to every replica: every replica takes it. A
/// reload that fails on one leaves it running its previous configuration (the key still
/// works there) and says so in its log and its `/healthz`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_reaches_every_replica_and_one_that_fails_says_so() {
    let key = "sk-sb-added-3Rt8Yp2Lk6Vn9Qw4Zx7Cb1Mf5Hj0Dg8";
    let fleet = Fleet::start(
        "",
        &[("ADDED_KEY", key)],
        paced_backend(2, Duration::from_millis(10)).await,
    )
    .await;
    let client = reqwest::Client::new();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
    }
    let text = std::fs::read_to_string(&fleet.config).unwrap();
    std::fs::write(
        &fleet.config,
        format!("{text}\n[[key]]\nname = \"added\"\nkey_env = \"ADDED_KEY\"\n"),
    )
    .unwrap();
    let chat = |replica: usize, key: Option<&str>| {
        let mut request = client
            .post(format!("{}/v1/chat/completions", fleet.base(replica)))
            .json(&json!({"model": "qwen", "messages": [{"role": "user", "content": "quick"}]}));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    for replica in 0..3 {
        let served = fleet.replicas[replica].as_ref().unwrap();
        served.signal("HUP");
        served.wait_for_log("configuration reloaded", 1);
    }
    for replica in 0..3 {
        assert_eq!(chat(replica, None).await, 401, "replica {replica}");
        assert_eq!(chat(replica, Some(key)).await, 200, "replica {replica}");
    }

    std::fs::write(&fleet.config, "route = [[[ not toml").unwrap();
    let first = fleet.replicas[0].as_ref().unwrap();
    first.signal("HUP");
    first.wait_for_log("configuration not reloaded", 1);
    assert_eq!(
        chat(0, Some(key)).await,
        200,
        "the previous configuration runs"
    );
    let health: Value = client
        .get(format!("{}/healthz", fleet.base(0)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(
        health["reload"]
            .as_str()
            .unwrap()
            .contains("the previous configuration runs"),
        "{health}"
    );
    let other: Value = client
        .get(format!("{}/healthz", fleet.base(1)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(other["status"], "ok", "{other}");
}

/// An MCP client of the 2025-11-25 era, speaking to whichever replica it is pointed at.
struct McpSession {
    client: reqwest::Client,
    key: &'static str,
    id: String,
}

impl McpSession {
    /// One message to `base`'s `/mcp` in the session: the HTTP status and the message.
    async fn send(&self, base: &str, method: &str, params: Value) -> (u16, Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if !method.starts_with("notifications/") {
            message["id"] = json!(1);
        }
        let response = self
            .client
            .post(format!("{base}/mcp"))
            .bearer_auth(self.key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn open(client: &reqwest::Client, base: &str, key: &'static str) -> Self {
        let response = client
            .post(format!("{base}/mcp"))
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "replicas-test", "version": "1"}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        Self {
            client: client.clone(),
            key,
            id,
        }
    }

    /// The status of a `tools/list` in the session on each of `replicas`.
    async fn list_statuses(&self, fleet: &Fleet, replicas: std::ops::Range<usize>) -> Vec<u16> {
        let mut statuses = Vec::new();
        for replica in replicas {
            statuses.push(
                self.send(&fleet.base(replica), "tools/list", json!({}))
                    .await
                    .0,
            );
        }
        statuses
    }

    async fn delete(&self, base: &str) -> u16 {
        self.client
            .delete(format!("{base}/mcp"))
            .bearer_auth(self.key)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }
}

/// An MCP session opened on one replica is served by the others (listed, a tool called),
/// stays its key's alone on every replica, and a DELETE on a replica that never saw it
/// ends it on all; a stateless-era request works on whichever replica nginx picks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_opened_on_one_replica_is_served_by_all_and_deleted_everywhere() {
    const OWNER: &str = "sk-sb-owner-2Kd7Rm4Wq9Lp3Xv6Bn1Tc8Hf5Jz0Yg4";
    const OTHER: &str = "sk-sb-other-6Pw3Ln8Zr1Kq5Vt9Ym2Hc7Bd4Xf0Js8";
    let mut fleet = Fleet::start(
        "[[key]]\nname = \"owner\"\nkey_env = \"OWNER_KEY\"\n[[key]]\nname = \"other\"\nkey_env = \"OTHER_KEY\"\n",
        &[("OWNER_KEY", OWNER), ("OTHER_KEY", OTHER)],
        paced_backend(2, Duration::from_millis(10)).await,
    )
    .await;
    let client = reqwest::Client::new();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
    }
    let session = McpSession::open(&client, &fleet.base(0), OWNER).await;
    let (status, _) = session
        .send(&fleet.base(1), "notifications/initialized", json!({}))
        .await;
    assert_eq!(status, 202);
    for replica in [1, 2, 0] {
        let (status, listed) = session
            .send(&fleet.base(replica), "tools/list", json!({}))
            .await;
        assert_eq!(status, 200, "replica {replica}: {listed}");
        assert!(
            listed.to_string().contains("narrator_log_story_event"),
            "replica {replica}: {listed}"
        );
    }
    for replica in [1, 2] {
        let (status, called) = session
            .send(
                &fleet.base(replica),
                "tools/call",
                json!({"name": "narrator_log_story_event", "arguments": {"event": format!("The bridge fell on {replica}")}}),
            )
            .await;
        assert_eq!(status, 200, "{called}");
        assert!(
            called
                .to_string()
                .contains(&format!("The bridge fell on {replica}")),
            "{called}"
        );
    }
    // The session's GET stream opens on a replica other than the one that opened it.
    let stream = client
        .get(format!("{}/mcp", fleet.base(2)))
        .bearer_auth(OWNER)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    drop(stream);

    // Another key holding the id gets what an unknown session gets, on every replica.
    let stolen = McpSession {
        client: client.clone(),
        key: OTHER,
        id: session.id.clone(),
    };
    assert_eq!(stolen.list_statuses(&fleet, 0..3).await, [404; 3]);
    assert_eq!(stolen.delete(&fleet.base(1)).await, 404);

    // A DELETE on one replica ends it on all.
    assert_eq!(session.delete(&fleet.base(1)).await, 202);
    assert_eq!(
        session.list_statuses(&fleet, 0..3).await,
        [404; 3],
        "a replica still serves a deleted session"
    );
    // So does a DELETE on a replica that never saw the session.
    let second = McpSession::open(&client, &fleet.base(0), OWNER).await;
    let (status, _) = second.send(&fleet.base(1), "tools/list", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(second.delete(&fleet.base(2)).await, 202);
    assert_eq!(
        second.list_statuses(&fleet, 0..3).await,
        [404; 3],
        "a replica still serves a deleted session"
    );

    // While Redis cannot be asked, a request naming a session is refused, not served from
    // a copy another replica may have ended.
    let third = McpSession::open(&client, &fleet.base(0), OWNER).await;
    fleet.redis.kill();
    for replica in [0, 1] {
        let (status, refused) = third
            .send(&fleet.base(replica), "tools/list", json!({}))
            .await;
        assert_eq!(status, 503, "replica {replica}: {refused}");
        assert!(
            refused
                .to_string()
                .contains("shared session directory is unavailable"),
            "{refused}"
        );
    }

    // The stateless era needs nothing shared: any replica answers.
    for _ in 0..3 {
        let listed: Value = client
            .post(format!("{}/mcp", fleet.nginx.base))
            .bearer_auth(OWNER)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "replicas-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            listed.to_string().contains("narrator_log_story_event"),
            "{listed}"
        );
    }
}

/// A replica becomes ready only once the Redis it shares answers: until then `/readyz` is
/// 503 (`starting`) while `/healthz` says it is alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_is_ready_only_once_its_redis_answers() {
    let backend = paced_backend(2, Duration::from_millis(10)).await;
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "state = \"redis://127.0.0.1:{port}/0\"\n{}",
            route(&backend)
        ),
    );
    let served = Served::start(&config, "127.0.0.1:0", &[]);
    let client = reqwest::Client::new();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let starting = client
        .get(format!("{}/readyz", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(starting.status(), 503);
    let body: Value = starting.json().await.unwrap();
    assert_eq!(body["status"], "starting");
    let alive = client
        .get(format!("{}/healthz", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(alive.status(), 200);
    let _redis = RedisServer::start_on(port);
    wait_ready(&client, &served.base).await;
}

/// A call paused for approval on one replica is approved on another: the pause is in the
/// stored response, which every replica reads from Redis, and the approving replica runs
/// the tool (the reference `everything` server) and finishes the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_paused_for_approval_on_one_replica_runs_when_approved_on_another() {
    let Some((node, path)) = switchboard_testkit::mcp::reference_server("everything") else {
        return;
    };
    let servers = format!(
        "[[mcp_server]]\nname = \"everything\"\ncommand = [{}, {}, \"stdio\"]\n",
        json!(node),
        json!(path.to_str().unwrap())
    );
    let backend = ScriptedServer::responding(|request: &Captured| {
        let last = request.body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .cloned()
            .unwrap_or(Value::Null);
        if last["role"] == "tool" {
            OpenAiScript::new()
                .text("The tool said: ")
                .text(&switchboard_testkit::message_text(&last))
                .finish("stop", 20, 7)
                .reply()
        } else {
            OpenAiScript::new()
                .tool_call("call_model_1", "echo", &[r#"{"message": "approved"}"#])
                .finish("tool_calls", 10, 5)
                .reply()
        }
    })
    .await;
    let fleet = Fleet::start(&servers, &[], backend).await;
    let client = reqwest::Client::new();
    for replica in 0..3 {
        wait_ready(&client, &fleet.base(replica)).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let health: Value = client
                .get(format!("{}/healthz", fleet.base(replica)))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            // Its MCP server has connected and listed its tools.
            if health["mcp_servers"][0]["state"] == "ready" {
                break;
            }
            assert!(Instant::now() < deadline, "replica {replica}: {health}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let tool = json!({"type": "mcp", "server_label": "everything", "allowed_tools": ["echo"]});
    let first: Value = client
        .post(format!("{}/v1/responses", fleet.base(0)))
        .json(&json!({"model": "qwen", "input": "echo", "tools": [tool]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let request = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .unwrap_or_else(|| panic!("{first}"))
        .clone();
    let second: Value = client
        .post(format!("{}/v1/responses", fleet.base(2)))
        .json(&json!({"model": "qwen", "previous_response_id": first["id"], "tools": [tool],
            "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(second["output"][0]["type"], "mcp_call", "{second}");
    assert_eq!(second["output"][0]["approval_request_id"], request["id"]);
    assert_eq!(second["output"][0]["output"], "Echo: approved", "{second}");
}
