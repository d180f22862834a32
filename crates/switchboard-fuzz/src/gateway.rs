//! Target `gateway`: request bodies through the gateway's real entry point, the axum router,
//! driven in-process (no socket). Its routes point at a closed port, so a request that passes
//! validation fails fast at the backend with a 502. Whatever the body, the answer must never
//! be a 500, an error must be in the shape of its API (OpenAI's, or Anthropic's for
//! Messages), and a streamed answer must end cleanly.
//!
//! Input: an endpoint (index into [`ENDPOINTS`]), then the body.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use switchboard_server::{AppState, Config, router};
use tower::ServiceExt;

use crate::{Finding, repo};

/// The endpoints that take a request body, in input order: a new API is one more line.
pub const ENDPOINTS: &[&str] = &[
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/responses",
];

/// More than any answer to a bounded request can hold; past it the answer is a finding.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// A native and a prompted route, both to a port nothing listens on, and the repository's
/// characters (reachable as `character/<name>`, talking through the native route).
fn config_text() -> String {
    let characters = repo::repository().join("characters");
    let backend = |name: &str, tool_calling: &str| {
        format!(
            "[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n\
             model = \"Qwen/Qwen2.5-7B-Instruct\"\ntool_calling = \"{tool_calling}\"\n"
        )
    };
    format!(
        "listen = \"127.0.0.1:0\"\ncharacters = '{}'\nrequest_timeout_secs = 30\n{}{}",
        characters.display(),
        backend("qwen", "native"),
        backend("prompted", "prompted"),
    )
}

/// The router and the runtime that drives it, built once per process. The runtime's clock is
/// paused, so tokio jumps it to the next timer whenever nothing is ready: the providers'
/// retry backoff against the closed port (0.5 s, then 1 s) would otherwise cost every valid
/// input 1.5 s. A deadline may then fire while a character's engine thread works; a 504 is
/// as acceptable an answer as the 502.
struct Gateway {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

/// Panics anywhere in the process. A task the router spawned may panic out of sight of the
/// request (tokio catches it); counting them makes that a finding in `cargo test` too, where
/// no fuzzer hook aborts the process.
static PANICS: AtomicUsize = AtomicUsize::new(0);

static GATEWAY: LazyLock<Result<Gateway, String>> = LazyLock::new(|| {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let config = Config::from_toml(&config_text()).map_err(|problems| problems.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|error| format!("cannot start a runtime: {error}"))?;
    let state = AppState::build(&config, &|_| None).map_err(|problems| problems.to_string())?;
    Ok(Gateway {
        runtime,
        router: router(state),
    })
});

pub(crate) fn check(data: &[u8]) -> Result<(), Finding> {
    let gateway = GATEWAY
        .as_ref()
        .map_err(|error| Finding::Setup(error.clone()))?;
    let (selector, body) = data.split_first().unwrap_or((&0, &[]));
    let path = ENDPOINTS[usize::from(*selector) % ENDPOINTS.len()];
    let request = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_vec()))
        .map_err(|error| Finding::Setup(format!("cannot build a request: {error}")))?;
    let panics = PANICS.load(Ordering::SeqCst);
    let (status, answer) = gateway.runtime.block_on(async {
        let response = gateway
            .router
            .clone()
            .oneshot(request)
            .await
            .map_err(|error| Finding::Setup(format!("the router failed: {error}")))?;
        let status = response.status();
        let answer = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|error| {
                Finding::broken(
                    format!("POST {path}"),
                    format!("the {status} answer's body broke off: {error}"),
                )
            })?;
        Ok::<_, Finding>((status, answer))
    })?;
    if PANICS.load(Ordering::SeqCst) != panics {
        return Err(Finding::broken(
            format!("POST {path}"),
            format!("a task panicked while the gateway answered {status}"),
        ));
    }
    judge(path, status, &answer).map_err(|problem| Finding::broken(format!("POST {path}"), problem))
}

/// What any answer must be: never a 500, and an error in the shape of the endpoint's API
/// (Anthropic's for the Messages endpoints, OpenAI's for the rest).
fn judge(path: &str, status: StatusCode, answer: &[u8]) -> Result<(), String> {
    let text = || String::from_utf8_lossy(answer);
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        return Err(format!("answered 500: {}", text()));
    }
    if status.is_client_error() || status.is_server_error() {
        let body: Value = serde_json::from_slice(answer)
            .map_err(|_| format!("the {status} answer is not JSON: {}", text()))?;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        let anthropic = path.starts_with("/v1/messages");
        let shaped = !message.is_empty()
            && body["error"]["type"].is_string()
            && (!anthropic || body["type"] == "error");
        if !shaped {
            let api = if anthropic {
                "an Anthropic"
            } else {
                "an OpenAI"
            };
            return Err(format!(
                "the {status} answer is not {api} error: {}",
                text()
            ));
        }
    }
    Ok(())
}

fn input(endpoint: usize, body: &[u8]) -> Vec<u8> {
    let mut input = vec![u8::try_from(endpoint).unwrap_or_default()];
    input.extend(body);
    input
}

/// Requests built from the repository's fixtures: each tool list, to each kind of model
/// (native route, prompted route, a character, an unknown name), streamed and not; a
/// conversation that replays the parser fixtures' calls and answers them; the CLI's
/// not-JSON file.
pub(crate) fn seeds() -> std::io::Result<Vec<Vec<u8>>> {
    let fixtures = repo::parser_fixtures()?;
    let mut tool_lists = vec![Value::Null];
    for file in [
        "examples/narrator-tools.json",
        "crates/switchboard/tests/fixtures/six-mistakes.json",
    ] {
        tool_lists.push(serde_json::from_slice(&repo::read(file)?)?);
    }
    if let Some(header) = fixtures.first() {
        tool_lists.push(header["tools"].clone());
    }
    let mut bodies = Vec::new();
    for tools in &tool_lists {
        for model in ["qwen", "prompted", "character/narrator", "nobody"] {
            for stream in [false, true] {
                let mut body = json!({
                    "model": model,
                    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
                    "stream": stream,
                });
                if !tools.is_null() {
                    body["tools"] = tools.clone();
                }
                bodies.push(body);
            }
        }
    }
    let calls: Vec<Value> = fixtures
        .iter()
        .skip(1)
        .flat_map(|case| {
            case["expected"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .take(8)
        .collect();
    for model in ["qwen", "prompted"] {
        bodies.push(conversation(
            model,
            &calls,
            &tool_lists[tool_lists.len() - 1],
        ));
    }
    let mut bodies: Vec<Vec<u8>> = bodies
        .iter()
        .map(|body| body.to_string().into_bytes())
        .collect();
    bodies.push(repo::read(
        "crates/switchboard/tests/fixtures/not-json.txt",
    )?);
    let mut inputs: Vec<Vec<u8>> = (0..ENDPOINTS.len())
        .flat_map(|endpoint| bodies.iter().map(move |body| input(endpoint, body)))
        .collect();
    for (endpoint, body) in api_seeds() {
        let endpoint = ENDPOINTS
            .iter()
            .position(|path| *path == endpoint)
            .unwrap_or_default();
        inputs.push(input(endpoint, body.to_string().as_bytes()));
    }
    Ok(inputs)
}

/// Requests in the Messages and Responses APIs' own shapes, with a tool call answered, to
/// each kind of model, streamed and not.
fn api_seeds() -> Vec<(&'static str, Value)> {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let mut seeds = Vec::new();
    for model in ["qwen", "prompted", "character/narrator"] {
        for stream in [false, true] {
            let messages = json!({
                "model": model, "max_tokens": 64, "stream": stream, "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "A call.", "signature": "c2ln"},
                        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "18 C"}]}
                ],
                "tools": [{"name": "get_weather", "description": "Weather", "input_schema": schema},
                    {"type": "web_search_20250305", "name": "web_search"}],
                "tool_choice": {"type": "auto"}
            });
            seeds.push(("/v1/messages", messages.clone()));
            seeds.push(("/v1/messages/count_tokens", messages));
            seeds.push(("/v1/responses", json!({
                "model": model, "stream": stream, "store": false, "instructions": "Be brief.",
                "input": [
                    {"type": "message", "role": "user", "content": "Weather in Paris?"},
                    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "18 C"}
                ],
                "tools": [{"type": "function", "name": "get_weather", "parameters": schema},
                    {"type": "custom", "name": "apply_patch"}, {"type": "web_search"}],
                "tool_choice": "auto"
            })));
        }
    }
    seeds
}

/// A conversation where the assistant made `calls` and each was answered, with every
/// optional parameter the gateway checks.
fn conversation(model: &str, calls: &[Value], tools: &Value) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            json!({"id": format!("call_{index}"), "type": "function",
                   "function": {"name": call["name"], "arguments": call["arguments"].to_string()}})
        })
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": "You are helpful."}),
        json!({"role": "user", "content": [{"type": "text", "text": "Do it all."}]}),
        json!({"role": "assistant", "content": null, "tool_calls": tool_calls}),
    ];
    messages.extend((0..calls.len()).map(
        |index| json!({"role": "tool", "tool_call_id": format!("call_{index}"), "content": "done"}),
    ));
    json!({
        "model": model,
        "messages": messages,
        "tools": tools,
        "tool_choice": "required",
        "parallel_tool_calls": true,
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.5,
        "max_tokens": 64,
        "seed": 7,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_refuses_a_500_and_errors_in_other_shapes() {
        let error = br#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#;
        let chat = "/v1/chat/completions";
        assert_eq!(judge(chat, StatusCode::BAD_REQUEST, error), Ok(()));
        assert_eq!(judge(chat, StatusCode::OK, b"data: [DONE]\n\n"), Ok(()));
        assert!(judge(chat, StatusCode::INTERNAL_SERVER_ERROR, error).is_err());
        assert!(judge(chat, StatusCode::BAD_GATEWAY, b"upstream failed").is_err());
        assert!(judge(chat, StatusCode::BAD_REQUEST, br#"{"error":{"type":"x"}}"#).is_err());
        // Messages answers in Anthropic's shape, and only that.
        let anthropic =
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#;
        assert_eq!(
            judge("/v1/messages", StatusCode::BAD_REQUEST, anthropic),
            Ok(())
        );
        assert!(judge("/v1/messages", StatusCode::BAD_REQUEST, error).is_err());
    }

    #[test]
    fn a_valid_request_fails_fast_at_the_closed_backend() {
        let body = json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]});
        let request = Request::post(ENDPOINTS[0])
            .body(Body::from(body.to_string()))
            .unwrap();
        let gateway = GATEWAY.as_ref().unwrap();
        let status = gateway
            .runtime
            .block_on(gateway.router.clone().oneshot(request))
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::BAD_GATEWAY);
    }
}
