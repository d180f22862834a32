//! The gateway's added latency: the same requests sent to a fast backend directly and
//! through the gateway, side by side in one run, at a fixed request rate.
//!
//! Open loop: a pacing thread launches each request at its scheduled instant whether or not
//! earlier ones have finished, and latency runs from that instant, so a stall shows up in the
//! figures instead of quietly lowering the rate (no coordinated omission). Direct and
//! gateway requests are interleaved (gateway ones half a period after direct ones), each
//! path at the full rate, so both see the same machine noise. One pooled HTTP client sends
//! both. The backend answers instantly from memory; the gateway runs on its own runtime, as
//! it would in its own process.
//!
//! Cases: a tool call whole and streamed (time to the end of the body, after `[DONE]`), on a
//! native route and on a prompted (hermes markup) route. Then access control: the native
//! cases through a gateway with a key whose request and token limits are checked on every
//! request, counted in process and in Redis (a real `redis-server` on loopback, when one is
//! installed), each against the gateway without keys in the same interleaved run.
//!
//! `cargo bench -p switchboard-server --bench gateway_latency -- [--rate N] [--seconds S] [--warmup S]`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_bench::{Summary, heading, report, summarize};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{OpenAiScript, RedisServer};

const NATIVE_MODEL: &str = "fast-native";
const HERMES_MODEL: &str = "fast-hermes";
const CALL_ID: &str = "call_Xq3R9s8T7u6V5w4Y3z2A1b0C";
const ARGUMENTS: &str = r#"{"city": "Paris", "unit": "celsius"}"#;
const SSE_DONE: &[u8] = b"data: [DONE]\n\n";
const BENCH_KEY: &str = "sk-sb-BenchKey0000000000000000000000000000000";

type Failure = String;

fn main() -> Result<(), Failure> {
    let settings = Settings::from_args(std::env::args().skip(1))?;
    let load = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let gateway_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("gateway")
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;

    let backend = load.block_on(start_backend())?;
    let gateway = gateway_runtime.block_on(start_gateway(&backend, ""))?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| error.to_string())?;

    println!(
        "gateway latency: {} requests/s per path, {} s measured after {} s warm-up per case; load average {}",
        settings.rate,
        settings.measured.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        load_average()
    );
    for case in Case::ALL {
        let direct = Target::new(&client, &backend, case, Via::Direct);
        let through = Target::new(&client, &gateway.base_url(), case, Via::Gateway);
        load.block_on(check_answers(&direct, &through, case))?;
        run(&load, &settings, &direct, &through, settings.warmup)?;
        let (mut direct_times, mut gateway_times, lag) =
            run(&load, &settings, &direct, &through, settings.measured)?;
        let direct_summary = summarize(&mut direct_times);
        let gateway_summary = summarize(&mut gateway_times);
        heading(case.name);
        report("direct to the backend", &direct_summary);
        report("through the gateway", &gateway_summary);
        print_added("added by the gateway", &direct_summary, &gateway_summary);
        println!("{:<48} p99 {:>12?}", "(launch lag of the pacer)", lag.p99);
    }

    // Access control: the same gateway without keys against one with a limited key.
    let redis = redis_installed().then(RedisServer::start);
    let mut keyed = vec![(
        "key + limits in process",
        gateway_runtime.block_on(start_gateway(&backend, &access_settings(None)))?,
    )];
    match &redis {
        Some(redis) => keyed.push((
            "key + limits in Redis",
            gateway_runtime
                .block_on(start_gateway(&backend, &access_settings(Some(&redis.url))))?,
        )),
        None => println!("\nredis-server is not installed: the Redis case is skipped"),
    }
    for (name, keyed_gateway) in &keyed {
        for case in &Case::ALL[..2] {
            let open = Target::new(&client, &gateway.base_url(), *case, Via::Gateway);
            let with_key = Target::new(&client, &keyed_gateway.base_url(), *case, Via::Gateway)
                .with_key(BENCH_KEY);
            load.block_on(check_answers(&open, &with_key, *case))?;
            run(&load, &settings, &open, &with_key, settings.warmup)?;
            let (mut open_times, mut keyed_times, lag) =
                run(&load, &settings, &open, &with_key, settings.measured)?;
            let open_summary = summarize(&mut open_times);
            let keyed_summary = summarize(&mut keyed_times);
            heading(&format!("{}: {name} vs no keys", case.name));
            report("through the gateway, no keys", &open_summary);
            report(&format!("through the gateway, {name}"), &keyed_summary);
            print_added(
                &format!("added by the {name}"),
                &open_summary,
                &keyed_summary,
            );
            println!("{:<48} p99 {:>12?}", "(launch lag of the pacer)", lag.p99);
        }
    }
    println!("\nload average at the end: {}", load_average());
    for (_, keyed_gateway) in keyed {
        gateway_runtime
            .block_on(keyed_gateway.stop())
            .map_err(|error| error.to_string())?;
    }
    gateway_runtime
        .block_on(gateway.stop())
        .map_err(|error| error.to_string())
}

/// A key with limits high enough never to refuse, so every request is checked and counted
/// and every answer's tokens charged; shared through Redis when `state` is given.
fn access_settings(state: Option<&str>) -> String {
    let digest: String = Sha256::digest(BENCH_KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let state = state.map_or(String::new(), |url| format!("state = \"{url}\"\n"));
    format!(
        "{state}[[key]]\nname = \"bench\"\nsha256 = \"{digest}\"\nrequests_per_minute = 1000000000\ntokens_per_minute = 1000000000000\n"
    )
}

fn redis_installed() -> bool {
    std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Rate and durations, from `--rate`, `--seconds` and `--warmup` (cargo's own `--bench`
/// flag is ignored).
struct Settings {
    rate: u32,
    measured: Duration,
    warmup: Duration,
}

impl Settings {
    fn from_args(mut args: impl Iterator<Item = String>) -> Result<Self, Failure> {
        let mut settings = Settings {
            rate: 1000,
            measured: Duration::from_secs(4),
            warmup: Duration::from_secs(1),
        };
        while let Some(arg) = args.next() {
            let mut value = |name: &str| -> Result<f64, Failure> {
                args.next()
                    .and_then(|value| value.parse::<f64>().ok())
                    .filter(|value| *value > 0.0)
                    .ok_or_else(|| format!("{name} needs a positive number"))
            };
            match arg.as_str() {
                "--rate" => settings.rate = value("--rate")? as u32,
                "--seconds" => settings.measured = Duration::from_secs_f64(value("--seconds")?),
                "--warmup" => settings.warmup = Duration::from_secs_f64(value("--warmup")?),
                _ => {}
            }
        }
        Ok(settings)
    }
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    route: &'static str,
    backend_model: &'static str,
    stream: bool,
}

impl Case {
    const ALL: [Case; 4] = [
        Case {
            name: "native route, tool call, whole",
            route: "native",
            backend_model: NATIVE_MODEL,
            stream: false,
        },
        Case {
            name: "native route, tool call, streamed (to [DONE])",
            route: "native",
            backend_model: NATIVE_MODEL,
            stream: true,
        },
        Case {
            name: "prompted hermes route, tool call, whole",
            route: "hermes",
            backend_model: HERMES_MODEL,
            stream: false,
        },
        Case {
            name: "prompted hermes route, tool call, streamed (to [DONE])",
            route: "hermes",
            backend_model: HERMES_MODEL,
            stream: true,
        },
    ];
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    Direct,
    Gateway,
}

/// One side of a comparison: where to post, and the request body, serialised once.
#[derive(Clone)]
struct Target {
    client: reqwest::Client,
    url: String,
    body: Bytes,
    stream: bool,
    /// Sent as `Authorization: Bearer …`.
    key: Option<&'static str>,
}

impl Target {
    fn new(client: &reqwest::Client, base: &str, case: Case, via: Via) -> Self {
        let model = match via {
            Via::Direct => case.backend_model,
            Via::Gateway => case.route,
        };
        let city = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]});
        let body = json!({
            "model": model,
            "stream": case.stream,
            "messages": [
                {"role": "system", "content": "You are a weather assistant."},
                {"role": "user", "content": "What is the weather in Paris?"}
            ],
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": city}},
                {"type": "function", "function": {"name": "get_time", "description": "Local time in a city", "parameters": city}}
            ]
        });
        Self {
            client: client.clone(),
            url: format!("{base}/v1/chat/completions"),
            body: Bytes::from(body.to_string()),
            stream: case.stream,
            key: None,
        }
    }

    fn with_key(mut self, key: &'static str) -> Self {
        self.key = Some(key);
        self
    }

    /// Sends the request and reads the whole body; checks it is a complete success.
    async fn call(&self) -> Result<Bytes, Failure> {
        let mut request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(self.body.clone());
        if let Some(key) = self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|error| error.to_string())?;
        let status = response.status();
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            body.extend_from_slice(&chunk.map_err(|error| error.to_string())?);
        }
        if !status.is_success() {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        if self.stream && !body.ends_with(SSE_DONE) {
            return Err(format!(
                "the stream did not end with [DONE]: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(Bytes::from(body))
    }
}

/// Before timing anything: the gateway's answer really is a tool call, so the figures are
/// about the work the benchmark claims to measure.
async fn check_answers(direct: &Target, through: &Target, case: Case) -> Result<(), Failure> {
    direct.call().await?;
    let answer = through.call().await?;
    let text = String::from_utf8_lossy(&answer);
    let call = if case.stream {
        text.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find_map(|chunk| {
                chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["name"]
                    .as_str()
                    .map(str::to_owned)
            })
    } else {
        serde_json::from_str::<Value>(&text).ok().and_then(|body| {
            body["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
                .as_str()
                .map(str::to_owned)
        })
    };
    let finished = text.contains(r#""finish_reason":"tool_calls""#);
    if call.as_deref() == Some("get_weather") && finished {
        Ok(())
    } else {
        Err(format!(
            "{}: the gateway's answer is not a get_weather tool call:\n{text}",
            case.name
        ))
    }
}

/// Runs both paths, interleaved, for `duration`; returns the latencies of each and the
/// pacer's launch lag.
fn run(
    runtime: &tokio::runtime::Runtime,
    settings: &Settings,
    direct: &Target,
    through: &Target,
    duration: Duration,
) -> Result<(Vec<Duration>, Vec<Duration>, Summary), Failure> {
    let period = Duration::from_secs(1) / settings.rate;
    let count = (duration.as_secs_f64() * f64::from(settings.rate)) as u32;
    let (results, received) = std_mpsc::channel::<(Via, Result<Duration, Failure>)>();
    let handle = runtime.handle().clone();
    let mut lags = Vec::with_capacity(count as usize * 2);
    let start = Instant::now() + Duration::from_millis(10);
    for index in 0..count {
        for (via, target, offset) in [
            (Via::Direct, direct, Duration::ZERO),
            (Via::Gateway, through, period / 2),
        ] {
            let scheduled = start + period * index + offset;
            if let Some(wait) = scheduled.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            lags.push(scheduled.elapsed());
            let target = target.clone();
            let results = results.clone();
            handle.spawn(async move {
                let outcome = target.call().await.map(|_| scheduled.elapsed());
                let _ = results.send((via, outcome));
            });
        }
    }
    drop(results);
    let mut direct_times = Vec::with_capacity(count as usize);
    let mut gateway_times = Vec::with_capacity(count as usize);
    let mut failures = Vec::new();
    for _ in 0..count * 2 {
        let (via, outcome) = received
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "requests did not finish within 30 s".to_owned())?;
        match (via, outcome) {
            (Via::Direct, Ok(latency)) => direct_times.push(latency),
            (Via::Gateway, Ok(latency)) => gateway_times.push(latency),
            (_, Err(failure)) => failures.push(failure),
        }
    }
    if let Some(first) = failures.first() {
        return Err(format!(
            "{} of {} requests failed; the first: {first}",
            failures.len(),
            count * 2
        ));
    }
    Ok((direct_times, gateway_times, summarize(&mut lags)))
}

fn print_added(label: &str, direct: &Summary, gateway: &Summary) {
    let added =
        |via: Duration, direct: Duration| via.as_secs_f64() * 1e3 - direct.as_secs_f64() * 1e3;
    println!(
        "{:<48} median {:>9.3} ms  p99 {:>9.3} ms",
        label,
        added(gateway.median, direct.median),
        added(gateway.p99, direct.p99)
    );
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// The backend's canned answers: a `get_weather` call, natively or as hermes markup, whole
/// or streamed.
struct Answers {
    native_whole: Bytes,
    native_stream: Bytes,
    hermes_whole: Bytes,
    hermes_stream: Bytes,
}

impl Answers {
    fn new() -> Self {
        let markup = format!(
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {ARGUMENTS}}}\n</tool_call>"
        );
        let usage = json!({"prompt_tokens": 180, "completion_tokens": 24, "total_tokens": 204});
        let whole = |message: Value, reason: &str| {
            Bytes::from(
                json!({"id": "chatcmpl-fast", "object": "chat.completion", "created": 0, "model": "fast",
                    "choices": [{"index": 0, "message": message, "finish_reason": reason}], "usage": usage})
                .to_string(),
            )
        };
        let (head, tail) = ARGUMENTS.split_at(ARGUMENTS.len() / 2);
        let native_stream = OpenAiScript::new()
            .tool_call(CALL_ID, "get_weather", &[head, tail])
            .finish("tool_calls", 180, 24)
            .body();
        // The model's text arrives in small pieces, as tokens do.
        let pieces: Vec<String> = markup
            .as_bytes()
            .chunks(6)
            .map(|piece| String::from_utf8_lossy(piece).into_owned())
            .collect();
        let hermes_stream = pieces
            .iter()
            .fold(OpenAiScript::new(), |script, piece| script.text(piece))
            .finish("stop", 180, 24)
            .body();
        Self {
            native_whole: whole(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": CALL_ID, "type": "function",
                    "function": {"name": "get_weather", "arguments": ARGUMENTS}}]}),
                "tool_calls",
            ),
            native_stream: Bytes::from(native_stream),
            hermes_whole: whole(json!({"role": "assistant", "content": markup}), "stop"),
            hermes_stream: Bytes::from(hermes_stream),
        }
    }
}

#[derive(Deserialize)]
struct Asked {
    model: String,
    #[serde(default)]
    stream: bool,
}

async fn answer(State(answers): State<Arc<Answers>>, body: Bytes) -> Response {
    let (bytes, content_type) = match serde_json::from_slice::<Asked>(&body) {
        Ok(asked) => match (asked.model == HERMES_MODEL, asked.stream) {
            (false, false) => (answers.native_whole.clone(), "application/json"),
            (false, true) => (answers.native_stream.clone(), "text/event-stream"),
            (true, false) => (answers.hermes_whole.clone(), "application/json"),
            (true, true) => (answers.hermes_stream.clone(), "text/event-stream"),
        },
        Err(error) => (
            Bytes::from(json!({"error": {"message": error.to_string()}}).to_string()),
            "application/json",
        ),
    };
    let mut response = Response::new(Body::from(bytes));
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

/// The fast backend, on the load runtime; returns its base URL.
async fn start_backend() -> Result<String, Failure> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| error.to_string())?;
    let address = listener.local_addr().map_err(|error| error.to_string())?;
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .with_state(Arc::new(Answers::new()));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{address}"))
}

/// The gateway with a native and a prompted route, both to the fast backend; `access`
/// holds top-level settings and `[[key]]` tables.
async fn start_gateway(backend: &str, access: &str) -> Result<RunningGateway, Failure> {
    let config = Config::from_toml(&format!(
        r#"
listen = "127.0.0.1:0"
characters = "benches/no-characters-here"
{access}

[[route]]
name = "native"
provider = "openai"
url = "{backend}/v1"
model = "{NATIVE_MODEL}"

[[route]]
name = "hermes"
provider = "openai"
url = "{backend}/v1"
model = "{HERMES_MODEL}"
tool_calling = "prompted"
format = "hermes"
"#
    ))?;
    RunningGateway::start(&config, &|_| None).await
}
