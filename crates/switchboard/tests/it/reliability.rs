//! The attacks of issue 13 replayed against real `switchboard serve` processes on loopback,
//! where process-level behaviour is what matters: descriptor exhaustion under a lowered
//! limit, idle connections by the hundred, memory (RSS from /proc) under growing tool
//! lists and answers that never end, HTTP/2 from curl, and SIGTERM mid-stream. Each is
//! bounded in count and time; memory figures are printed (`--nocapture`) for the record.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;

use serde_json::{Value, json};
use switchboard_testkit::{OpenAiScript, Reply, ScriptedServer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A `switchboard serve` process and what it logged.
struct Served {
    child: Child,
    base: String,
    logs: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts `switchboard serve` with this configuration (listening on a free port), under
    /// `ulimit -n LIMIT` when given, and waits until it listens.
    fn start(config: &str, descriptor_limit: Option<u32>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("switchboard.toml");
        let characters = dir.path().join("characters");
        std::fs::create_dir(&characters).unwrap();
        std::fs::write(
            &file,
            format!(
                "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{config}",
                characters.display()
            ),
        )
        .unwrap();
        let binary = env!("CARGO_BIN_EXE_switchboard");
        let mut command = match descriptor_limit {
            Some(limit) => {
                let mut shell = Command::new("sh");
                shell.args([
                    "-c",
                    &format!("ulimit -n {limit} && exec \"$0\" serve --config \"$1\""),
                    binary,
                ]);
                shell.arg(&file);
                shell
            }
            None => {
                let mut direct = Command::new(binary);
                direct.args(["serve", "--config"]).arg(&file);
                direct
            }
        };
        let mut child = command
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let logs = Arc::new(Mutex::new(String::new()));
        let (listening, address) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&logs);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.split("listening on ").nth(1) {
                    let _ = listening.send(at.trim().to_owned());
                }
                let mut logs = sink.lock().unwrap();
                logs.push_str(&line);
                logs.push('\n');
            }
        });
        let base = address
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("serve did not start:\n{}", logs.lock().unwrap()));
        Self {
            child,
            base,
            logs,
            _dir: dir,
        }
    }

    fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// Resident memory, in MiB.
    fn rss_mib(&self) -> f64 {
        switchboard_testkit::rss_mib(self.child.id()).expect("serve exited")
    }

    fn open_descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Waits for the process to exit (bounded); its exit code.
    fn wait(&mut self, bound: Duration) -> Option<i32> {
        let deadline = std::time::Instant::now() + bound;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "serve did not exit:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn route(name: &str, url: &str) -> String {
    format!("[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nurl = \"{url}\"\nmodel = \"m\"\n")
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

/// Under `ulimit -n 256`, 300 silent connections do not make the gateway unreachable: it
/// accepts at most half its descriptors' worth, says so once, closes the silent ones at
/// the idle timeout, and answers the request queued behind them.
#[tokio::test]
async fn silent_connections_cannot_exhaust_descriptors() {
    let served = Served::start(
        "idle_timeout_secs = 2\nheader_read_timeout_secs = 2\n",
        Some(256),
    );
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(TcpStream::connect(served.address()).await.unwrap());
    }
    let health = tokio::time::timeout(
        Duration::from_secs(60),
        reqwest::get(format!("{}/healthz", served.base)),
    )
    .await
    .unwrap_or_else(|_| panic!("/healthz unanswered:\n{}", served.logs()))
    .unwrap();
    assert_eq!(health.status(), 200);
    let logs = served.logs();
    assert!(
        logs.contains("open connections reached max_connections"),
        "{logs}"
    );
    assert!(!logs.contains("Too many open files"), "{logs}");
    assert!(served.open_descriptors() <= 256);
    drop(silent);
}

/// 500 keep-alive connections left idle are closed at the idle timeout (10 s here): the
/// process's descriptors come back down.
#[tokio::test]
async fn idle_keep_alive_connections_are_released() {
    let served = Served::start("idle_timeout_secs = 10\n", None);
    let baseline = served.open_descriptors();
    let mut idle = Vec::new();
    for _ in 0..500 {
        let mut socket = TcpStream::connect(served.address()).await.unwrap();
        socket
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        idle.push(socket);
    }
    for socket in &mut idle {
        let mut buffer = [0u8; 512];
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(buffer[..read].starts_with(b"HTTP/1.1 200"));
    }
    let during = served.open_descriptors();
    assert!(during >= baseline + 500, "{baseline} → {during}");
    for socket in &mut idle {
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(30), socket.read_to_end(&mut rest));
        assert!(closed.await.is_ok(), "an idle connection stayed open");
    }
    let after = served.open_descriptors();
    eprintln!(
        "descriptors: {baseline} at start, {during} with 500 idle connections, {after} after the idle timeout"
    );
    assert!(after <= baseline + 5, "{baseline} → {after}");
}

/// `count` tools with 20 patterned properties each (about 1.4 KB of JSON per tool).
fn heavy_tools(count: usize, tag: &str) -> Value {
    let properties: serde_json::Map<String, Value> = (0..20)
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

/// Distinct tool lists, large and medium, do not grow the process without bound: large
/// lists are not kept, medium ones only up to the cache's memory bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_tool_lists_do_not_grow_memory_without_bound() {
    let served = Served::start("", None);
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", served.base);
    let send = |tools: Value| {
        let mut body = chat("no-such-route");
        body["tools"] = tools;
        client.post(&url).json(&body).send()
    };
    assert_eq!(send(heavy_tools(2, "warm")).await.unwrap().status(), 404);
    let before = served.rss_mib();
    for list in 0..16 {
        // About 1 MB of JSON each: the case (twelve took 130 MB to 547 MB).
        let response = send(heavy_tools(720, &format!("large{list}")))
            .await
            .unwrap();
        assert_eq!(response.status(), 404);
    }
    let after_large = served.rss_mib();
    for list in 0..40 {
        let response = send(heavy_tools(300, &format!("medium{list}")))
            .await
            .unwrap();
        assert_eq!(response.status(), 404);
    }
    let after_medium = served.rss_mib();
    eprintln!(
        "tool lists: RSS {before:.0} MiB before, {after_large:.0} MiB after 16 distinct 1 MB lists, {after_medium:.0} MiB after 40 more of 420 KB"
    );
    assert!(after_large - before < 300.0, "{before} → {after_large}");
    assert!(after_medium - before < 400.0, "{before} → {after_medium}");
}

/// A backend that answers an endless stream, either as endless events or as one line
/// that never ends; counts the connections it served.
async fn endless_backend(one_line: bool) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&served);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = vec![0u8; 65536];
                let _ = socket.read(&mut head).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                let text = "x".repeat(8192);
                let piece = if one_line {
                    text.clone()
                } else {
                    format!(
                        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
                    )
                };
                if one_line {
                    let start = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
                    let _ = socket
                        .write_all(format!("{:x}\r\n{start}\r\n", start.len()).as_bytes())
                        .await;
                }
                let frame = format!("{:x}\r\n{piece}\r\n", piece.len());
                while socket.write_all(frame.as_bytes()).await.is_ok() {}
            });
        }
    });
    (base, served)
}

/// Whole answers from a backend that never stops, and one SSE line that never ends, stop
/// at their bounds with `backend_answer_too_large`; memory stays flat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_answers_stop_at_their_bound() {
    let (events, _) = endless_backend(false).await;
    let (line, _) = endless_backend(true).await;
    let served = Served::start(
        &format!("{}{}", route("events", &events), route("line", &line)),
        None,
    );
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", served.base);
    let before = served.rss_mib();
    let mut peak: f64 = before;
    for model in ["events", "line", "events", "line"] {
        let answer = tokio::time::timeout(
            Duration::from_secs(120),
            client.post(&url).json(&chat(model)).send(),
        )
        .await
        .expect("the answer ends")
        .unwrap();
        assert_eq!(answer.status(), 502);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "backend_answer_too_large", "{body}");
        peak = peak.max(served.rss_mib());
    }
    let after = served.rss_mib();
    eprintln!(
        "endless answers: RSS {before:.0} MiB before, {after:.0} MiB after two endless streams and two endless lines (16 MiB bounds)"
    );
    assert!(after - before < 250.0, "{before} → {after}");
}

/// curl gets HTTP/2 with prior knowledge and through the h2c upgrade.
#[tokio::test]
async fn curl_gets_http2_with_prior_knowledge_and_by_upgrade() {
    let served = Served::start("", None);
    let url = format!("{}/healthz", served.base);
    for flag in ["--http2-prior-knowledge", "--http2"] {
        let output = Command::new("curl")
            .args(["-s", "-w", "\n%{http_version} %{http_code}", flag, &url])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{flag}: {text}");
        assert!(text.contains("\"status\":\"ok\""), "{flag}: {text}");
        assert!(text.ends_with("\n2 200"), "{flag}: {text}");
    }
    // A request with a body is answered over HTTP/1.1, as the upgrade allows.
    let output = Command::new("curl")
        .args([
            "-s",
            "-w",
            "\n%{http_version} %{http_code}",
            "--http2",
            "-d",
        ])
        .arg(chat("no-such-route").to_string())
        .args(["-H", "content-type: application/json"])
        .arg(format!("{}/v1/chat/completions", served.base))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.ends_with("\n1.1 404"), "{text}");
    assert!(text.contains("model_not_found"), "{text}");
}

/// SIGTERM mid-stream: the stream still running when the grace ends gets the
/// `server_shutting_down` error event, and the process exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_stream_ends_the_stream_with_an_error_event() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut reply = OpenAiScript::new()
        .text("The first part")
        .text(" and the rest.")
        .finish("stop", 1, 1)
        .reply();
    reply.gate = Some((1, Arc::clone(&gate)));
    // The first connection is serve's start-up reachability probe.
    let probe = OpenAiScript::new().finish("stop", 1, 1).reply();
    let backend = ScriptedServer::start(vec![probe, reply]).await;
    let mut served = Served::start(
        &format!("shutdown_grace_secs = 1\n{}", route("qwen", &backend.base)),
        None,
    );
    let mut body = chat("qwen");
    body["stream"] = json!(true);
    let mut response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut received =
        String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    assert!(received.contains("The first part"), "{received}");
    served.signal("TERM");
    while let Ok(Some(bytes)) = response.chunk().await {
        received.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(
        received.contains("\"code\":\"server_shutting_down\""),
        "{received}"
    );
    assert!(!received.contains("[DONE]"), "{received}");
    let code = tokio::task::spawn_blocking(move || {
        let code = served.wait(Duration::from_secs(20));
        (code, served.logs())
    })
    .await
    .unwrap();
    assert_eq!(code.0, Some(0), "{}", code.1);
}

const URL_PASSWORD: &str = "url-pass-7Hq2Lm9x";
const BACKEND_KEY: &str = "sk-backend-4Fz8Rt1Wq6Yp";

/// A route's credentials (a password in its URL, its API key) never leave the gateway:
/// not in `x-switchboard-upstream`, `/healthz`, `/metrics` or the log, and not in the
/// backend's own error text, which quotes what it was sent (to the client, as a whole
/// answer and as a stream's error event). The backend still gets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_credentials_never_leave_the_gateway() {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ops:{URL_PASSWORD}"));
    // Each route's backend quotes the credential it got.
    let quoted = [
        format!("invalid credentials: Basic {basic} (password {URL_PASSWORD})"),
        format!("invalid credentials: Bearer {BACKEND_KEY}"),
    ];
    let backend = ScriptedServer::responding(move |request| {
        if request.body["messages"][0]["content"] == "fail" {
            let quoted = &quoted[usize::from(!request.head.contains("authorization: basic"))];
            Reply::json(400, &json!({"error": {"message": quoted, "type": "invalid_request_error"}}))
        } else if request.body["stream"] == true {
            OpenAiScript::new().text("hello").finish("stop", 3, 1).reply()
        } else {
            Reply::json(200, &json!({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}))
        }
    })
    .await;
    let with_password = backend
        .base
        .replace("http://", &format!("http://ops:{URL_PASSWORD}@"));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchboard.toml");
    std::fs::write(
        &config,
        format!(
            "characters = \"{}\"\nupstream_header = true\n\
             [[route]]\nname = \"basic\"\nprovider = \"openai\"\nurl = \"{with_password}/v1\"\nmodel = \"m\"\n\
             [[route]]\nname = \"keyed\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\napi_key_env = \"ROUTE_KEY\"\n",
            dir.path().display(),
            backend.base
        ),
    )
    .unwrap();
    let served = common::Served::start(
        &config,
        "127.0.0.1:0",
        &[("ROUTE_KEY", BACKEND_KEY), ("RUST_LOG", "debug")],
    );
    let client = reqwest::Client::new();
    let post = |body: Value| {
        client
            .post(format!("{}/v1/chat/completions", served.base))
            .json(&body)
            .send()
    };
    let mut shown = String::new();
    for route in ["basic", "keyed"] {
        let answer = post(chat(route)).await.unwrap();
        assert_eq!(answer.status(), 200);
        shown.push_str(&format!("{:?}\n", answer.headers()));
        let streamed = post(json!({"model": route, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]}))
        .await
        .unwrap();
        shown.push_str(&format!("{:?}\n", streamed.headers()));
        shown.push_str(&streamed.text().await.unwrap());
        for stream in [false, true] {
            let failed = post(json!({"model": route, "stream": stream,
                "messages": [{"role": "user", "content": "fail"}]}))
            .await
            .unwrap();
            assert_eq!(failed.status(), 400);
            let text = failed.text().await.unwrap();
            assert!(text.contains("invalid credentials"), "{text}");
            shown.push_str(&text);
        }
    }
    for path in ["/healthz", "/metrics"] {
        let text = client
            .get(format!("{}{path}", served.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains(&backend.base.replace("http://", "")),
            "{path}: {text}"
        );
        shown.push_str(&text);
    }
    shown.push_str(&served.log());
    for secret in [URL_PASSWORD, BACKEND_KEY, basic.as_str()] {
        assert!(!shown.contains(secret), "{secret} shown:\n{shown}");
    }
    assert!(
        shown.contains(&format!(
            "x-switchboard-upstream\": \"{}/v1\"",
            backend.base
        )),
        "{shown}"
    );
    // The backend got both credentials.
    let heads: Vec<String> = backend
        .requests()
        .into_iter()
        .map(|request| request.head)
        .collect();
    for sent in [format!("basic {basic}"), format!("bearer {BACKEND_KEY}")] {
        let sent = sent.to_lowercase();
        assert!(
            heads.iter().any(|head| head.contains(&sent)),
            "{sent}: {heads:?}"
        );
    }
}

/// Sockets that send nothing, or one byte, are closed at the header timeout counted from
/// accept (whatever has arrived), not held to the idle timeout: with every connection slot
/// taken by them, a real request is answered once they are gone.
#[tokio::test]
async fn silent_and_one_byte_connections_end_at_the_header_timeout() {
    let served = Served::start(
        "max_connections = 8\nheader_read_timeout_secs = 2\nidle_timeout_secs = 60\n",
        None,
    );
    let mut silent = Vec::new();
    for index in 0..12 {
        let mut socket = TcpStream::connect(served.address()).await.unwrap();
        if index % 2 == 0 {
            socket.write_all(b"P").await.unwrap();
        }
        silent.push(socket);
    }
    let started = std::time::Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        reqwest::get(format!("{}/healthz", served.base)),
    )
    .await
    .unwrap_or_else(|_| panic!("/healthz waited for the idle timeout:\n{}", served.logs()))
    .unwrap();
    assert_eq!(health.status(), 200);
    eprintln!(
        "/healthz behind 12 silent sockets answered in {:?}",
        started.elapsed()
    );
    // Each silent socket was closed by the gateway.
    for mut socket in silent {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut byte))
            .await
            .expect("a silent socket stayed open");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
}

/// A backend that accepts connections and never answers (nor closes them).
async fn silent_backend() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    base
}

/// Issue 22 items 4 to 6 replayed against a real process: a route over a good replica, one
/// that answers 200 with a web page and one that never answers gets every request
/// answered by the good one, well inside the deadline, and ejects the other two; a count
/// of tokens from a route whose replica never answers comes in seconds, as an estimate.
#[tokio::test]
async fn bad_replicas_are_stepped_around_and_ejected() {
    let good = ScriptedServer::responding(|_: &switchboard_testkit::Captured| {
        OpenAiScript::new()
            .text("from good")
            .finish("stop", 1, 1)
            .reply()
    })
    .await;
    let page = ScriptedServer::responding(|_: &switchboard_testkit::Captured| {
        switchboard_testkit::Reply::ok(
            "text/html",
            "<html><body>It works!</body></html>",
            switchboard_testkit::Chunking::Whole,
        )
    })
    .await;
    let silent = silent_backend().await;
    let served = Served::start(
        &format!(
            "request_timeout_secs = 6\n[[route]]\nname = \"pool\"\nprovider = \"openai\"\nurls = [\"{}\", \"{}\", \"{silent}\"]\nmodel = \"m\"\neject_after = 1\neject_secs = 60\n{}",
            good.base,
            page.base,
            route("alone", &silent)
        ),
        None,
    );
    let client = reqwest::Client::new();
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = std::time::Instant::now();
        let answer = client
            .post(format!("{}/v1/chat/completions", served.base))
            .json(&chat("pool"))
            .send()
            .await
            .unwrap();
        slowest = slowest.max(started.elapsed());
        let status = answer.status();
        let body: Value = answer.json().await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["choices"][0]["message"]["content"], "from good");
    }
    assert!(
        slowest < Duration::from_secs(5),
        "{slowest:?} of a 6 s deadline"
    );
    let health: Value = client
        .get(format!("{}/healthz", served.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for url in [&page.base, &silent] {
        let replica = health["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|backend| backend["route"] == "pool" && &backend["url"] == url)
            .unwrap();
        assert_eq!(replica["state"], "ejected", "{replica}");
    }
    let started = std::time::Instant::now();
    let count = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .post(format!("{}/v1/messages/count_tokens", served.base))
            .json(&chat("alone"))
            .send(),
    )
    .await
    .expect("count_tokens answers well inside the deadline")
    .unwrap();
    let took = started.elapsed();
    assert_eq!(count.status(), 200);
    assert_eq!(count.headers()["x-switchboard-token-count"], "estimate");
    assert!(took < Duration::from_secs(4), "{took:?}");
    eprintln!("bad replicas: slowest request {slowest:?}; count_tokens {took:?}");
}

/// Samples the process's RSS every 20 ms while `work` runs; the highest seen, in MiB.
async fn peak_rss_during<T>(
    served: &Served,
    work: impl std::future::Future<Output = T>,
) -> (T, f64) {
    let pid = served.child.id();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let sampler = std::thread::spawn(move || {
        let mut peak: f64 = 0.0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(rss) = switchboard_testkit::rss_mib(pid) {
                peak = peak.max(rss);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let out = work.await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    (out, sampler.join().unwrap())
}

/// A scripted OpenAI backend answering "ok" `count` times.
async fn ok_backend(count: usize) -> ScriptedServer {
    ScriptedServer::start(
        (0..count)
            .map(|_| OpenAiScript::new().text("ok").finish("stop", 1, 1).reply())
            .collect(),
    )
    .await
}

/// A backend that answers every request, on every connection, with one short streamed
/// answer and keeps nothing of what it was sent (a scripted backend keeps every request).
async fn forgetful_backend() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let answer = OpenAiScript::new().text("ok").finish("stop", 1, 1).body();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut socket = tokio::io::BufReader::new(socket);
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end().to_ascii_lowercase();
                        if line.is_empty() {
                            break;
                        }
                        if let Some(value) = line.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if socket.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                        answer.len()
                    );
                    if socket
                        .get_mut()
                        .write_all(format!("{head}{answer}").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    base
}

/// Issue 22, item 1: a stored conversation continued by `previous_response_id` meets
/// `max_body_bytes` like a request that sent it whole. Twelve chained turns of 600 KB
/// under a 1 MiB limit, then 16 concurrent 100-byte continuations: the chain is refused
/// with 413 `conversation_too_large` once it passes the limit, no backend request is larger
/// than the limit allows, and memory stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continued_conversations_meet_the_body_limit() {
    let backend = ok_backend(40).await;
    let served = Served::start(
        &format!(
            "max_body_bytes = 1048576\n[responses]\nstore_max_bytes = 268435456\n{}",
            route("m", &backend.base)
        ),
        None,
    );
    let client = reqwest::Client::new();
    let url = format!("{}/v1/responses", served.base);
    let before = served.rss_mib();
    let mut previous: Option<String> = None;
    let mut refused = None;
    let mut chained = 0;
    for turn in 0..12 {
        let mut body = json!({"model": "m", "input": format!("{turn}{}", "x".repeat(600_000))});
        if let Some(id) = &previous {
            body["previous_response_id"] = json!(id);
        }
        let answer = client.post(&url).json(&body).send().await.unwrap();
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap();
        if status == 200 {
            previous = Some(body["id"].as_str().unwrap().to_owned());
            chained += 1;
        } else {
            refused = Some((status, body));
            break;
        }
    }
    let last = previous.unwrap();
    let (statuses, peak) = peak_rss_during(&served, async {
        let body =
            json!({"model": "m", "input": "go on", "previous_response_id": last, "store": false});
        let continuations: Vec<_> = (0..16)
            .map(|_| {
                let sent = client.post(&url).json(&body).send();
                tokio::spawn(async move { sent.await.unwrap().status().as_u16() })
            })
            .collect();
        let mut statuses = Vec::new();
        for continuation in continuations {
            statuses.push(continuation.await.unwrap());
        }
        statuses
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = served.rss_mib();
    let largest = backend
        .requests()
        .iter()
        .map(|request| request.body.to_string().len())
        .max()
        .unwrap();
    eprintln!(
        "continued conversations: {chained} turns chained, RSS {before:.0} MiB before, peak {peak:.0} MiB during 16 continuations, {after:.0} MiB after; largest backend request {largest} bytes; continuations answered {statuses:?}"
    );
    let (status, error) = refused.expect("the chain passes the body limit and is refused");
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "conversation_too_large", "{error}");
    assert_eq!(error["error"]["param"], "previous_response_id", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1048576"),
        "{error}"
    );
    assert!(
        largest < 2 * 1_048_576,
        "a backend request of {largest} bytes"
    );
    assert!(peak - before < 300.0, "{before} → peak {peak}");
    assert!(after - before < 200.0, "{before} → {after}");
}

/// Issue 22, item 10: a 4 MB `pattern` in a tool's schema is refused with a 400 naming it,
/// before any regex is compiled; memory does not move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_schema_pattern_is_refused_before_it_is_compiled() {
    let served = Served::start("", None);
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", served.base);
    let before = served.rss_mib();
    let mut body = chat("no-such-route");
    body["tools"] = json!([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "pattern": "a".repeat(4_000_000)}}}}}]);
    let (answer, peak) = peak_rss_during(&served, async {
        client.post(&url).json(&body).send().await.unwrap()
    })
    .await;
    let status = answer.status().as_u16();
    let error: Value = answer.json().await.unwrap();
    let after = served.rss_mib();
    eprintln!(
        "4 MB pattern: RSS {before:.0} MiB before, peak {peak:.0} MiB, {after:.0} MiB after; answered {status}"
    );
    assert_eq!(status, 400, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("properties.a.pattern") && message.contains("at most 4096"),
        "{message}"
    );
    assert!(peak - before < 100.0, "{before} → peak {peak}");
    // The most a list may hold: 128 patterns of 4000 bytes, compiled.
    let tools: Vec<Value> = (0..128)
        .map(|index| {
            json!({"type": "function", "function": {"name": format!("f{index}"), "parameters": {
                "type": "object", "properties": {"a": {"type": "string", "pattern": format!("{index}{}", "a".repeat(3996))}}}}})
        })
        .collect();
    body["tools"] = Value::Array(tools);
    let (status, most) = peak_rss_during(&served, async {
        client.post(&url).json(&body).send().await.unwrap().status()
    })
    .await;
    eprintln!("128 patterns of 4000 bytes: peak {most:.0} MiB; answered {status}");
    assert_eq!(status, 404, "compiled, then no such route");
    assert!(most - before < 400.0, "{before} → peak {most}");
}

/// Issue 22, item 15: the store counts what its entries hold. Sixty responses of 30,001
/// one-letter messages each (about 1 MB of JSON, several times that in memory) under the
/// default 64 MiB bound: the process grows by about the bound, not by what the JSON length
/// would let in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tiny_items_are_counted_at_what_they_hold() {
    let backend = forgetful_backend().await;
    let served = Served::start(&route("m", &backend), None);
    let client = reqwest::Client::new();
    let url = format!("{}/v1/responses", served.base);
    let input: Vec<Value> = (0..30_001)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let body = json!({"model": "m", "input": input});
    let before = served.rss_mib();
    let mut ids = Vec::new();
    for _ in 0..60 {
        let answer = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let answer: Value = answer.json().await.unwrap();
        ids.push(answer["id"].as_str().unwrap().to_owned());
    }
    let after = served.rss_mib();
    let mut kept = 0;
    for id in &ids {
        let found = client.get(format!("{url}/{id}")).send().await.unwrap();
        kept += usize::from(found.status() == 200);
    }
    eprintln!(
        "tiny items: RSS {before:.0} MiB before, {after:.0} MiB after 60 stored responses of 30,001 items; {kept} of them kept"
    );
    assert!((1..60).contains(&kept), "{kept} kept");
    assert!(after - before < 160.0, "{before} → {after}");
}
