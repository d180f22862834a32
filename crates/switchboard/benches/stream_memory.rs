//! What a burst of concurrent streams costs the gateway in memory, and what it keeps after.
//!
//! A `switchboard serve` process (the real binary, its allocator and settings; the clients
//! and the backend live in this process, so the gateway's resident memory is its own) in
//! front of a slow streaming backend: each request with tools (`--tools`, a dozen by
//! default: about 4 KB of JSON) gets a streamed OpenAI answer of `--chunks` words, one every
//! `--interval-ms`, then a tool call. For each step of the plan, a fresh gateway is started,
//! warmed with one request, and given bursts of concurrent streamed requests; its resident
//! memory (VmRSS from /proc) is read at idle, at the plateau (every stream under way: the
//! highest sample while they run), at the end of the burst, and `--settle` seconds later.
//! The table gives each figure in MiB, the plateau's cost per stream in KiB, and what is
//! kept after settling above the idle level.
//!
//! `--plan 1000x1,3000x3` (the default) is one gateway given one burst of 1,000 streams and
//! another given three bursts of 3,000; `--streams N --bursts B` is the plan `NxB`;
//! `--quick` is `--plan 300x1,1000x2 --settle 15 --chunks 20`.
//!
//! `STREAM_MEMORY_BIN=path` measures that binary instead of the one cargo built.
//!
//! `cargo bench -p switchboard --bench stream_memory -- [--plan NxB,...] [--quick] [--settle S] [--chunks C] [--interval-ms MS] [--tools T] [--ramp-ms MS]`
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)] // a benchmark prints its figures and stops at the first failure

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Options {
    /// Steps: a fresh gateway each, given `bursts` bursts of `streams` streams.
    plan: Vec<(usize, usize)>,
    settle: Duration,
    chunks: usize,
    interval: Duration,
    tools: usize,
    /// Time over which a burst's streams are opened, evenly.
    ramp: Duration,
}

fn options() -> Options {
    let mut options = Options {
        plan: vec![(1000, 1), (3000, 3)],
        settle: Duration::from_secs(60),
        chunks: 40,
        interval: Duration::from_millis(500),
        tools: 12,
        ramp: Duration::ZERO,
    };
    let args: Vec<String> = std::env::args().collect();
    let text = |at: usize| -> &str {
        args.get(at + 1)
            .unwrap_or_else(|| panic!("{} needs a value", args[at]))
    };
    let value = |at: usize| -> u64 {
        text(at)
            .parse()
            .unwrap_or_else(|_| panic!("{} needs a number", args[at]))
    };
    let (mut streams, mut bursts) = (None, None);
    if args.iter().any(|arg| arg == "--quick") {
        options.plan = vec![(300, 1), (1000, 2)];
        options.settle = Duration::from_secs(15);
        options.chunks = 20;
    }
    for (at, arg) in args.iter().enumerate() {
        match arg.as_str() {
            "--plan" => {
                options.plan = text(at)
                    .split(',')
                    .map(|step| {
                        let (streams, bursts) = step.split_once('x').unwrap_or((step, "1"));
                        (
                            streams.trim().parse().expect("--plan takes NxB,..."),
                            bursts.trim().parse().expect("--plan takes NxB,..."),
                        )
                    })
                    .collect();
            }
            "--streams" => streams = Some(value(at) as usize),
            "--bursts" => bursts = Some(value(at) as usize),
            "--settle" => options.settle = Duration::from_secs(value(at)),
            "--chunks" => options.chunks = value(at) as usize,
            "--interval-ms" => options.interval = Duration::from_millis(value(at)),
            "--tools" => options.tools = value(at) as usize,
            "--ramp-ms" => options.ramp = Duration::from_millis(value(at)),
            _ => {}
        }
    }
    if streams.is_some() || bursts.is_some() {
        options.plan = vec![(streams.unwrap_or(3000), bursts.unwrap_or(1))];
    }
    options
}

/// Tools as a coding agent offers them, with described parameters (a dozen: about 4 KB).
fn tools(count: usize) -> serde_json::Value {
    let tools: Vec<serde_json::Value> = (0..count)
        .map(|index| {
            serde_json::json!({"type": "function", "function": {
                "name": format!("tool_{index}"),
                "description": "Runs one step of the agent's work on the files of the project it was started in.",
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "A path relative to the project's root"},
                    "content": {"type": "string", "description": "What to write, or the pattern to find"}},
                    "required": ["path"]}}})
        })
        .collect();
    serde_json::Value::Array(tools)
}

/// Reads one HTTP request (head and `content-length` body) from `socket`; false at its end.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |value| value.trim().parse().unwrap_or(0));
            if buffer.len() >= end + 4 + length {
                buffer.drain(..end + 4 + length);
                return true;
            }
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
        }
    }
}

fn chunk(data: &str) -> Vec<u8> {
    let event = format!("data: {data}\n\n");
    format!("{:x}\r\n{event}\r\n", event.len()).into_bytes()
}

/// The slow backend: every request gets `chunks` words, one per `interval`, then a call.
async fn backend(chunks: usize, interval: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                while read_request(&mut socket, &mut buffer).await {
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let word = r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}"#;
                    for _ in 0..chunks {
                        tokio::time::sleep(interval).await;
                        if socket.write_all(&chunk(word)).await.is_err() {
                            return;
                        }
                    }
                    let mut end = chunk(
                        r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"tool_1","arguments":"{\"path\": \"src/main.rs\"}"}}]},"finish_reason":null}]}"#,
                    );
                    end.extend(chunk(r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":900,"completion_tokens":50,"total_tokens":950}}"#));
                    end.extend(chunk("[DONE]"));
                    end.extend_from_slice(b"0\r\n\r\n");
                    if socket.write_all(&end).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}/v1")
}

/// A `switchboard serve` process; killed when dropped.
struct Gateway {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start(backend: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("switchboard.toml");
        std::fs::write(
            &file,
            format!(
                "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n[[route]]\nname = \"coder\"\nprovider = \"openai\"\nurl = \"{backend}\"\nmodel = \"m\"\n",
                dir.path().join("none").display()
            ),
        )
        .unwrap();
        // `STREAM_MEMORY_BIN` measures another build of the binary (to compare two).
        let program = std::env::var_os("STREAM_MEMORY_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_switchboard").into());
        let mut child = Command::new(program)
            .args(["serve", "--config"])
            .arg(&file)
            .env("RUST_LOG", "warn,switchboard=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (found, address) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.split("listening on http://").nth(1) {
                    let _ = found.send(at.trim().to_owned());
                }
            }
        });
        let address = address
            .recv_timeout(Duration::from_secs(30))
            .expect("serve did not start");
        Self {
            child,
            address,
            _dir: dir,
        }
    }

    fn rss_mib(&self) -> f64 {
        switchboard_testkit::rss_mib(self.child.id()).expect("the gateway exited")
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One streamed request, read to its end; counts itself in `started` at its first bytes.
async fn stream(address: String, body: Arc<Vec<u8>>, started: Arc<AtomicUsize>) -> bool {
    let Ok(mut socket) = TcpStream::connect(&address).await else {
        return false;
    };
    if socket.write_all(&body).await.is_err() {
        return false;
    }
    let mut seen = false;
    let mut tail = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(read) => {
                if !seen {
                    seen = true;
                    started.fetch_add(1, Ordering::SeqCst);
                }
                tail.extend_from_slice(&chunk[..read]);
                if tail.windows(12).any(|window| window == b"data: [DONE]") {
                    return true;
                }
                let keep = tail.len().saturating_sub(12);
                tail.drain(..keep);
            }
        }
    }
}

/// One burst's figures, in MiB.
struct Burst {
    streams: usize,
    burst: usize,
    complete: usize,
    seconds: f64,
    idle: f64,
    plateau: f64,
    ended: f64,
    settled: f64,
}

#[tokio::main]
async fn main() {
    let options = options();
    // Every stream holds a socket here and two in the gateway.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let backend = backend(options.chunks, options.interval).await;
    let body = serde_json::to_vec(&serde_json::json!({
        "model": "coder", "stream": true, "max_tokens": 1024,
        "messages": [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test in src/main.rs."}],
        "tools": tools(options.tools)}))
    .unwrap();
    println!(
        "stream memory: streamed requests with {} tools ({} bytes each), {} words each {} ms apart; RSS {} s after each burst",
        options.tools,
        body.len(),
        options.chunks,
        options.interval.as_millis(),
        options.settle.as_secs()
    );
    let mut table = Vec::new();
    for &(streams, bursts) in &options.plan {
        let gateway = Gateway::start(&backend);
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            gateway.address,
            body.len()
        );
        let request = Arc::new([request.as_bytes(), &body].concat());
        // One request first, so idle is the gateway warmed up, as after its first client.
        let warm = stream(
            gateway.address.clone(),
            Arc::clone(&request),
            Arc::default(),
        );
        assert!(warm.await, "the warm-up stream failed");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = gateway.rss_mib();
        for burst in 1..=bursts {
            let figures = run_burst(&gateway, &request, streams, &options).await;
            let figures = Burst {
                streams,
                burst,
                idle,
                ..figures
            };
            print_row(&figures, &options);
            table.push(figures);
        }
    }
    println!();
    println!(
        "{:>7} {:>5} {:>9} {:>8} {:>9} {:>11} {:>8} {:>10} {:>9}",
        "streams",
        "burst",
        "complete",
        "idle",
        "plateau",
        "per stream",
        "at end",
        format!("{} s after", options.settle.as_secs()),
        "kept"
    );
    for row in &table {
        println!(
            "{:>7} {:>5} {:>9} {:>4.1} MiB {:>5.1} MiB {:>7.1} KiB {:>4.1} MiB {:>6.1} MiB {:>+5.1} MiB",
            row.streams,
            row.burst,
            format!("{}/{}", row.complete, row.streams),
            row.idle,
            row.plateau,
            per_stream_kib(row),
            row.ended,
            row.settled,
            row.settled - row.idle
        );
    }
}

/// The plateau's cost per stream, in KiB.
fn per_stream_kib(row: &Burst) -> f64 {
    (row.plateau - row.idle) * 1024.0 / row.streams as f64
}

fn print_row(row: &Burst, options: &Options) {
    println!(
        "{} streams, burst {}: {}/{} complete in {:.1} s; idle {:.1} MiB, plateau {:.1} MiB ({:.1} KiB per stream), at the end {:.1} MiB, {} s later {:.1} MiB ({:+.1} MiB over idle)",
        row.streams,
        row.burst,
        row.complete,
        row.streams,
        row.seconds,
        row.idle,
        row.plateau,
        per_stream_kib(row),
        row.ended,
        options.settle.as_secs(),
        row.settled,
        row.settled - row.idle
    );
}

/// Opens `streams` streams at once (over `--ramp-ms`), samples RSS until all have ended,
/// then waits `--settle`.
async fn run_burst(
    gateway: &Gateway,
    request: &Arc<Vec<u8>>,
    streams: usize,
    options: &Options,
) -> Burst {
    let started = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let mut running = Vec::with_capacity(streams);
    for index in 0..streams {
        let due = options.ramp.mul_f64(index as f64 / streams as f64);
        tokio::time::sleep_until((began + due).into()).await;
        running.push(tokio::spawn(stream(
            gateway.address.clone(),
            Arc::clone(request),
            Arc::clone(&started),
        )));
    }
    let mut plateau: f64 = 0.0;
    let all = running.len();
    let running = tokio::spawn(async move {
        let mut ok = 0;
        for stream in running {
            ok += usize::from(stream.await.unwrap_or(false));
        }
        ok
    });
    while !running.is_finished() {
        if started.load(Ordering::SeqCst) == all {
            plateau = plateau.max(gateway.rss_mib());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let complete = running.await.unwrap();
    let seconds = began.elapsed().as_secs_f64();
    let ended = gateway.rss_mib();
    tokio::time::sleep(options.settle).await;
    let settled = gateway.rss_mib();
    Burst {
        streams,
        burst: 0,
        complete,
        seconds,
        idle: 0.0,
        plateau,
        ended,
        settled,
    }
}
