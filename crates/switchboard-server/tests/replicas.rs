//! Routes over several replicas, over real sockets: how requests spread, what happens when a
//! replica dies, rate-limits or breaks a stream, and when every replica of a route is down.
//! Each replica is a small OpenAI-compatible server of the test's own that can be slowed,
//! made to fail, stopped and started again on the same port.
//!
//! A binary of its own, not a module of `tests/it`: the metrics recorder is the process's, and
//! `the_gateways_own_time_and_the_backends_first_byte_are_measured` reads the count of
//! `gateway_overhead_seconds{endpoint="messages",kind="native"}` as exactly its one request,
//! which the Messages tests of `tests/it` would add to.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "it/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use common::{
    Answer, CHARACTERS, client, post as post_json, post_stream, post_to, request, streaming,
};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::OpenAiScript;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What a replica does with the next requests.
#[derive(Debug, Clone)]
enum Mode {
    /// Answers after this long, naming itself in the text.
    Answer(Duration),
    /// Answers with this status and `retry-after` seconds.
    Fail(u16, Option<u64>),
    /// Sends the first event of its answer, then breaks the connection.
    CutAfterFirstEvent,
    /// Answers 200 with a web page, as a proxy's error page or a misrouted port does.
    Html,
    /// Answers 200 with JSON that is no chat completion (no `choices`).
    NoChoices,
    /// Accepts the connection and the request, and never answers anything.
    Hang,
}

struct Shared {
    name: String,
    mode: Mutex<Mode>,
    requests: AtomicUsize,
    /// The first user message of each request, in order.
    firsts: Mutex<Vec<String>>,
}

impl Shared {
    fn new(name: &str, mode: Mode) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            mode: Mutex::new(mode),
            requests: AtomicUsize::new(0),
            firsts: Mutex::new(Vec::new()),
        })
    }
}

/// A replica server; stops when dropped.
struct Replica {
    port: u16,
    shared: Arc<Shared>,
    running: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
    /// For a replica that is down for good: its port, bound and never listening, held
    /// only so that it stays bound.
    _held: Option<TcpSocket>,
}

impl Replica {
    async fn start(name: &str, mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut replica = Self {
            port,
            shared: Shared::new(name, mode),
            running: None,
            _held: None,
        };
        replica.serve(listener);
        replica
    }

    /// A replica that is down for good: its port is bound and never listens, so every
    /// connection is refused, and no other server of the test run can take the port, as
    /// one could a stopped replica's and answer in its place.
    fn down(name: &str) -> Self {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
        Self {
            port: socket.local_addr().unwrap().port(),
            shared: Shared::new(name, Mode::Hang),
            running: None,
            _held: Some(socket),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn serve(&mut self, listener: TcpListener) {
        let app = Router::new()
            .route("/chat/completions", post(chat))
            .route("/models", get(models))
            .route("/tokenize", post(tokenize))
            .with_state(Arc::clone(&self.shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        self.running = Some((stop, task));
    }

    /// Stops accepting; answers under way finish.
    async fn stop(&mut self) {
        if let Some((stop, task)) = self.running.take() {
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    /// Listens again on the same port.
    async fn restart(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }

    fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn firsts(&self) -> Vec<String> {
        self.shared.firsts.lock().unwrap().clone()
    }
}

async fn chat(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let first = body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    shared.firsts.lock().unwrap().push(first);
    let mode = shared.mode.lock().unwrap().clone();
    let answer = OpenAiScript::new()
        .text(&format!("from {}", shared.name))
        .finish("stop", 5, 3)
        .body();
    match mode {
        Mode::Answer(delay) => {
            tokio::time::sleep(delay).await;
            ([("content-type", "text/event-stream")], answer).into_response()
        }
        Mode::Fail(status, retry_after) => {
            let mut response = (
                StatusCode::from_u16(status).unwrap(),
                axum::Json(json!({"error": {"message": format!("{} says no", shared.name)}})),
            )
                .into_response();
            if let Some(seconds) = retry_after {
                response
                    .headers_mut()
                    .insert("retry-after", seconds.to_string().parse().unwrap());
            }
            response
        }
        Mode::CutAfterFirstEvent => {
            let first = answer.split_inclusive("\n\n").next().unwrap().to_owned();
            // The first event goes out on its own before the connection breaks.
            let pieces = stream::iter([Some(first), None]).then(|piece| async move {
                match piece {
                    Some(text) => Ok(Bytes::from(text)),
                    None => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Err(std::io::Error::other("replica died"))
                    }
                }
            });
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(pieces),
            )
                .into_response()
        }
        Mode::Html => (
            [("content-type", "text/html")],
            "<html><body><h1>It works!</h1></body></html>",
        )
            .into_response(),
        Mode::NoChoices => axum::Json(json!({"object": "list", "data": []})).into_response(),
        Mode::Hang => {
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

/// vLLM's tokenizer: a fixed count, or nothing at all from a replica that hangs.
async fn tokenize(State(shared): State<Arc<Shared>>) -> Response {
    let mode = shared.mode.lock().unwrap().clone();
    if matches!(mode, Mode::Hang) {
        std::future::pending::<()>().await;
    }
    axum::Json(json!({"count": 7})).into_response()
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let mode = shared.mode.lock().unwrap().clone();
    if matches!(mode, Mode::Hang) {
        std::future::pending::<()>().await;
    }
    list_models().await.into_response()
}

async fn list_models() -> axum::Json<Value> {
    axum::Json(json!({"object": "list", "data": [{"id": "backend-model", "object": "model"}]}))
}

/// A gateway whose route `pool` spreads over `replicas`; `extra` holds more of the route's
/// lines, `more` whole further tables.
async fn gateway(replicas: &[&Replica], extra: &str, more: &str) -> RunningGateway {
    gateway_named("pool", replicas, extra, more).await
}

async fn gateway_named(
    name: &str,
    replicas: &[&Replica],
    extra: &str,
    more: &str,
) -> RunningGateway {
    gateway_with("", name, replicas, extra, more).await
}

/// As [`gateway_named`], with `top` lines for the gateway's own settings.
async fn gateway_with(
    top: &str,
    name: &str,
    replicas: &[&Replica],
    extra: &str,
    more: &str,
) -> RunningGateway {
    let urls: Vec<String> = replicas
        .iter()
        .map(|replica| format!("\"{}\"", replica.url()))
        .collect();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n{top}\n[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nurls = [{}]\nmodel = \"backend-model\"\n{extra}\n{more}",
        urls.join(", ")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    RunningGateway::start(&config, &|_| None).await.unwrap()
}

/// Sends `total` requests, `concurrency` at a time; the statuses, in no order.
async fn load(gateway: &RunningGateway, total: usize, concurrency: usize) -> Vec<u16> {
    let next = Arc::new(AtomicUsize::new(0));
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let next = Arc::clone(&next);
            let statuses = Arc::clone(&statuses);
            let url = format!("{}/v1/chat/completions", gateway.base_url());
            tokio::spawn(async move {
                let client = client();
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    let response = client
                        .post(&url)
                        .json(&request("pool", "hello"))
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    let _ = response.bytes().await;
                    statuses.lock().unwrap().push(status);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    Arc::try_unwrap(statuses).unwrap().into_inner().unwrap()
}

async fn healthz(gateway: &RunningGateway) -> Value {
    common::get(gateway, "/healthz").await.json()
}

/// The `/healthz` entry of the replica at `url`.
fn replica_health(health: &Value, url: &str) -> Value {
    health["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|backend| backend["url"] == url)
        .cloned()
        .unwrap_or_else(|| panic!("no {url} in {health}"))
}

#[tokio::test]
async fn least_busy_spreads_evenly_and_away_from_a_slow_replica() {
    let even = [
        Replica::start("a", Mode::Answer(Duration::from_millis(20))).await,
        Replica::start("b", Mode::Answer(Duration::from_millis(20))).await,
        Replica::start("c", Mode::Answer(Duration::from_millis(20))).await,
    ];
    let pool = gateway(&even.iter().collect::<Vec<_>>(), "", "").await;
    let statuses = load(&pool, 600, 12).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    let counts: Vec<usize> = even.iter().map(Replica::requests).collect();
    for count in &counts {
        assert!(
            count.abs_diff(200) <= 20,
            "each replica within 10% of 200 requests: {counts:?}"
        );
    }
    pool.stop().await.unwrap();

    let skewed = [
        Replica::start("fast-1", Mode::Answer(Duration::from_millis(5))).await,
        Replica::start("fast-2", Mode::Answer(Duration::from_millis(5))).await,
        Replica::start("slow", Mode::Answer(Duration::from_millis(150))).await,
    ];
    let pool = gateway(&skewed.iter().collect::<Vec<_>>(), "", "").await;
    let statuses = load(&pool, 300, 6).await;
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    let counts: Vec<usize> = skewed.iter().map(Replica::requests).collect();
    assert!(
        counts[2] * 4 < counts[0].min(counts[1]),
        "the slow replica gets far fewer: {counts:?}"
    );
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn a_replica_killed_mid_test_is_stepped_around_ejected_and_back_after_restarting() {
    let mut replicas = [
        Replica::start("a", Mode::Answer(Duration::from_millis(5))).await,
        Replica::start("b", Mode::Answer(Duration::from_millis(5))).await,
        Replica::start("c", Mode::Answer(Duration::from_millis(5))).await,
    ];
    let pool = gateway(
        &replicas.iter().collect::<Vec<_>>(),
        "eject_after = 2\neject_secs = 30\nhealth_check_secs = 0.2\n",
        "",
    )
    .await;
    let url = replicas[1].url();
    assert!(load(&pool, 60, 4).await.iter().all(|status| *status == 200));
    assert!(replicas[1].requests() > 0);

    replicas[1].stop().await;
    let statuses = load(&pool, 120, 4).await;
    assert!(
        statuses.iter().all(|status| *status == 200),
        "no client sees the dead replica: {statuses:?}"
    );
    let health = replica_health(&healthz(&pool).await, &url);
    assert_eq!(health["state"], "ejected", "{health}");
    assert!(health["ejections"].as_u64().unwrap() >= 1, "{health}");
    let metrics = common::get(&pool, "/metrics").await.text;
    for series in [
        "gateway_upstream_ejections_total",
        "gateway_upstream_errors_total",
        "gateway_upstream_healthy",
        "gateway_upstream_in_flight",
    ] {
        assert!(
            metrics
                .lines()
                .any(|line| line.starts_with(series) && line.contains(&url)),
            "{series} for {url}:\n{metrics}"
        );
    }
    let healthy = metrics
        .lines()
        .find(|line| line.starts_with("gateway_upstream_healthy") && line.contains(&url))
        .unwrap();
    assert!(healthy.ends_with(" 0"), "{healthy}");

    replicas[1].restart().await;
    let before = replicas[1].requests();
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica_health(&healthz(&pool).await, &url)["state"] != "healthy" {
        assert!(
            Instant::now() < deadline,
            "the health check never brought it back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(load(&pool, 60, 4).await.iter().all(|status| *status == 200));
    assert!(
        replicas[1].requests() > before,
        "the restarted replica takes requests again"
    );
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn the_fallback_answers_when_every_replica_is_down_and_the_answer_says_where() {
    let down = [
        Replica::start("a", Mode::Fail(503, None)).await,
        Replica::down("b"),
    ];
    let backup = Replica::start("backup", Mode::Answer(Duration::ZERO)).await;
    let more = common::route("backup", "openai", &backup.url(), "");
    let pool = gateway(
        &down.iter().collect::<Vec<_>>(),
        "fallbacks = [\"backup\"]\n",
        &more,
    )
    .await;
    // Answers name their replica only where the operator asked for it.
    let whole = post_json(&pool, &request("pool", "hi")).await;
    assert_eq!(whole.headers["x-switchboard-route"], "backup");
    assert!(!whole.headers.contains_key("x-switchboard-upstream"));
    pool.stop().await.unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\nupstream_header = true\n[[route]]\nname = \"pool\"\nprovider = \"openai\"\nurls = [\"{}\", \"{}\"]\nmodel = \"backend-model\"\nfallbacks = [\"backup\"]\n{more}",
        down[0].url(),
        down[1].url()
    );
    let pool = RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap();
    let whole = post_json(&pool, &request("pool", "hi")).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    assert_eq!(
        whole.json()["choices"][0]["message"]["content"],
        "from backup"
    );
    let streamed = post_stream(&pool, &streaming(request("pool", "hi"))).await;
    assert!(streamed.done, "{}", streamed.text);
    for headers in [&whole.headers, &streamed.headers] {
        assert_eq!(headers["x-switchboard-route"], "backup");
        assert_eq!(
            headers["x-switchboard-upstream"].to_str().unwrap(),
            backup.url()
        );
    }
    let metrics = common::get(&pool, "/metrics").await.text;
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("gateway_fallbacks_total")
                && line.contains("fallback=\"backup\"")
                && line.contains("route=\"pool\"")),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("gateway_retries_total")),
        "{metrics}"
    );

    // Without a fallback, the client gets the last failure, in its API's shape.
    let alone = gateway(&down.iter().collect::<Vec<_>>(), "", "").await;
    let failed = post_json(&alone, &request("pool", "hi")).await;
    assert_eq!(failed.status, 502, "{}", failed.text);
    pool.stop().await.unwrap();
    alone.stop().await.unwrap();
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_elsewhere_and_the_replica_left_alone_meanwhile() {
    let limited = Replica::start("limited", Mode::Fail(429, Some(30))).await;
    let healthy = Replica::start("healthy", Mode::Answer(Duration::ZERO)).await;
    let pool = gateway(&[&limited, &healthy], "", "").await;
    for _ in 0..10 {
        let answer = post_json(&pool, &request("pool", "hi")).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(
            answer.json()["choices"][0]["message"]["content"],
            "from healthy"
        );
    }
    assert!(
        limited.requests() <= 1,
        "asked to wait 30 s, the replica got {} requests",
        limited.requests()
    );
    let health = replica_health(&healthz(&pool).await, &limited.url());
    if limited.requests() == 1 {
        assert_eq!(health["state"], "paused", "{health}");
        assert_eq!(health["consecutive_failures"], 0, "a 429 is no failure");
    }
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn a_stream_cut_after_its_first_byte_is_not_retried() {
    let first = Replica::start("first", Mode::CutAfterFirstEvent).await;
    let second = Replica::start("second", Mode::CutAfterFirstEvent).await;
    let pool = gateway(&[&first, &second], "retries = 2\n", "").await;
    let streamed = post_to(
        &pool,
        "/v1/chat/completions",
        &streaming(request("pool", "hi")),
    )
    .await;
    assert!(
        streamed.status != 200 || streamed.text.contains("\"error\""),
        "the client hears of the break: {}",
        streamed.text
    );
    assert!(!streamed.text.contains("[DONE]"), "{}", streamed.text);
    assert_eq!(
        first.requests() + second.requests(),
        1,
        "the answer had begun: no second attempt"
    );
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn prefix_affinity_keeps_a_conversation_on_one_replica() {
    let replicas = [
        Replica::start("a", Mode::Answer(Duration::ZERO)).await,
        Replica::start("b", Mode::Answer(Duration::ZERO)).await,
        Replica::start("c", Mode::Answer(Duration::ZERO)).await,
    ];
    let pool = gateway(
        &replicas.iter().collect::<Vec<_>>(),
        "balance = \"prefix_affinity\"\n",
        "",
    )
    .await;
    let conversations: Vec<String> = (0..12).map(|n| format!("conversation {n}")).collect();
    for turn in 0..4 {
        for opening in &conversations {
            let mut messages = vec![
                json!({"role": "system", "content": "You are terse."}),
                json!({"role": "user", "content": opening}),
            ];
            for later in 0..turn {
                messages.push(json!({"role": "assistant", "content": format!("reply {later}")}));
                messages.push(json!({"role": "user", "content": format!("and then {later}?")}));
            }
            let answer = post_json(&pool, &json!({"model": "pool", "messages": messages})).await;
            assert_eq!(answer.status, 200, "{}", answer.text);
        }
    }
    let mut homes: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, replica) in replicas.iter().enumerate() {
        for first in replica.firsts() {
            homes.entry(first).or_default().push(index);
        }
    }
    for (conversation, replicas_seen) in &homes {
        assert_eq!(replicas_seen.len(), 4);
        assert!(
            replicas_seen.iter().all(|index| *index == replicas_seen[0]),
            "{conversation} went to {replicas_seen:?}"
        );
    }
    let used = replicas
        .iter()
        .filter(|replica| replica.requests() > 0)
        .count();
    assert!(
        used >= 2,
        "12 conversations over 3 replicas use more than one"
    );
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn the_gateways_own_time_and_the_backends_first_byte_are_measured() {
    // Its own route name and API: the figures of this test's one request alone.
    let replica = Replica::start("a", Mode::Answer(Duration::from_millis(50))).await;
    let pool = gateway_named("timed", &[&replica], "", "").await;
    let answer = post_to(
        &pool,
        "/v1/messages",
        &json!({"model": "timed", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let metrics = common::get(&pool, "/metrics").await.text;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    let overhead = "gateway_overhead_seconds_{}{endpoint=\"messages\",kind=\"native\"}";
    assert_eq!(value(&overhead.replace("{}", "count")), 1.0);
    let own = value(&overhead.replace("{}", "sum"));
    let first_byte = value("gateway_backend_ttfb_seconds_sum{route=\"timed\"}");
    assert!(first_byte >= 0.05, "the backend took 50 ms: {first_byte}");
    assert!(
        own < 0.04,
        "the backend's 50 ms are not the gateway's: {own}"
    );
    pool.stop().await.unwrap();
}

/// Sends whole and streamed requests one after the other, each on the replica the pool
/// picks; returns how many failed, with the text of the first failure.
async fn whole_and_streamed(gateway: &RunningGateway, each: usize) -> (usize, Option<String>) {
    let mut failed = 0;
    let mut first_failure = None;
    for _ in 0..each {
        let whole = post_json(gateway, &request("pool", "hi")).await;
        let ok =
            whole.status == 200 && whole.json()["choices"][0]["message"]["content"] == "from good";
        let streamed = post_stream(gateway, &streaming(request("pool", "hi"))).await;
        let streamed_ok = streamed.done && streamed.text.contains("from good");
        for (ok, text) in [(ok, whole.text), (streamed_ok, streamed.text)] {
            if !ok {
                failed += 1;
                first_failure.get_or_insert(text);
            }
        }
    }
    (failed, first_failure)
}

#[tokio::test]
async fn a_replica_that_answers_200_with_no_answer_or_404_is_retried_elsewhere_and_ejected() {
    for mode in [Mode::Html, Mode::NoChoices, Mode::Fail(404, None)] {
        let good = Replica::start("good", Mode::Answer(Duration::ZERO)).await;
        let bad = Replica::start("bad", mode.clone()).await;
        let pool = gateway(&[&good, &bad], "eject_after = 3\neject_secs = 60\n", "").await;
        let (failed, first_failure) = whole_and_streamed(&pool, 30).await;
        let health = replica_health(&healthz(&pool).await, &bad.url());
        assert_eq!(
            failed, 0,
            "{mode:?}: {failed} of 60 requests failed (bad replica: {health}); first: {first_failure:?}"
        );
        assert!(bad.requests() >= 3, "{mode:?}: {}", bad.requests());
        assert_eq!(health["state"], "ejected", "{mode:?}: {health}");
        assert!(
            health["errors"].as_u64().unwrap() >= 3,
            "{mode:?}: {health}"
        );
        let good_health = replica_health(&healthz(&pool).await, &good.url());
        assert_eq!(good_health["errors"], 0, "{mode:?}: {good_health}");
        pool.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_request_the_backend_refuses_is_neither_retried_nor_held_against_the_replica() {
    let first = Replica::start("first", Mode::Fail(400, None)).await;
    let second = Replica::start("second", Mode::Fail(400, None)).await;
    let pool = gateway(&[&first, &second], "eject_after = 1\n", "").await;
    for _ in 0..4 {
        let answer = post_json(&pool, &request("pool", "hi")).await;
        assert_eq!(answer.status, 400, "{}", answer.text);
    }
    assert_eq!(first.requests() + second.requests(), 4, "no retries");
    let health = healthz(&pool).await;
    for replica in [&first, &second] {
        let health = replica_health(&health, &replica.url());
        assert_eq!(health["state"], "healthy", "{health}");
        assert_eq!(health["errors"], 0, "{health}");
    }
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn a_replica_that_never_answers_costs_no_request_its_deadline_and_is_ejected() {
    let good = Replica::start("good", Mode::Answer(Duration::ZERO)).await;
    let hang = Replica::start("hang", Mode::Hang).await;
    // The default wait for a first byte: within a 4 s deadline, half of it.
    let pool = gateway_with(
        "request_timeout_secs = 4",
        "pool",
        &[&good, &hang],
        "eject_after = 1\neject_secs = 60\n",
        "",
    )
    .await;
    let mut slowest = Duration::ZERO;
    let mut failed = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let answer = post_json(&pool, &request("pool", "hi")).await;
        slowest = slowest.max(started.elapsed());
        if answer.status != 200 {
            failed.push(answer.status);
        }
        let ejected = replica_health(&healthz(&pool).await, &hang.url())["state"] == "ejected";
        if ejected || !failed.is_empty() {
            break;
        }
    }
    assert!(
        hang.requests() > 0,
        "30 requests never went to the hanging replica"
    );
    assert!(
        failed.is_empty() && slowest < Duration::from_millis(3500),
        "{} requests failed ({failed:?}); the slowest took {slowest:?} of a 4 s deadline",
        failed.len()
    );
    let health = replica_health(&healthz(&pool).await, &hang.url());
    assert_eq!(health["state"], "ejected", "{health}");
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn health_checks_of_a_replica_that_never_answers_give_up_quickly() {
    let hang = Replica::start("hang", Mode::Hang).await;
    let pool = gateway(
        &[&hang],
        "eject_after = 1\neject_secs = 60\nhealth_check_secs = 0.2\n",
        "",
    )
    .await;
    let started = Instant::now();
    let mut health = replica_health(&healthz(&pool).await, &hang.url());
    while health["state"] != "ejected" && started.elapsed() < Duration::from_secs(8) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        health = replica_health(&healthz(&pool).await, &hang.url());
    }
    assert_eq!(
        health["state"],
        "ejected",
        "after {:?} of checks: {health}",
        started.elapsed()
    );
    pool.stop().await.unwrap();
}

/// `POST /v1/messages/count_tokens` for a short conversation; the answer and its time,
/// or `None` when it did not come within `patience`.
async fn count(gateway: &RunningGateway, patience: Duration) -> Option<(Answer, Duration)> {
    let started = Instant::now();
    let body = json!({"model": "pool", "messages": [{"role": "user", "content": "how many tokens is this?"}]});
    let answer = tokio::time::timeout(
        patience,
        post_to(gateway, "/v1/messages/count_tokens", &body),
    )
    .await
    .ok()?;
    Some((answer, started.elapsed()))
}

#[tokio::test]
async fn count_tokens_asks_a_replica_that_never_answers_briefly_then_another_or_estimates() {
    let hang = Replica::start("hang", Mode::Hang).await;
    let alone = gateway_with("request_timeout_secs = 10", "pool", &[&hang], "", "").await;
    let patience = Duration::from_secs(6);
    let Some((answer, took)) = count(&alone, patience).await else {
        panic!("count_tokens did not answer within {patience:?}");
    };
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.headers["x-switchboard-token-count"], "estimate");
    assert!(answer.json()["input_tokens"].as_u64().unwrap() > 0);
    assert!(took < Duration::from_secs(4), "{took:?}");
    alone.stop().await.unwrap();

    let good = Replica::start("good", Mode::Answer(Duration::ZERO)).await;
    let pool = gateway_with("request_timeout_secs = 10", "pool", &[&hang, &good], "", "").await;
    for _ in 0..4 {
        let Some((answer, took)) = count(&pool, patience).await else {
            panic!("count_tokens did not answer within {patience:?}");
        };
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(
            answer.headers["x-switchboard-token-count"], "backend",
            "the other replica counts"
        );
        assert_eq!(answer.json()["input_tokens"], 7);
        assert!(took < Duration::from_secs(4), "{took:?}");
    }
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn a_replica_that_cuts_every_stream_after_its_first_chunk_is_ejected() {
    let good = Replica::start("good", Mode::Answer(Duration::ZERO)).await;
    let cutter = Replica::start("cutter", Mode::CutAfterFirstEvent).await;
    let pool = gateway(&[&good, &cutter], "eject_after = 2\neject_secs = 60\n", "").await;
    for _ in 0..40 {
        let _ = post_stream(&pool, &streaming(request("pool", "hi"))).await;
        if cutter.requests() >= 2 {
            break;
        }
    }
    assert!(cutter.requests() >= 2, "{}", cutter.requests());
    let health = replica_health(&healthz(&pool).await, &cutter.url());
    assert_eq!(health["state"], "ejected", "{health}");
    assert!(health["errors"].as_u64().unwrap() >= 2, "{health}");
    let before = cutter.requests();
    for _ in 0..10 {
        let streamed = post_stream(&pool, &streaming(request("pool", "hi"))).await;
        assert!(streamed.done, "{}", streamed.text);
    }
    assert_eq!(cutter.requests(), before, "an ejected replica gets nothing");
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn when_every_replica_is_out_a_request_goes_to_the_fallback_after_one_attempt() {
    let mut down = [
        Replica::start("a", Mode::Fail(503, None)).await,
        Replica::start("b", Mode::Fail(503, None)).await,
        Replica::start("c", Mode::Fail(503, None)).await,
    ];
    let backup = Replica::start("backup", Mode::Answer(Duration::ZERO)).await;
    let more = common::route("backup", "openai", &backup.url(), "");
    let pool = gateway(
        &down.iter().collect::<Vec<_>>(),
        "retries = 2\neject_after = 1\neject_secs = 60\nfallbacks = [\"backup\"]\n",
        &more,
    )
    .await;
    // The first request ejects all three; the next ones find every replica out.
    for _ in 0..5 {
        let answer = post_json(&pool, &request("pool", "hi")).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let attempts: usize = down.iter().map(Replica::requests).sum();
    assert!(
        attempts <= 3 + 4,
        "at most one attempt per request once every replica is out: {attempts} for 5 requests"
    );
    for replica in &mut down {
        replica.stop().await;
    }
    pool.stop().await.unwrap();
}

#[tokio::test]
async fn a_lone_replica_that_never_answers_gives_way_to_the_fallback_and_then_is_skipped() {
    let hang = Replica::start("hang", Mode::Hang).await;
    let backup = Replica::start("backup", Mode::Answer(Duration::ZERO)).await;
    let more = common::route("backup", "openai", &backup.url(), "");
    let pool = gateway_with(
        "request_timeout_secs = 4",
        "pool",
        &[&hang],
        "eject_after = 1\neject_secs = 60\nfallbacks = [\"backup\"]\n",
        &more,
    )
    .await;
    for _ in 0..3 {
        let started = Instant::now();
        let answer = post_json(&pool, &request("pool", "hi")).await;
        let took = started.elapsed();
        assert_eq!(answer.status, 200, "after {took:?}: {}", answer.text);
        assert_eq!(
            answer.json()["choices"][0]["message"]["content"],
            "from backup"
        );
        assert!(
            took < Duration::from_millis(3500),
            "{took:?} of a 4 s deadline"
        );
    }
    assert_eq!(hang.requests(), 1, "ejected, it is not tried again");
    pool.stop().await.unwrap();
}
