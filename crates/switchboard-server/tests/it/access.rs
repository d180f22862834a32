//! Access control as clients meet it: keys (401), the routes a key may use (404 for the rest), rate
//! limits (429 with OpenAI's headers), each in the error shape of the API the path belongs
//! to; the model list filtered per key; start-up refused on a public address without keys;
//! `/metrics` behind a key off loopback; and no secret in any log line, metric or error.
//! Limits shared through a real Redis server are at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{OpenAiScript, RedisServer, Reply, ScriptedServer};

const KEY: &str = "sk-sb-7dQwK2mZp9LrX4vT8nB3cY6hJ1sF5gA0eU2iO7kW";
/// The same length and prefix as `KEY`, one letter different.
const NEAR_MISS: &str = "sk-sb-7dQwK2mZp9LrX4vT8nB3cY6hJ1sF5gA0eU2iO7kX";
const OTHER_KEY: &str = "sk-sb-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn7Mm";
const ROUTE_SECRET: &str = "route-secret-9f8e7d6c5b4a";

fn sha256(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A `[[key]]` table; `extra` holds more `key = value` lines.
fn key(name: &str, secret: &str, extra: &str) -> String {
    format!(
        "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\n{extra}\n",
        sha256(secret)
    )
}

/// A gateway listening on `listen`; `settings` are top-level lines, then the tables.
async fn gateway_on(
    listen: &str,
    settings: &str,
    tables: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunningGateway, String> {
    let text = format!(
        "listen = \"{listen}\"\ncharacters = \"{CHARACTERS}\"\n{settings}\n{}",
        tables.concat()
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    RunningGateway::start(&config, env).await
}

async fn gateway(settings: &str, tables: &[String]) -> RunningGateway {
    gateway_on("127.0.0.1:0", settings, tables, &|_| None)
        .await
        .unwrap()
}

/// How a request presents its key.
#[derive(Clone, Copy)]
enum Credential<'a> {
    None,
    Bearer(&'a str),
    ApiKey(&'a str),
}

/// `port` on loopback, whatever address the gateway listens on.
fn base(gateway: &RunningGateway) -> String {
    format!("http://127.0.0.1:{}", gateway.address.port())
}

async fn send(
    gateway: &RunningGateway,
    method: Method,
    path: &str,
    credential: Credential<'_>,
    body: Option<&Value>,
) -> Answer {
    let mut request = client().request(method, format!("{}{path}", base(gateway)));
    request = match credential {
        Credential::None => request,
        Credential::Bearer(key) => request.bearer_auth(key),
        Credential::ApiKey(key) => request.header("x-api-key", key),
    };
    if let Some(body) = body {
        request = request.json(body);
    }
    read_answer(request.send().await.unwrap()).await
}

async fn chat(gateway: &RunningGateway, credential: Credential<'_>, body: &Value) -> Answer {
    send(
        gateway,
        Method::POST,
        "/v1/chat/completions",
        credential,
        Some(body),
    )
    .await
}

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", answer.headers))
        .to_str()
        .unwrap()
}

fn ok_reply(prompt_tokens: u64, completion_tokens: u64) -> Reply {
    OpenAiScript::new()
        .text("Hello.")
        .finish("stop", prompt_tokens, completion_tokens)
        .reply()
}

fn model_list(answer: &Answer) -> Vec<String> {
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_missing_or_wrong_key_gets_401_in_the_shape_of_each_api() {
    let backend = ScriptedServer::start(vec![ok_reply(1, 1), ok_reply(1, 1)]).await;
    let gateway = gateway(
        "",
        &[
            key("ci", KEY, ""),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let body = request("qwen", "hi");
    for credential in [
        Credential::None,
        Credential::Bearer(NEAR_MISS),
        Credential::ApiKey(NEAR_MISS),
    ] {
        let code = match credential {
            Credential::None => "missing_api_key",
            _ => "invalid_api_key",
        };
        // Chat Completions and Responses speak OpenAI's shape; Messages speaks Anthropic's.
        // The check runs before routing, so it holds for endpoints this build lacks.
        for path in [
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/characters/narrator/tools/log_event",
        ] {
            let answer = send(&gateway, Method::POST, path, credential, Some(&body)).await;
            let error = answer.error(401);
            assert_eq!(error["code"], code, "{path}: {error}");
            assert_eq!(error["type"], "authentication_error", "{error}");
            assert_eq!(header(&answer, "www-authenticate"), "Bearer");
        }
        let answer = send(
            &gateway,
            Method::POST,
            "/v1/messages",
            credential,
            Some(&body),
        )
        .await;
        answer.anthropic_error(401, "authentication_error");
        for path in ["/v1/models", "/v1/characters", "/v1/characters/narrator"] {
            let error = send(&gateway, Method::GET, path, credential, None)
                .await
                .error(401);
            assert_eq!(error["code"], code, "{path}");
        }
    }
    // The playground's page and files hold no secret: a browser loads them, then asks the
    // API with the key the user types in.
    for path in ["/", "/playground/app.js"] {
        let answer = send(&gateway, Method::GET, path, Credential::None, None).await;
        assert_eq!(answer.status, 200, "{path}");
    }
    // Liveness stays open; both headers real clients send are accepted.
    assert_eq!(
        send(&gateway, Method::GET, "/healthz", Credential::None, None)
            .await
            .status,
        200
    );
    assert_eq!(
        chat(&gateway, Credential::Bearer(KEY), &body).await.status,
        200
    );
    assert_eq!(
        chat(&gateway, Credential::ApiKey(KEY), &body).await.status,
        200
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_keys_route_globs_decide_what_it_may_use_whatever_name_it_asks_by() {
    let backend = ScriptedServer::start(vec![ok_reply(1, 1), ok_reply(1, 1)]).await;
    let gateway = gateway(
        "",
        &[
            key("limited", KEY, "routes = [\"qwen*\", \"character/narr*\"]"),
            key("everything", OTHER_KEY, ""),
            route("qwen", "openai", &backend.base, ""),
            route("qwen-big", "openai", &backend.base, ""),
            route("other", "openai", &backend.base, "aliases = [\"gpt-*\"]"),
        ],
    )
    .await;
    let limited = Credential::Bearer(KEY);
    assert_eq!(
        chat(&gateway, limited, &request("qwen-big", "hi"))
            .await
            .status,
        200
    );
    // A name out of the key's reach is answered exactly as a name nothing answers: the key
    // cannot tell which names exist beyond its globs.
    let unknown = chat(&gateway, limited, &request("nope", "hi"))
        .await
        .error(404);
    assert!(
        !unknown["message"].as_str().unwrap().contains("other"),
        "{unknown}"
    );
    let spelled =
        |error: &Value, name: &str| serde_json::to_string(error).unwrap().replace(name, "NAME");
    for name in [
        "other",
        "gpt-5",
        "character/game-master",
        "character/GAME-MASTER",
    ] {
        let error = chat(&gateway, limited, &request(name, "hi"))
            .await
            .error(404);
        assert_eq!(spelled(&error, name), spelled(&unknown, "nope"), "{name}");
    }
    // The Messages and Responses APIs check the same globs, each in its own error shape.
    let messages = json!({"model": "other", "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}]});
    let answer = send(
        &gateway,
        Method::POST,
        "/v1/messages",
        limited,
        Some(&messages),
    )
    .await;
    answer.anthropic_error(404, "not_found_error");
    let answer = send(
        &gateway,
        Method::POST,
        "/v1/responses",
        limited,
        Some(&json!({"model": "gpt-5", "input": "hi"})),
    )
    .await;
    let error = answer.error(404);
    assert_eq!(spelled(&error, "gpt-5"), spelled(&unknown, "nope"));
    // The characters API too, loaded or not.
    for path in [
        "/v1/characters/game-master",
        "/v1/characters/no-such-character",
    ] {
        let answer = send(&gateway, Method::GET, path, limited, None).await;
        assert_eq!(answer.status, 404, "{path}");
    }

    assert_eq!(
        chat(
            &gateway,
            Credential::Bearer(OTHER_KEY),
            &request("gpt-5", "hi")
        )
        .await
        .status,
        200
    );

    let listed = model_list(&send(&gateway, Method::GET, "/v1/models", limited, None).await);
    assert_eq!(listed, ["qwen", "qwen-big", "character/narrator"]);
    let listed = model_list(
        &send(
            &gateway,
            Method::GET,
            "/v1/models",
            Credential::Bearer(OTHER_KEY),
            None,
        )
        .await,
    );
    assert_eq!(&listed[..3], ["qwen", "qwen-big", "other"]);
    assert!(
        listed.contains(&"character/quiz-show".to_owned()),
        "{listed:?}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn requests_per_minute_answer_429_with_openais_headers_in_each_apis_shape() {
    let backend = ScriptedServer::start(vec![ok_reply(1, 1), ok_reply(1, 1)]).await;
    let gateway = gateway(
        "",
        &[
            key("ci", KEY, "requests_per_minute = 2"),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let credential = Credential::Bearer(KEY);
    let first = chat(&gateway, credential, &request("qwen", "hi")).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(header(&first, "x-ratelimit-limit-requests"), "2");
    assert_eq!(header(&first, "x-ratelimit-remaining-requests"), "1");
    assert_eq!(header(&first, "x-ratelimit-reset-requests"), "30s");
    let second = post_with(&gateway, credential, &streaming(request("qwen", "hi"))).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(header(&second, "x-ratelimit-remaining-requests"), "0");
    assert!(
        parse_sse(&second.text).1,
        "the stream is whole: {}",
        second.text
    );

    let refused = chat(&gateway, credential, &request("qwen", "hi")).await;
    let error = refused.error(429);
    assert_eq!(error["type"], "rate_limit_error");
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("2 requests per minute"),
        "{error}"
    );
    assert_eq!(header(&refused, "x-ratelimit-remaining-requests"), "0");
    let retry: u64 = header(&refused, "retry-after").parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    let retry_ms: u64 = header(&refused, "retry-after-ms").parse().unwrap();
    assert!(
        retry_ms <= retry * 1000 && retry_ms > (retry - 1) * 1000,
        "{retry_ms}"
    );

    let body = request("qwen", "hi");
    let answer = send(
        &gateway,
        Method::POST,
        "/v1/messages",
        credential,
        Some(&body),
    )
    .await;
    answer.anthropic_error(429, "rate_limit_error");
    assert_eq!(header(&answer, "x-ratelimit-limit-requests"), "2");
    let answer = send(
        &gateway,
        Method::POST,
        "/v1/responses",
        credential,
        Some(&body),
    )
    .await;
    assert_eq!(answer.error(429)["code"], "rate_limit_exceeded");
    // Reading the model list is not an answer: it is not limited.
    assert_eq!(
        send(&gateway, Method::GET, "/v1/models", credential, None)
            .await
            .status,
        200
    );

    let metrics = send(&gateway, Method::GET, "/metrics", credential, None)
        .await
        .text;
    let refusals = metric(
        &metrics,
        "gateway_rate_limited_total{key=\"ci\",limit=\"requests\"}",
    );
    assert!(refusals >= 3.0, "{metrics}");
    assert!(
        metric(&metrics, "gateway_key_requests_total{key=\"ci\"}") >= 2.0,
        "{metrics}"
    );
    gateway.stop().await.unwrap();
}

async fn post_with(gateway: &RunningGateway, credential: Credential<'_>, body: &Value) -> Answer {
    chat(gateway, credential, body).await
}

/// The value of one Prometheus sample, by its name and labels as written.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(series)
                .and_then(|rest| rest.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

#[tokio::test]
async fn tokens_are_charged_from_each_answers_usage_streamed_or_whole() {
    // Each answer uses 3 + 4 tokens of a budget of 10 a minute.
    let backend = ScriptedServer::start(vec![ok_reply(3, 4), ok_reply(3, 4)]).await;
    let gateway = gateway(
        "",
        &[
            key("ci", KEY, "tokens_per_minute = 10"),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let credential = Credential::ApiKey(KEY);
    let first = post_with(&gateway, credential, &streaming(request("qwen", "hi"))).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(header(&first, "x-ratelimit-limit-tokens"), "10");
    assert_eq!(header(&first, "x-ratelimit-remaining-tokens"), "10");
    assert!(
        first.headers.get("x-ratelimit-limit-requests").is_none(),
        "no request limit"
    );
    // The stream's usage was charged once the stream ended: 3 left, so this one is admitted
    // (refused only when the budget is spent) and overspends it.
    let second = chat(&gateway, credential, &request("qwen", "hi")).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(header(&second, "x-ratelimit-remaining-tokens"), "3");
    let refused = chat(&gateway, credential, &request("qwen", "hi")).await;
    let error = refused.error(429);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("10 tokens per minute"),
        "{error}"
    );
    assert_eq!(header(&refused, "x-ratelimit-remaining-tokens"), "0");
    // 14 tokens spent of 10 a minute: whole again in about 84 s.
    let reset = header(&refused, "x-ratelimit-reset-tokens");
    assert!(reset.starts_with("1m2"), "{reset}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn open_requests_are_limited_and_a_stream_holds_its_slot_until_it_ends() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut held = OpenAiScript::new()
        .text("First ")
        .text("second.")
        .finish("stop", 1, 1)
        .reply();
    held.gate = Some((1, Arc::clone(&gate)));
    let backend = ScriptedServer::start(vec![held, ok_reply(1, 1)]).await;
    let gateway = gateway(
        "",
        &[
            key("ci", KEY, "max_concurrent = 1"),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let mut stream = client()
        .post(format!("{}/v1/chat/completions", base(&gateway)))
        .bearer_auth(KEY)
        .json(&streaming(request("qwen", "hi")))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let first = stream.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("First"));
    let refused = chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
    let error = refused.error(429);
    assert!(
        error["message"].as_str().unwrap().contains("open requests"),
        "{error}"
    );
    assert_eq!(header(&refused, "retry-after"), "1");
    gate.notify_one();
    let mut rest = Vec::new();
    while let Some(bytes) = stream.chunk().await.unwrap() {
        rest.extend_from_slice(&bytes);
    }
    assert!(String::from_utf8_lossy(&rest).ends_with("data: [DONE]\n\n"));
    let after = chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
    assert_eq!(
        after.status, 200,
        "the ended stream gave its slot back: {}",
        after.text
    );
    gateway.stop().await.unwrap();
}

/// Every log line of this test binary, whatever test wrote it.
pub(crate) fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_secret_reaches_a_log_line_a_metric_an_error_or_the_backend() {
    let logs = captured_logs();
    let refusal = Reply::json(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {ROUTE_SECRET}"), "type": "invalid_request_error"}}),
    );
    let backend = ScriptedServer::start(vec![ok_reply(2, 3), refusal]).await;
    let gateway = gateway_on(
        "127.0.0.1:0",
        "",
        &[
            key(
                "auditor",
                KEY,
                "routes = [\"qwen\"]\nrequests_per_minute = 3",
            ),
            route(
                "qwen",
                "openai",
                &backend.base,
                "api_key_env = \"ROUTE_KEY\"",
            ),
            route("secret-route", "openai", &backend.base, ""),
        ],
        &|name| (name == "ROUTE_KEY").then(|| ROUTE_SECRET.to_owned()),
    )
    .await
    .unwrap();
    let mut answers = vec![
        chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await,
        chat(&gateway, Credential::ApiKey(KEY), &request("qwen", "hi")).await,
        chat(
            &gateway,
            Credential::Bearer(KEY),
            &request("secret-route", "hi"),
        )
        .await,
        chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await,
        chat(
            &gateway,
            Credential::Bearer(NEAR_MISS),
            &request("qwen", "hi"),
        )
        .await,
        send(
            &gateway,
            Method::GET,
            "/v1/models",
            Credential::Bearer(KEY),
            None,
        )
        .await,
    ];
    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(statuses, [200, 502, 404, 429, 401, 200]);
    // Google's clients may send the key in the query (`?key=`): it reaches the gate (the
    // key's minute is spent, so each is a 429) and no log line, error or header.
    let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    for key in [KEY, NEAR_MISS] {
        let path = format!("/v1beta/models/qwen:generateContent?key={key}");
        let answer = send(
            &gateway,
            Method::POST,
            &path,
            Credential::None,
            Some(&gemini),
        )
        .await;
        let status = if key == KEY { 429 } else { 401 };
        assert_eq!(answer.status, status, "{}", answer.text);
        answers.push(answer);
    }
    // The backend's refusal of the route's key is not passed on: it quoted the key.
    assert_eq!(answers[1].error(502)["code"], "backend_auth_failed");
    answers.push(
        send(
            &gateway,
            Method::GET,
            "/metrics",
            Credential::Bearer(KEY),
            None,
        )
        .await,
    );
    let metrics = answers.last().unwrap().text.clone();
    assert!(metrics.contains("key=\"auditor\""), "{metrics}");

    // The route's own key went to the backend, the client's never did.
    let heads: String = backend
        .requests()
        .iter()
        .map(|request| request.head.clone())
        .collect();
    assert!(
        heads.contains(&format!("authorization: bearer {ROUTE_SECRET}")),
        "{heads}"
    );
    let client_secrets = [KEY, NEAR_MISS];
    for secret in client_secrets {
        assert!(
            !heads.to_lowercase().contains(&secret.to_lowercase()),
            "{heads}"
        );
    }
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("key=\"auditor\"") || logs.contains("key=auditor"),
        "the log lines were captured:\n{logs}"
    );
    for secret in [KEY, NEAR_MISS, ROUTE_SECRET, &sha256(KEY)] {
        assert!(!logs.contains(secret), "a log line holds {secret}:\n{logs}");
        for answer in &answers {
            assert!(
                !answer.text.contains(secret),
                "an answer holds {secret}: {}",
                answer.text
            );
            assert!(
                !format!("{:?}", answer.headers).contains(secret),
                "{:?}",
                answer.headers
            );
        }
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn serving_beyond_loopback_needs_keys_unless_told_otherwise() {
    let error = gateway_on("0.0.0.0:0", "", &[], &|_| None)
        .await
        .unwrap_err();
    assert!(
        error.contains("refusing to listen on 0.0.0.0:0 without keys"),
        "{error}"
    );
    assert!(error.contains("allow_unauthenticated = true"), "{error}");

    let open = gateway_on("0.0.0.0:0", "allow_unauthenticated = true", &[], &|_| None)
        .await
        .unwrap();
    assert_eq!(
        send(&open, Method::GET, "/v1/models", Credential::None, None)
            .await
            .status,
        200
    );
    assert_eq!(
        send(&open, Method::GET, "/metrics", Credential::None, None)
            .await
            .status,
        200
    );
    open.stop().await.unwrap();

    // With keys, beyond loopback: /metrics needs a key or the metrics key.
    let metrics_key = "metrics-only-secret-1234";
    let keyed = gateway_on(
        "0.0.0.0:0",
        "metrics_key = { key_env = \"METRICS_KEY\" }",
        &[key("ci", KEY, "")],
        &|name| (name == "METRICS_KEY").then(|| metrics_key.to_owned()),
    )
    .await
    .unwrap();
    let error = send(&keyed, Method::GET, "/metrics", Credential::None, None)
        .await
        .error(401);
    assert_eq!(error["code"], "metrics_key_needed");
    send(
        &keyed,
        Method::GET,
        "/metrics",
        Credential::Bearer(NEAR_MISS),
        None,
    )
    .await
    .error(401);
    assert_eq!(
        send(
            &keyed,
            Method::GET,
            "/metrics",
            Credential::Bearer(KEY),
            None
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &keyed,
            Method::GET,
            "/metrics",
            Credential::Bearer(metrics_key),
            None
        )
        .await
        .status,
        200
    );
    // The metrics key opens nothing else.
    send(
        &keyed,
        Method::GET,
        "/v1/models",
        Credential::Bearer(metrics_key),
        None,
    )
    .await
    .error(401);
    // Liveness stays open, but only a key or the metrics key learns what is behind it.
    let health = send(&keyed, Method::GET, "/healthz", Credential::None, None).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json(), json!({"status": "ok"}));
    for credential in [Credential::Bearer(KEY), Credential::Bearer(metrics_key)] {
        let health = send(&keyed, Method::GET, "/healthz", credential, None)
            .await
            .json();
        assert_eq!(health["status"], "ok");
        assert!(health["backends"].is_array(), "{health}");
    }
    keyed.stop().await.unwrap();

    // On loopback /metrics stays open even with keys.
    let local = gateway("", &[key("ci", KEY, "")]).await;
    assert_eq!(
        send(&local, Method::GET, "/metrics", Credential::None, None)
            .await
            .status,
        200
    );
    local.stop().await.unwrap();
}

/// The statuses and budget headers a sequence of requests gets.
async fn budget_trail(gateway: &RunningGateway) -> Vec<(u16, String, String)> {
    let mut trail = Vec::new();
    for _ in 0..4 {
        let answer = chat(gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
        let value = |name: &str| {
            answer
                .headers
                .get(name)
                .map(|value| value.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        trail.push((
            answer.status,
            value("x-ratelimit-remaining-requests"),
            value("x-ratelimit-remaining-tokens"),
        ));
    }
    trail
}

#[tokio::test]
async fn redis_and_in_process_counters_decide_alike() {
    let redis = RedisServer::start();
    let replies = || vec![ok_reply(3, 4), ok_reply(3, 4), ok_reply(3, 4)];
    let limits = "requests_per_minute = 3\ntokens_per_minute = 10\nmax_concurrent = 2";
    let (local_backend, shared_backend) = (
        ScriptedServer::start(replies()).await,
        ScriptedServer::start(replies()).await,
    );
    let local = gateway(
        "",
        &[
            key("ci", KEY, limits),
            route("qwen", "openai", &local_backend.base, ""),
        ],
    )
    .await;
    let shared = gateway(
        &format!("state = \"{}\"", redis.url),
        &[
            key("ci", KEY, limits),
            route("qwen", "openai", &shared_backend.base, ""),
        ],
    )
    .await;
    let local_trail = budget_trail(&local).await;
    assert_eq!(
        local_trail,
        [
            (200, "2".into(), "10".into()),
            (200, "1".into(), "3".into()),
            (429, "1".into(), "0".into()),
            (429, "1".into(), "0".into()),
        ]
    );
    assert_eq!(budget_trail(&shared).await, local_trail);
    local.stop().await.unwrap();
    shared.stop().await.unwrap();
}

#[tokio::test]
async fn replicas_sharing_redis_share_budgets_and_an_outage_fails_open_or_closed_as_configured() {
    let mut redis = RedisServer::start();
    let backend = ScriptedServer::start((0..4).map(|_| ok_reply(1, 1)).collect()).await;
    let tables = |limits: &str| {
        vec![
            key("ci", KEY, limits),
            route("qwen", "openai", &backend.base, ""),
        ]
    };
    let state = format!("state = \"{}\"", redis.url);
    let a = gateway(&state, &tables("requests_per_minute = 2")).await;
    let b = gateway(&state, &tables("requests_per_minute = 2")).await;
    let closed = gateway(
        &format!("{state}\nrate_limit_fail_open = false"),
        &tables("max_concurrent = 5"),
    )
    .await;
    let body = request("qwen", "hi");
    assert_eq!(chat(&a, Credential::Bearer(KEY), &body).await.status, 200);
    let second = chat(&b, Credential::Bearer(KEY), &body).await;
    assert_eq!(second.status, 200);
    assert_eq!(
        header(&second, "x-ratelimit-remaining-requests"),
        "0",
        "b saw a's request"
    );
    chat(&a, Credential::Bearer(KEY), &body).await.error(429);
    chat(&b, Credential::Bearer(KEY), &body).await.error(429);

    redis.kill();
    let open = chat(&a, Credential::Bearer(KEY), &body).await;
    assert_eq!(open.status, 200, "fail open: {}", open.text);
    assert!(
        open.headers.get("x-ratelimit-remaining-requests").is_none(),
        "nothing was counted"
    );
    let metrics = send(&a, Method::GET, "/metrics", Credential::None, None)
        .await
        .text;
    assert!(
        metric(
            &metrics,
            "gateway_rate_limit_state_errors_total{operation=\"admit\"}"
        ) >= 1.0
    );
    let answer = chat(&closed, Credential::Bearer(KEY), &body).await;
    let error = answer.error(503);
    assert_eq!(error["code"], "rate_limit_state_unavailable");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Redis at 127.0.0.1:"),
        "{error}"
    );
    // Without limits to check, a key's requests never wait on Redis.
    let unlimited = gateway(
        &format!("{state}\nrate_limit_fail_open = false"),
        &[
            key("ci", KEY, ""),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    assert_eq!(
        chat(&unlimited, Credential::Bearer(KEY), &body)
            .await
            .status,
        200
    );
    for gateway in [a, b, closed, unlimited] {
        gateway.stop().await.unwrap();
    }
}

/// A character file that failed to load quotes its code: its problems are shown to the keys
/// that may use the character it would be, and to no other.
#[tokio::test]
async fn rejected_character_files_are_shown_only_to_keys_that_may_use_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        std::path::Path::new(CHARACTERS).join("narrator.js"),
        dir.path().join("narrator.js"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.js"),
        "export const CHARACTER_NAME = \"secret plans\" +;\n",
    )
    .unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{}{}{}",
        dir.path().display(),
        key("narrator-only", KEY, "routes = [\"character/narrator\"]"),
        key("characters", OTHER_KEY, "routes = [\"character/*\"]"),
        key("everything", NEAR_MISS, ""),
    );
    let config = Config::from_toml(&text).unwrap();
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    let rejected = |answer: Answer| {
        let list = answer.json();
        list["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["file"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let list = |credential| send(&gateway, Method::GET, "/v1/characters", credential, None);
    assert_eq!(
        rejected(list(Credential::Bearer(KEY)).await),
        Vec::<String>::new()
    );
    assert_eq!(
        rejected(list(Credential::Bearer(OTHER_KEY)).await),
        ["broken.js"]
    );
    assert_eq!(
        rejected(list(Credential::Bearer(NEAR_MISS)).await),
        ["broken.js"]
    );
    // Asked for by name, the broken file is just not there for the narrator's key.
    let answer = send(
        &gateway,
        Method::GET,
        "/v1/characters/broken",
        Credential::Bearer(KEY),
        None,
    )
    .await;
    assert_eq!(answer.status, 404);
    assert!(!answer.text.contains("did not load"), "{}", answer.text);
    let answer = send(
        &gateway,
        Method::GET,
        "/v1/characters/broken",
        Credential::Bearer(OTHER_KEY),
        None,
    )
    .await;
    assert_eq!(answer.status, 404);
    assert!(answer.text.contains("did not load"), "{}", answer.text);
    gateway.stop().await.unwrap();
}

/// A sample's value, 0 when the series was never written.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(series)
                .and_then(|rest| rest.trim().parse().ok())
        })
        .unwrap_or(0.0)
}

/// Waits (at most 10 s) until `ready` holds.
async fn until(mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ready() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `count` replies of `script`, each holding back what follows its first `sent` events
/// until its gate is notified.
fn gated(
    count: usize,
    sent: usize,
    script: impl Fn() -> OpenAiScript,
) -> (Vec<Arc<tokio::sync::Notify>>, Vec<Reply>) {
    (0..count)
        .map(|_| {
            let gate = Arc::new(tokio::sync::Notify::new());
            let mut reply = script().reply();
            reply.gate = Some((sent, Arc::clone(&gate)));
            (gate, reply)
        })
        .unzip()
}

/// Issue 22, item 3: a client that reads part of a stream and hangs up before its usage
/// event is still charged (the prompt's estimate and the output it was sent), so a small
/// `tokens_per_minute` budget refuses such requests once it is spent. In this process and
/// through Redis.
#[tokio::test]
async fn a_stream_left_before_its_usage_is_charged_what_was_delivered() {
    let redis = RedisServer::start();
    for (name, state) in [
        ("leaver", String::new()),
        ("leaver-redis", format!("state = \"{}\"", redis.url)),
    ] {
        // 20 chunks of answer; the backend holds the 20th and the usage (15 + 20 tokens),
        // never released: the clients leave first.
        let (_never_released, replies) = gated(20, 19, || {
            (0..20)
                .fold(OpenAiScript::new(), |script, _| script.text("word "))
                .finish("stop", 15, 20)
        });
        let backend = ScriptedServer::start(replies).await;
        let gateway = gateway(
            &state,
            &[
                key(name, KEY, "tokens_per_minute = 100"),
                route("qwen", "openai", &backend.base, ""),
            ],
        )
        .await;
        let (mut admitted, mut refused) = (0, 0);
        for _ in 0..20 {
            let mut response = client()
                .post(format!("{}/v1/chat/completions", base(&gateway)))
                .bearer_auth(KEY)
                .json(&streaming(request("qwen", "hi")))
                .send()
                .await
                .unwrap();
            match response.status().as_u16() {
                200 => {
                    admitted += 1;
                    let first = response.chunk().await.unwrap().unwrap();
                    assert!(String::from_utf8_lossy(&first).contains("word"));
                    drop(response);
                    until(|| backend.hung_up() == admitted).await;
                    assert_eq!(
                        backend.hung_up(),
                        admitted,
                        "the gateway saw the client leave"
                    );
                }
                429 => refused += 1,
                other => panic!("unexpected status {other}"),
            }
        }
        let metrics = send(&gateway, Method::GET, "/metrics", Credential::None, None)
            .await
            .text;
        let charged = sample(
            &metrics,
            &format!("gateway_key_tokens_total{{key=\"{name}\"}}"),
        );
        eprintln!("{name}: {admitted} of 20 admitted, {charged} tokens charged");
        assert!(
            refused > 0 && admitted <= 6,
            "{name}: {admitted} of 20 admitted against 100 tokens a minute, {charged} tokens charged"
        );
        assert!(charged > 0.0, "{name}: {charged}");
        gateway.stop().await.unwrap();
    }
}

/// Issue 22, item 11: 50 requests at once against a budget of 100 tokens a minute: each
/// reserves its estimate (prompt and `max_tokens`) when admitted, so only about the
/// budget's worth runs, and the key is not left in debt for many minutes. In this process
/// and through Redis.
#[tokio::test]
async fn concurrent_requests_reserve_their_estimate_against_the_tokens_budget() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let redis = RedisServer::start();
    for (name, state) in [
        ("burst", String::new()),
        ("burst-redis", format!("state = \"{}\"", redis.url)),
    ] {
        let (gates, replies) = gated(50, 1, || {
            OpenAiScript::new()
                .text("An answer ")
                .text("of twenty tokens.")
                .finish("stop", 15, 20)
        });
        let backend = ScriptedServer::start(replies).await;
        let gateway = gateway(
            &state,
            &[
                key(name, KEY, "tokens_per_minute = 100"),
                route("qwen", "openai", &backend.base, ""),
            ],
        )
        .await;
        let body = json!({"model": "qwen", "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi"}]});
        let refused = AtomicUsize::new(0);
        let requests = futures::future::join_all((0..50).map(|_| async {
            let answer = chat(&gateway, Credential::Bearer(KEY), &body).await;
            if answer.status == 429 {
                refused.fetch_add(1, Ordering::SeqCst);
            }
            answer.status
        }));
        let release = async {
            // Every request is either at the backend or refused before any answer ends.
            until(|| refused.load(Ordering::SeqCst) + backend.requests().len() == 50).await;
            for gate in &gates {
                gate.notify_one();
            }
        };
        let (statuses, ()) = tokio::join!(requests, release);
        let admitted = statuses.iter().filter(|status| **status == 200).count();
        assert_eq!(
            admitted + refused.load(Ordering::SeqCst),
            50,
            "{statuses:?}"
        );
        let after = chat(&gateway, Credential::Bearer(KEY), &body).await;
        after.error(429);
        let wait: u64 = header(&after, "retry-after").parse().unwrap();
        eprintln!(
            "{name}: {admitted} of 50 admitted ({} tokens), then refused for {wait} s",
            admitted * 35
        );
        // Each reserves 25 (5 of prompt, 20 of answer): four fill the budget, and a fifth or
        // sixth may pass on what drained while the burst arrived.
        assert!(
            (1..=6).contains(&admitted),
            "{name}: {admitted} of 50 admitted against 100 tokens a minute"
        );
        assert!(wait <= 120, "{name}: refused for {wait} s");
        gateway.stop().await.unwrap();
    }
}

/// The first answer Redis decided (it carries the `x-ratelimit-*` headers, or is refused),
/// once it answers again after an outage; the last one after 10 s.
async fn decided_by_redis(gateway: &RunningGateway) -> Answer {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = chat(gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
        let by_redis = answer.status == 429
            || answer
                .headers
                .get("x-ratelimit-remaining-requests")
                .is_some();
        if by_redis || tokio::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Issue 22, item 7: a stream that ends while Redis stalls cannot end its lease there; the
/// release is kept and sent once Redis answers, so a key with `max_concurrent = 1` is
/// usable again at once instead of for `request_timeout_secs` + 60 s.
#[tokio::test]
async fn releases_that_failed_while_redis_stalled_are_sent_once_it_answers() {
    let redis = RedisServer::start();
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut held = OpenAiScript::new()
        .text("First ")
        .text("second.")
        .finish("stop", 1, 1)
        .reply();
    held.gate = Some((1, Arc::clone(&gate)));
    let mut replies = vec![held];
    replies.extend((0..100).map(|_| ok_reply(1, 1)));
    let backend = ScriptedServer::start(replies).await;
    let gateway = gateway(
        &format!("state = \"{}\"", redis.url),
        &[
            key(
                "stalled",
                KEY,
                "max_concurrent = 1\nrequests_per_minute = 1000",
            ),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let mut stream = client()
        .post(format!("{}/v1/chat/completions", base(&gateway)))
        .bearer_auth(KEY)
        .json(&streaming(request("qwen", "hi")))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    stream.chunk().await.unwrap().unwrap();

    redis.pause();
    // Redis does not answer: this request is admitted unchecked (fail open).
    let unchecked = chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
    assert_eq!(unchecked.status, 200, "{}", unchecked.text);
    assert!(
        unchecked
            .headers
            .get("x-ratelimit-remaining-requests")
            .is_none()
    );
    // The stream ends while Redis still stalls: its release fails.
    gate.notify_one();
    while stream.chunk().await.unwrap().is_some() {}
    let released_failed = || async {
        let metrics = send(&gateway, Method::GET, "/metrics", Credential::None, None)
            .await
            .text;
        sample(
            &metrics,
            "gateway_rate_limit_state_errors_total{operation=\"release\"}",
        )
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while released_failed().await < 1.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(released_failed().await >= 1.0, "the release failed");

    redis.resume();
    // The first request Redis decides finds the slot free.
    let decided = decided_by_redis(&gateway).await;
    assert_eq!(
        decided.status, 200,
        "the stream's slot was given back once Redis answered: {}",
        decided.text
    );

    // An admission that timed out on the stalled Redis runs when it wakes, and takes a
    // lease no request holds: that lease is ended too.
    redis.pause();
    let unchecked = chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
    assert_eq!(unchecked.status, 200, "{}", unchecked.text);
    assert!(
        unchecked
            .headers
            .get("x-ratelimit-remaining-requests")
            .is_none()
    );
    redis.resume();
    let decided = decided_by_redis(&gateway).await;
    assert_eq!(
        decided.status, 200,
        "no lease outlived the stall: {}",
        decided.text
    );
    gateway.stop().await.unwrap();
}

/// Issue 22, item 13: `GET /v1/characters/{name}` runs the character's code, so it counts
/// against the key's limits like a POST.
#[tokio::test]
async fn showing_a_character_counts_against_the_keys_requests() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = gateway(
        "",
        &[
            key("ci", KEY, "requests_per_minute = 1"),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let show = || {
        send(
            &gateway,
            Method::GET,
            "/v1/characters/french-tutor",
            Credential::Bearer(KEY),
            None,
        )
    };
    let first = show().await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.json()["system_prompt"].is_string(), "{}", first.text);
    let second = show().await;
    let error = second.error(429);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("1 requests per minute"),
        "{error}"
    );
    assert!(second.headers.get("retry-after").is_some());
    let head = send(
        &gateway,
        Method::HEAD,
        "/v1/characters/french-tutor",
        Credential::Bearer(KEY),
        None,
    )
    .await;
    assert_eq!(head.status, 429, "HEAD runs the same handler");
    // What runs no character code is not counted.
    let list = send(
        &gateway,
        Method::GET,
        "/v1/characters",
        Credential::Bearer(KEY),
        None,
    )
    .await;
    assert_eq!(list.status, 200);
    gateway.stop().await.unwrap();
}

/// Issue 22, item 12: the memory store is shared by every key, but room is made from the
/// key holding the most, so one key storing response after response pushes out its own
/// responses, never another key's.
#[tokio::test]
async fn one_key_flooding_the_store_does_not_evict_another_keys_responses() {
    let backend = ScriptedServer::start((0..12).map(|_| ok_reply(1, 1)).collect()).await;
    let gateway = gateway(
        "[responses]\nstore_max_entries = 4",
        &[
            key("quiet", KEY, ""),
            key("flood", OTHER_KEY, ""),
            route("qwen", "openai", &backend.base, ""),
        ],
    )
    .await;
    let body = json!({"model": "qwen", "input": "hi"});
    let respond = |credential| {
        send(
            &gateway,
            Method::POST,
            "/v1/responses",
            credential,
            Some(&body),
        )
    };
    let kept = respond(Credential::Bearer(KEY)).await.json();
    let kept_id = kept["id"].as_str().unwrap().to_owned();
    let mut flood_ids = Vec::new();
    for _ in 0..10 {
        let answer = respond(Credential::Bearer(OTHER_KEY)).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        flood_ids.push(answer.json()["id"].as_str().unwrap().to_owned());
    }
    let path = |id: &str| format!("/v1/responses/{id}");
    let quiet = send(
        &gateway,
        Method::GET,
        &path(&kept_id),
        Credential::Bearer(KEY),
        None,
    )
    .await;
    assert_eq!(
        quiet.status, 200,
        "the quiet key's response was evicted by the other key's ten: {}",
        quiet.text
    );
    // The flooding key's own oldest went, its newest are kept.
    let oldest = send(
        &gateway,
        Method::GET,
        &path(&flood_ids[0]),
        Credential::Bearer(OTHER_KEY),
        None,
    )
    .await;
    assert_eq!(oldest.status, 404);
    let newest = send(
        &gateway,
        Method::GET,
        &path(&flood_ids[9]),
        Credential::Bearer(OTHER_KEY),
        None,
    )
    .await;
    assert_eq!(newest.status, 200);
    gateway.stop().await.unwrap();
}

/// Issue 22, item 16: `store: true` while the Redis that keeps responses is down is
/// refused with 503 `store_unavailable` before the backend is asked (the answer could not be
/// kept); `store: false` is answered as ever.
#[tokio::test]
async fn store_true_during_a_redis_outage_is_refused_not_answered_unkept() {
    let mut redis = RedisServer::start();
    let backend = ScriptedServer::start((0..4).map(|_| ok_reply(1, 1)).collect()).await;
    let gateway = gateway(
        &format!("state = \"{}\"", redis.url),
        &[route("qwen", "openai", &backend.base, "")],
    )
    .await;
    let body = json!({"model": "qwen", "input": "hi"});
    let stored = send(
        &gateway,
        Method::POST,
        "/v1/responses",
        Credential::None,
        Some(&body),
    )
    .await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    redis.kill();
    for stream in [false, true] {
        let mut asked = body.clone();
        asked["stream"] = json!(stream);
        let answer = send(
            &gateway,
            Method::POST,
            "/v1/responses",
            Credential::None,
            Some(&asked),
        )
        .await;
        let error = answer.error(503);
        assert_eq!(error["code"], "store_unavailable", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("Redis at 127.0.0.1:"),
            "{error}"
        );
    }
    assert_eq!(backend.requests().len(), 1, "refused before the backend");
    let unstored = json!({"model": "qwen", "input": "hi", "store": false});
    let answer = send(
        &gateway,
        Method::POST,
        "/v1/responses",
        Credential::None,
        Some(&unstored),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["store"], false);
    gateway.stop().await.unwrap();
}

/// Issue 22, item 16, the rarer case: Redis answers when the request comes in and is gone by
/// the time the backend has answered. The answer is not held back, but it says it was not
/// kept: `store: false` in the response (whole, with `x-switchboard-not-stored`) and in a
/// stream's terminal event.
#[tokio::test]
async fn a_store_lost_while_the_backend_answers_says_store_false() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let gated = || Reply {
        gate: Some((1, Arc::clone(&gate))),
        ..ok_reply(1, 1)
    };
    let backend = ScriptedServer::start(vec![gated(), gated()]).await;
    let mut answers = Vec::new();
    for stream in [false, true] {
        let mut redis = RedisServer::start();
        let gateway = gateway(
            &format!("state = \"{}\"", redis.url),
            &[route("qwen", "openai", &backend.base, "")],
        )
        .await;
        let body = json!({"model": "qwen", "input": "hi", "stream": stream});
        let asked = answers.len() + 1;
        // Redis goes while the backend's answer is held open.
        let lose_redis = async {
            while backend.requests().len() < asked {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            redis.kill();
            gate.notify_one();
        };
        let request = send(
            &gateway,
            Method::POST,
            "/v1/responses",
            Credential::None,
            Some(&body),
        );
        let (answer, ()) = tokio::join!(request, lose_redis);
        gateway.stop().await.unwrap();
        answers.push(answer);
    }
    let whole = &answers[0];
    assert_eq!(whole.status, 200, "{}", whole.text);
    assert_eq!(whole.json()["store"], false);
    assert_eq!(
        header(whole, "x-switchboard-not-stored"),
        "store_unavailable"
    );
    let streamed = &answers[1];
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let terminal = streamed
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|event| event["type"] == "response.completed")
        .unwrap_or_else(|| panic!("{}", streamed.text));
    assert_eq!(terminal["response"]["store"], false, "{terminal}");
}

/// Issue 37, item 1: admission (resolve, authorize, reserve) comes before the gateway's
/// tools on every API. A request admitted at the gate whose key's budget another request
/// spends while its body arrives is refused (429) without ever connecting to the
/// MCP server it names: before, it connected first and waited on a server that never
/// answered (up to 10 s) for a 429 all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_for_its_tokens_never_connects_to_the_mcp_servers_it_names() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // An MCP server that accepts and never answers; it counts who came.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    let user = json!([{"role": "user", "content": "hi"}]);
    let mcp = json!({"type": "mcp", "server_label": "far", "server_url": url,
        "require_approval": "never"});
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "qwen", "max_tokens": 50, "messages": user, "tools": [mcp]}),
        ),
        (
            "/v1/messages",
            json!({"model": "qwen", "max_tokens": 50, "messages": user,
                "mcp_servers": [{"type": "url", "url": url, "name": "far"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "qwen", "max_output_tokens": 50, "input": "hi", "tools": [mcp]}),
        ),
    ] {
        // An answer whose usage (1,000 tokens) spends ten times the budget.
        let backend = ScriptedServer::start(vec![ok_reply(500, 500)]).await;
        let gateway = gateway(
            "mcp_allowed_urls = [\"http://127.0.0.1:*/*\"]",
            &[
                key("racer", KEY, "tokens_per_minute = 100"),
                route("qwen", "openai", &backend.base, ""),
            ],
        )
        .await;
        // The racer's head passes the gate while nothing is spent; its body waits.
        let body = body.to_string();
        let (head, tail) = body.split_at(body.len() / 2);
        let mut racer = tokio::net::TcpStream::connect(gateway.address)
            .await
            .unwrap();
        racer
            .write_all(
                format!(
                    "POST {path} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                    body.len()
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        // Meanwhile another request spends the budget.
        let spender = chat(&gateway, Credential::Bearer(KEY), &request("qwen", "hi")).await;
        assert_eq!(spender.status, 200, "{}", spender.text);
        racer.write_all(tail.as_bytes()).await.unwrap();
        let mut answer = String::new();
        racer.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 429"), "{path}: {answer}");
        let connections = accepted.load(Ordering::SeqCst);
        eprintln!("{path}: connections to the MCP server of the refused request: {connections}");
        assert_eq!(
            connections, 0,
            "{path}: a refused request connected to its MCP server"
        );
        gateway.stop().await.unwrap();
    }
}

/// Issue 37, item 1: the log line of a request for a model nothing answers names the model
/// the client asked for, on every API (before: `route="-"` and no model, so an operator
/// could not see which name clients asked for).
#[tokio::test]
async fn the_log_line_of_an_unknown_models_404_names_the_model_on_every_api() {
    let logs = captured_logs();
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = gateway("", &[route("qwen", "openai", &backend.base, "")]).await;
    let model = "no-such-model-for-the-log";
    let user = json!([{"role": "user", "content": "hi"}]);
    for (path, endpoint, body) in [
        (
            "/v1/chat/completions",
            "chat_completions",
            json!({"model": model, "messages": user}),
        ),
        (
            "/v1/messages",
            "messages",
            json!({"model": model, "max_tokens": 5, "messages": user}),
        ),
        (
            "/v1/responses",
            "responses",
            json!({"model": model, "input": "hi"}),
        ),
    ] {
        let answer = send(&gateway, Method::POST, path, Credential::None, Some(&body)).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
        let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
        let line = text
            .lines()
            .find(|line| {
                line.contains("switchboard::request")
                    && line.contains(&format!("endpoint=\"{endpoint}\""))
                    && line.contains("outcome=\"404\"")
                    && line.contains(model)
            })
            .unwrap_or_else(|| panic!("{path}: no request line names {model}:\n{text}"));
        assert!(line.contains(&format!("model=\"{model}\"")), "{line}");
    }
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}
