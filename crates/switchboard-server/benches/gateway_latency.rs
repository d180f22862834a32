//! The gateway's added latency: the same requests sent to a fast backend directly and
//! through the gateway, side by side in one run, at a fixed request rate.
//!
//! Open loop: a pacing thread launches each request at its scheduled instant whether or not
//! earlier ones have finished, and latency runs from that instant, so a stall shows up in the
//! figures instead of quietly lowering the rate (no coordinated omission). Direct and
//! gateway requests are interleaved (evenly spaced within each period, in an order that
//! runs through every permutation from one period to the next), each path at the full
//! rate, so all see the same machine noise and each follows every other equally often.
//! One pooled HTTP client sends both. The backend answers instantly from memory; the
//! gateway runs on its own runtime, as it would in its own process.
//!
//! Cases: a tool call whole and streamed (time to the end of the body, after `[DONE]`), on a
//! native route and on a prompted (hermes markup) route. The streamed native case also asks
//! through the Messages API (to `message_stop`) and the Responses API (to
//! `response.completed`), Gemini's API (`?alt=sse`, to its last event) and Ollama's
//! `/api/chat` (to its `done` line), interleaved in the same run, so the APIs' added latency
//! is compared under the same noise; the whole native case asks through Gemini's
//! `:generateContent` and Ollama's `/api/chat` too. Then access control: the native cases through a gateway
//! with a key whose request and token limits are checked on every request, counted in
//! process and in Redis (a real `redis-server` on loopback, when one is installed), each
//! against the gateway without keys in the same interleaved run, beside a second gateway
//! without keys: two gateways doing the same work differ by some microseconds, and a
//! difference below that is no difference.
//!
//! Then a tool search round: a Chat Completions request with 100 deferred tools and the
//! `tool_search` tool, whose model searches and then calls the tool found, so the gateway
//! runs the search and asks the model twice; against the same two backend rounds sent
//! directly, and against the client running the same loop itself through the gateway (every
//! tool offered, its own `tool_search` function answered by a second request). The search's
//! own cost is what the first adds over the direct rounds beyond a plain request's.
//!
//! `cargo bench -p switchboard-server --bench gateway_latency -- [--rate N] [--seconds S] [--warmup S] [--only TEXT]`
//! (`--only` runs the cases whose name contains TEXT)
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
/// The backend model of the search round: it searches first, then calls the tool found.
const SEARCH_MODEL: &str = "fast-search";
/// The deferred tools of the search round's request.
const DEFERRED_TOOLS: usize = 100;
const SEARCH_CALL_ID: &str = "call_Sr3R9s8T7u6V5w4Y3z2A1b0C";
const SEARCH_ARGUMENTS: &str = r#"{"query": "current weather in a city"}"#;
const CALL_ID: &str = "call_Xq3R9s8T7u6V5w4Y3z2A1b0C";
const ARGUMENTS: &str = r#"{"city": "Paris", "unit": "celsius"}"#;
const SSE_DONE: &[u8] = b"data: [DONE]\n\n";
const MESSAGE_STOP: &[u8] = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const RESPONSE_COMPLETED: &str = "event: response.completed\n";
const FINISH_REASON: &[u8] = b"\"finishReason\"";
/// What Ollama's last line holds, and no line before it.
const OLLAMA_DONE: &[u8] = b"\"done\":true";
const BENCH_KEY: &str = "sk-sb-BenchKey0000000000000000000000000000000";

/// The allocator the `switchboard` binary uses, so that the gateway measured here allocates
/// as the one users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    for case in Case::ALL.into_iter().filter(|case| {
        settings
            .only
            .as_ref()
            .is_none_or(|only| case.name.contains(only.as_str()))
    }) {
        let base = gateway.base_url();
        let direct = Target::new(&client, &backend, case, Via::Direct, Api::ChatCompletions);
        let mut paths = vec![(
            "through the gateway",
            "added by the gateway",
            Target::new(&client, &base, case, Via::Gateway, Api::ChatCompletions),
        )];
        for &api in case.also {
            let (through, added) = match api {
                Api::Messages => (
                    "through the gateway, Messages API",
                    "added by the gateway, Messages API",
                ),
                Api::Gemini => (
                    "through the gateway, Gemini API",
                    "added by the gateway, Gemini API",
                ),
                Api::Ollama => (
                    "through the gateway, Ollama API",
                    "added by the gateway, Ollama API",
                ),
                Api::Responses | Api::ChatCompletions => (
                    "through the gateway, Responses API",
                    "added by the gateway, Responses API",
                ),
            };
            paths.push((
                through,
                added,
                Target::new(&client, &base, case, Via::Gateway, api),
            ));
        }
        for (_, _, through) in &paths {
            load.block_on(check_answers(&direct, through, case))?;
        }
        let targets: Vec<&Target> = std::iter::once(&direct)
            .chain(paths.iter().map(|(_, _, through)| through))
            .collect();
        run(&load, &settings, &targets, settings.warmup)?;
        let before = load.block_on(overhead_histograms(&client, &base))?;
        let (times, lag) = run(&load, &settings, &targets, settings.measured)?;
        let after = load.block_on(overhead_histograms(&client, &base))?;
        let summaries: Vec<Summary> = times
            .into_iter()
            .map(|mut times| summarize(&mut times))
            .collect();
        heading(case.name);
        report("direct to the backend", &summaries[0]);
        for ((label, _, _), summary) in paths.iter().zip(&summaries[1..]) {
            report(label, summary);
        }
        for ((_, added, through), summary) in paths.iter().zip(&summaries[1..]) {
            print_added(added, &summaries[0], summary);
            let series = format!(
                "endpoint=\"{}\",kind=\"{}\"",
                through.api.endpoint(),
                case.kind()
            );
            print_overhead(&series, &before, &after);
        }
        println!("{:<48} p99 {:>12?}", "(launch lag of the pacer)", lag.p99);
    }

    if settings
        .only
        .as_ref()
        .is_none_or(|only| SEARCH_ROUND.name.contains(only.as_str()))
    {
        search_round(&load, &settings, &client, &backend, &gateway.base_url())?;
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
    // A second gateway without keys, fresh like the keyed ones: what two gateways that do
    // the same work differ by, the floor under the keys' figures.
    let twin = gateway_runtime.block_on(start_gateway(&backend, ""))?;
    let api = Api::ChatCompletions;
    for (name, keyed_gateway) in &keyed {
        for case in Case::ALL[..2].iter().filter(|case| {
            settings
                .only
                .as_ref()
                .is_none_or(|only| case.name.contains(only.as_str()))
        }) {
            let open = Target::new(&client, &gateway.base_url(), *case, Via::Gateway, api);
            let control = Target::new(&client, &twin.base_url(), *case, Via::Gateway, api);
            let with_key =
                Target::new(&client, &keyed_gateway.base_url(), *case, Via::Gateway, api)
                    .with_key(BENCH_KEY);
            load.block_on(check_answers(&open, &with_key, *case))?;
            let targets = [&open, &control, &with_key];
            run(&load, &settings, &targets, settings.warmup)?;
            let (times, lag) = run(&load, &settings, &targets, settings.measured)?;
            let summaries: Vec<Summary> = times
                .into_iter()
                .map(|mut times| summarize(&mut times))
                .collect();
            heading(&format!("{}: {name} vs no keys", case.name));
            report("through the gateway, no keys", &summaries[0]);
            report("through a second gateway, no keys", &summaries[1]);
            report(&format!("through the gateway, {name}"), &summaries[2]);
            print_added(
                "(a second gateway, no keys: the noise floor)",
                &summaries[0],
                &summaries[1],
            );
            print_added(
                &format!("added by the {name}"),
                &summaries[0],
                &summaries[2],
            );
            println!("{:<48} p99 {:>12?}", "(launch lag of the pacer)", lag.p99);
        }
    }
    println!("\nload average at the end: {}", load_average());
    gateway_runtime
        .block_on(twin.stop())
        .map_err(|error| error.to_string())?;
    for (_, keyed_gateway) in keyed {
        gateway_runtime
            .block_on(keyed_gateway.stop())
            .map_err(|error| error.to_string())?;
    }
    gateway_runtime
        .block_on(gateway.stop())
        .map_err(|error| error.to_string())
}

/// The search round's case: whole answers on the `search` route.
const SEARCH_ROUND: Case = Case {
    name: "tool search round: 100 deferred tools, the model searches, then calls the tool found (Chat Completions, whole)",
    route: "search",
    backend_model: SEARCH_MODEL,
    stream: false,
    also: &[],
};

/// The tool search round against its two direct backend rounds, and against the client
/// running the same loop itself through the gateway, interleaved in one run.
fn search_round(
    load: &tokio::runtime::Runtime,
    settings: &Settings,
    client: &reqwest::Client,
    backend: &str,
    base: &str,
) -> Result<(), Failure> {
    let city = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]});
    let weather = json!({"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": city}});
    // The search as a client offers it itself, and as the gateway offers it to the model.
    let search = json!({"type": "function", "function": {"name": "tool_search", "description": "Search the deferred tools with words describing what you need.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}});
    let verbs = ["list", "get", "create", "update", "delete", "archive"];
    let subjects = [
        "issue",
        "invoice",
        "customer",
        "calendar_event",
        "file",
        "ticket",
    ];
    let tools: Vec<Value> = std::iter::once(weather.clone())
        .chain((1..DEFERRED_TOOLS).map(|n| {
            let verb = verbs[n % verbs.len()];
            let subject = subjects[(n / verbs.len()) % subjects.len()];
            json!({"type": "function", "function": {"name": format!("{verb}_{subject}_{n}"),
                "description": format!("{verb} a {subject} in workspace {n}, with its owner and labels"),
                "parameters": {"type": "object", "properties": {"id": {"type": "string", "description": format!("The {subject}'s id")}}, "required": ["id"]}}})
        }))
        .collect();
    let deferred: Vec<Value> = std::iter::once(json!({"type": "tool_search"}))
        .chain(tools.iter().map(|tool| {
            let mut tool = tool.clone();
            tool["defer_loading"] = json!(true);
            tool
        }))
        .collect();
    let asked = json!([
        {"role": "system", "content": "You are a weather assistant."},
        {"role": "user", "content": "What is the weather in Paris?"}
    ]);
    // The second round: the search's call and what it found.
    let answered = |asked: &Value| {
        let mut messages = asked.as_array().cloned().unwrap_or_default();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": SEARCH_CALL_ID, "type": "function",
            "function": {"name": "tool_search", "arguments": SEARCH_ARGUMENTS}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": SEARCH_CALL_ID,
            "content": "Tools found (callable from your next turn on):\n- get_weather: Current weather in a city"}));
        Value::Array(messages)
    };
    let body = |model: &str, messages: &Value, tools: &[Value]| {
        Bytes::from(
            json!({"model": model, "stream": false, "messages": messages, "tools": tools})
                .to_string(),
        )
    };
    let target = |url: String, first: Bytes, then: Option<Bytes>| Target {
        client: client.clone(),
        url,
        body: first,
        follow_up: then,
        api: Api::ChatCompletions,
        end: None,
        key: None,
        stream: false,
    };
    let chat = "/v1/chat/completions";
    let direct = target(
        format!("{backend}{chat}"),
        body(SEARCH_MODEL, &asked, std::slice::from_ref(&search)),
        Some(body(
            SEARCH_MODEL,
            &answered(&asked),
            &[search.clone(), weather],
        )),
    );
    let searched = target(
        format!("{base}{chat}"),
        body("search", &asked, &deferred),
        None,
    );
    let mut offered = vec![search];
    offered.extend(tools);
    let client_loop = target(
        format!("{base}{chat}"),
        body("search", &asked, &offered),
        Some(body("search", &answered(&asked), &offered)),
    );
    load.block_on(check_answers(&direct, &searched, SEARCH_ROUND))?;
    load.block_on(check_answers(&direct, &client_loop, SEARCH_ROUND))?;
    let targets = [&direct, &searched, &client_loop];
    run(load, settings, &targets, settings.warmup)?;
    let (times, lag) = run(load, settings, &targets, settings.measured)?;
    let summaries: Vec<Summary> = times
        .into_iter()
        .map(|mut times| summarize(&mut times))
        .collect();
    heading(SEARCH_ROUND.name);
    report("direct to the backend, its two rounds", &summaries[0]);
    report("through the gateway, which searches", &summaries[1]);
    report("through the gateway, the client's own loop", &summaries[2]);
    print_added(
        "added by the gateway's search round",
        &summaries[0],
        &summaries[1],
    );
    print_added(
        "added by the gateway to the client's loop",
        &summaries[0],
        &summaries[2],
    );
    println!("{:<48} p99 {:>12?}", "(launch lag of the pacer)", lag.p99);
    Ok(())
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

/// Rate and durations, from `--rate`, `--seconds` and `--warmup`, and the cases to run,
/// from `--only` (cargo's own `--bench` flag is ignored).
struct Settings {
    rate: u32,
    measured: Duration,
    warmup: Duration,
    only: Option<String>,
}

impl Settings {
    fn from_args(mut args: impl Iterator<Item = String>) -> Result<Self, Failure> {
        let mut settings = Settings {
            rate: 1000,
            measured: Duration::from_secs(4),
            warmup: Duration::from_secs(1),
            only: None,
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
                "--only" => settings.only = args.next(),
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
    /// Also ask the gateway through these APIs, in the same run.
    also: &'static [Api],
}

/// The API the gateway is asked through (the backend is always asked in OpenAI's).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    ChatCompletions,
    Messages,
    Responses,
    Gemini,
    Ollama,
}

impl Api {
    /// The `endpoint` label of its requests' metrics.
    fn endpoint(self) -> &'static str {
        match self {
            Api::ChatCompletions => "chat_completions",
            Api::Messages => "messages",
            Api::Responses => "responses",
            Api::Gemini => "generate_content",
            Api::Ollama => "ollama_chat",
        }
    }
}

impl Case {
    /// The `kind` label of its route's metrics.
    fn kind(&self) -> &'static str {
        if self.route == "native" {
            "native"
        } else {
            "prompted"
        }
    }

    const ALL: [Case; 4] = [
        Case {
            name: "native route, tool call, whole (Chat Completions; Gemini)",
            route: "native",
            backend_model: NATIVE_MODEL,
            stream: false,
            also: &[Api::Gemini, Api::Ollama],
        },
        Case {
            name: "native route, tool call, streamed (to [DONE]; Messages, Responses, Gemini, Ollama: to their last event)",
            route: "native",
            backend_model: NATIVE_MODEL,
            stream: true,
            also: &[Api::Messages, Api::Responses, Api::Gemini, Api::Ollama],
        },
        Case {
            name: "prompted hermes route, tool call, whole",
            route: "hermes",
            backend_model: HERMES_MODEL,
            stream: false,
            also: &[],
        },
        Case {
            name: "prompted hermes route, tool call, streamed (to [DONE])",
            route: "hermes",
            backend_model: HERMES_MODEL,
            stream: true,
            also: &[],
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
    /// A second request sent once the first's answer is read: a client's second round.
    follow_up: Option<Bytes>,
    api: Api,
    /// How a complete streamed Chat Completions or Messages body ends.
    end: Option<&'static [u8]>,
    /// Sent as `Authorization: Bearer …`.
    key: Option<&'static str>,
    stream: bool,
}

impl Target {
    fn new(client: &reqwest::Client, base: &str, case: Case, via: Via, api: Api) -> Self {
        let model = match via {
            Via::Direct => case.backend_model,
            Via::Gateway => case.route,
        };
        let city = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]});
        if api == Api::Responses {
            let body = json!({
                "model": model,
                "stream": case.stream,
                "store": false,
                "instructions": "You are a weather assistant.",
                "input": "What is the weather in Paris?",
                "tools": [
                    {"type": "function", "name": "get_weather", "description": "Current weather in a city", "parameters": city},
                    {"type": "function", "name": "get_time", "description": "Local time in a city", "parameters": city}
                ]
            });
            return Self {
                client: client.clone(),
                url: format!("{base}/v1/responses"),
                body: Bytes::from(body.to_string()),
                follow_up: None,
                api,
                end: None,
                key: None,
                stream: case.stream,
            };
        }
        if api == Api::Gemini {
            // Google's OpenAPI subset, as the google-genai SDKs send a typed schema.
            let city = json!({"type": "OBJECT", "properties": {"city": {"type": "STRING"}, "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]});
            let body = json!({
                "systemInstruction": {"parts": [{"text": "You are a weather assistant."}]},
                "contents": [{"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}],
                "tools": [{"functionDeclarations": [
                    {"name": "get_weather", "description": "Current weather in a city", "parameters": city},
                    {"name": "get_time", "description": "Local time in a city", "parameters": city}
                ]}]
            });
            let method = if case.stream {
                "streamGenerateContent?alt=sse"
            } else {
                "generateContent"
            };
            return Self {
                client: client.clone(),
                url: format!("{base}/v1beta/models/{model}:{method}"),
                body: Bytes::from(body.to_string()),
                follow_up: None,
                api,
                end: None,
                key: None,
                stream: case.stream,
            };
        }
        if api == Api::Messages {
            let body = json!({
                "model": model,
                "stream": case.stream,
                "max_tokens": 1024,
                "system": "You are a weather assistant.",
                "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
                "tools": [
                    {"name": "get_weather", "description": "Current weather in a city", "input_schema": city},
                    {"name": "get_time", "description": "Local time in a city", "input_schema": city}
                ]
            });
            return Self {
                client: client.clone(),
                url: format!("{base}/v1/messages"),
                body: Bytes::from(body.to_string()),
                follow_up: None,
                api,
                end: case.stream.then_some(MESSAGE_STOP),
                key: None,
                stream: case.stream,
            };
        }
        let (path, end) = match api {
            Api::Ollama => ("/api/chat", None),
            _ => ("/v1/chat/completions", case.stream.then_some(SSE_DONE)),
        };
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
            url: format!("{base}{path}"),
            body: Bytes::from(body.to_string()),
            follow_up: None,
            api,
            end,
            key: None,
            stream: case.stream,
        }
    }

    fn with_key(mut self, key: &'static str) -> Self {
        self.key = Some(key);
        self
    }

    /// Sends the request (and its follow-up, once answered); returns the last answer.
    async fn call(&self) -> Result<Bytes, Failure> {
        let answer = self.post(self.body.clone()).await?;
        match &self.follow_up {
            Some(next) => self.post(next.clone()).await,
            None => Ok(answer),
        }
    }

    /// Sends one request and reads the whole body; checks it is a complete success.
    async fn post(&self, body: Bytes) -> Result<Bytes, Failure> {
        let mut request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
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
        let complete = match self.end {
            Some(end) => body.ends_with(end),
            // The Responses stream's last event is the terminal one. Found from the end,
            // so that checking costs the client no more than the other APIs' `ends_with`.
            None if self.api == Api::Responses => {
                body.ends_with(b"\n\n")
                    && body[..body.len() - 2]
                        .windows(2)
                        .rposition(|pair| pair == b"\n\n")
                        .is_some_and(|end| {
                            body[end + 2..].starts_with(RESPONSE_COMPLETED.as_bytes())
                        })
            }
            // Gemini's last event carries the finish reason. Found from the end, as above.
            None if self.api == Api::Gemini && self.url.contains("alt=sse") => {
                body.ends_with(b"\n\n") && {
                    let last = body[..body.len() - 2]
                        .windows(2)
                        .rposition(|pair| pair == b"\n\n")
                        .unwrap_or(0);
                    body[last..]
                        .windows(FINISH_REASON.len())
                        .any(|window| window == FINISH_REASON)
                }
            }
            // Ollama's last line is the one that says `done: true`, found from the end.
            None if self.api == Api::Ollama && self.stream => {
                let lines = body.strip_suffix(b"\n").unwrap_or(&body);
                let last = lines
                    .iter()
                    .rposition(|byte| *byte == b'\n')
                    .map_or(lines, |end| &lines[end + 1..]);
                last.windows(OLLAMA_DONE.len())
                    .any(|window| window == OLLAMA_DONE)
            }
            None => true,
        };
        if !complete {
            return Err(format!(
                "the stream did not end as it should: {}",
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
    if through.api == Api::Responses {
        let completed = text
            .split("\n\n")
            .filter_map(|event| event.strip_prefix(RESPONSE_COMPLETED))
            .filter_map(|event| event.strip_prefix("data: "))
            .find_map(|data| serde_json::from_str::<Value>(data).ok());
        let call = completed.as_ref().and_then(|event| {
            event["response"]["output"]
                .as_array()?
                .iter()
                .find(|item| item["type"] == "function_call")
                .and_then(|item| item["name"].as_str().map(str::to_owned))
        });
        return if call.as_deref() == Some("get_weather") {
            Ok(())
        } else {
            Err(format!(
                "{}: the gateway's Responses answer is not a get_weather function call:\n{text}",
                case.name
            ))
        };
    }
    if through.api == Api::Gemini {
        let responses: Vec<Value> = if case.stream {
            text.split("\n\n")
                .filter_map(|event| event.strip_prefix("data: "))
                .filter_map(|data| serde_json::from_str(data).ok())
                .collect()
        } else {
            serde_json::from_str(&text).into_iter().collect()
        };
        let parts = |response: &Value| {
            response["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        let called = responses.iter().flat_map(parts).any(|part| {
            part["functionCall"]["name"] == "get_weather"
                && part["functionCall"]["args"]["city"] == "Paris"
        });
        let finished = responses
            .last()
            .is_some_and(|last| last["candidates"][0]["finishReason"] == "STOP");
        return if called && finished {
            Ok(())
        } else {
            Err(format!(
                "{}: the gateway's Gemini answer is not a get_weather function call:\n{text}",
                case.name
            ))
        };
    }
    if through.api == Api::Ollama {
        let last = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .collect::<Vec<_>>();
        let call = last.iter().find_map(|chunk| {
            chunk["message"]["tool_calls"][0]["function"]["name"]
                .as_str()
                .map(str::to_owned)
        });
        let done = last.last().is_some_and(|chunk| chunk["done"] == true);
        return if call.as_deref() == Some("get_weather") && done {
            Ok(())
        } else {
            Err(format!(
                "{}: the gateway's Ollama answer is not a get_weather tool call:\n{text}",
                case.name
            ))
        };
    }
    let call = if through.api == Api::Messages {
        text.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find_map(|event| event["content_block"]["name"].as_str().map(str::to_owned))
    } else if case.stream {
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
    let finished = text.contains(r#""finish_reason":"tool_calls""#)
        || text.contains(r#""stop_reason":"tool_use""#);
    if call.as_deref() == Some("get_weather") && finished {
        Ok(())
    } else {
        Err(format!(
            "{}: the gateway's answer is not a get_weather tool call:\n{text}",
            case.name
        ))
    }
}

/// Runs the paths (direct first), interleaved, for `duration`; returns the latencies of each
/// and the pacer's launch lag.
fn run(
    runtime: &tokio::runtime::Runtime,
    settings: &Settings,
    targets: &[&Target],
    duration: Duration,
) -> Result<(Vec<Vec<Duration>>, Summary), Failure> {
    let period = Duration::from_secs(1) / settings.rate;
    let count = (duration.as_secs_f64() * f64::from(settings.rate)) as u32;
    let paths = targets.len() as u32;
    let (results, received) = std_mpsc::channel::<(usize, Result<Duration, Failure>)>();
    let handle = runtime.handle().clone();
    let mut lags = Vec::with_capacity((count * paths) as usize);
    let start = Instant::now() + Duration::from_millis(10);
    let orders = orders(targets.len());
    for index in 0..count {
        // The paths take turns, evenly spaced within each period, in an order that runs
        // through every permutation period by period: each path follows every other (and
        // overlaps its tail) equally often. Merely rotating one order would keep each
        // path's predecessor, and the path after the cheap direct request would always
        // meet the least contention.
        let order = &orders[index as usize % orders.len()];
        for (turn, &path) in (0..paths).zip(order) {
            let target = targets[path];
            let scheduled = start + period * index + period * turn / paths;
            if let Some(wait) = scheduled.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            lags.push(scheduled.elapsed());
            let target = target.clone();
            let results = results.clone();
            handle.spawn(async move {
                let outcome = target.call().await.map(|_| scheduled.elapsed());
                let _ = results.send((path, outcome));
            });
        }
    }
    drop(results);
    let mut times = vec![Vec::with_capacity(count as usize); targets.len()];
    let mut failures = Vec::new();
    for _ in 0..count * paths {
        let (path, outcome) = received
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "requests did not finish within 30 s".to_owned())?;
        match outcome {
            Ok(latency) => times[path].push(latency),
            Err(failure) => failures.push(failure),
        }
    }
    if let Some(first) = failures.first() {
        return Err(format!(
            "{} of {} requests failed; the first: {first}",
            failures.len(),
            count * paths
        ));
    }
    Ok((times, summarize(&mut lags)))
}

/// Every order of `n` paths.
fn orders(n: usize) -> Vec<Vec<usize>> {
    if n <= 1 {
        return vec![(0..n).collect()];
    }
    let mut all = Vec::new();
    for rest in orders(n - 1) {
        for place in 0..n {
            let mut order = rest.clone();
            order.insert(place, n - 1);
            all.push(order);
        }
    }
    all
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

/// The gateway's `gateway_overhead_seconds` buckets from its `/metrics`: for each series
/// (its labels but `le`), the bucket bounds and their cumulative counts.
async fn overhead_histograms(
    client: &reqwest::Client,
    base: &str,
) -> Result<std::collections::HashMap<String, Vec<(f64, f64)>>, Failure> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .map_err(|error| error.to_string())?
        .text()
        .await
        .map_err(|error| error.to_string())?;
    let mut series: std::collections::HashMap<String, Vec<(f64, f64)>> = Default::default();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("gateway_overhead_seconds_bucket{") else {
            continue;
        };
        let Some((labels, count)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Some((labels, bound)) = labels.rsplit_once(",le=\"") else {
            continue;
        };
        let bound = bound.trim_end_matches('"');
        let bound = if bound == "+Inf" {
            f64::INFINITY
        } else {
            bound
                .parse()
                .map_err(|_| format!("bad bucket bound in {line}"))?
        };
        let count = count.parse().map_err(|_| format!("bad count in {line}"))?;
        series
            .entry(labels.to_owned())
            .or_default()
            .push((bound, count));
    }
    Ok(series)
}

/// The quantile of what was recorded between two readings of one series, interpolated
/// within its bucket as Prometheus's `histogram_quantile` does.
fn bucket_quantile(before: &[(f64, f64)], after: &[(f64, f64)], quantile: f64) -> Option<f64> {
    let counts: Vec<(f64, f64)> = after
        .iter()
        .map(|(bound, count)| {
            let earlier = before
                .iter()
                .find(|(other, _)| other == bound)
                .map_or(0.0, |(_, count)| *count);
            (*bound, count - earlier)
        })
        .collect();
    let total = counts.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = quantile * total;
    let mut lower = (0.0, 0.0);
    for (bound, cumulative) in counts {
        if cumulative >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let share = (rank - lower.1) / (cumulative - lower.1).max(f64::MIN_POSITIVE);
            return Some(lower.0 + (bound - lower.0) * share);
        }
        lower = (bound, cumulative);
    }
    None
}

/// The gateway's own account of its share, beside the added latency measured outside it.
fn print_overhead(
    series: &str,
    before: &std::collections::HashMap<String, Vec<(f64, f64)>>,
    after: &std::collections::HashMap<String, Vec<(f64, f64)>>,
) {
    let empty = Vec::new();
    let Some(after) = after.get(series) else {
        println!("  (no gateway_overhead_seconds{{{series}}} series)");
        return;
    };
    let before = before.get(series).unwrap_or(&empty);
    let at = |quantile| bucket_quantile(before, after, quantile).map_or(f64::NAN, |q| q * 1e3);
    println!(
        "{:<48} median {:>9.3} ms  p99 {:>9.3} ms",
        "  of which in the gateway (gateway_overhead_seconds)",
        at(0.5),
        at(0.99)
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
    /// The search round's first answer: a `tool_search` call.
    search_whole: Bytes,
    search_stream: Bytes,
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
        let search_stream = OpenAiScript::new()
            .tool_call(SEARCH_CALL_ID, "tool_search", &[SEARCH_ARGUMENTS])
            .finish("tool_calls", 180, 12)
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
            search_whole: whole(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": SEARCH_CALL_ID, "type": "function",
                    "function": {"name": "tool_search", "arguments": SEARCH_ARGUMENTS}}]}),
                "tool_calls",
            ),
            search_stream: Bytes::from(search_stream),
        }
    }
}

#[derive(Deserialize)]
struct Asked {
    model: String,
    #[serde(default)]
    stream: bool,
}

/// What the search round's backend reads: whether the conversation ends in a result.
#[derive(Deserialize)]
struct Conversation {
    messages: Vec<Role>,
}

#[derive(Deserialize)]
struct Role {
    role: String,
}

async fn answer(State(answers): State<Arc<Answers>>, body: Bytes) -> Response {
    let (bytes, content_type) = match serde_json::from_slice::<Asked>(&body) {
        // The search round searches first, then calls the tool found, as the native route.
        Ok(asked)
            if asked.model == SEARCH_MODEL
                && serde_json::from_slice::<Conversation>(&body).is_ok_and(|conversation| {
                    conversation
                        .messages
                        .last()
                        .is_none_or(|last| last.role != "tool")
                }) =>
        {
            if asked.stream {
                (answers.search_stream.clone(), "text/event-stream")
            } else {
                (answers.search_whole.clone(), "application/json")
            }
        }
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

/// The gateway with a native and a prompted route (and the search round's), all to the fast
/// backend; `access`
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
name = "search"
provider = "openai"
url = "{backend}/v1"
model = "{SEARCH_MODEL}"

[[route]]
name = "hermes"
provider = "openai"
url = "{backend}/v1"
model = "{HERMES_MODEL}"
tool_calling = "prompted"
format = "hermes"
"#
    ))
    .map_err(|problems| problems.to_string())?;
    RunningGateway::start(&config, &|_| None).await
}
