//! The gateway in front of a real model server: llama.cpp's `llama-server` running
//! SmolLM2-135M-Instruct (crates/switchboard-testkit/src/llama.rs; `scripts/llama-server
//! setup` builds it). What no double shows: a real server's streaming, keep-alive and
//! tool-call parsing, and a real model's output through every route. Checked is behaviour,
//! never the model's wording; at temperature 0, with the server's fixed seed, one slot and no
//! prompt cache, a request gets the same answer every run, so streamed and whole answers are
//! compared exactly. Without the server these tests print SKIP and pass, and fail under
//! `SWITCHBOARD_REQUIRE_PEERS=1` (CI). Chat Completions, Messages and Responses are
//! each asked here: every API the gateway serves meets the real server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_server::RunningGateway;
use switchboard_testkit::{LlamaServer, Tap};

/// Routes `native`, `hermes` and `json` (both prompted) in front of `url`; characters talk
/// through `native`.
async fn gateway_to(url: &str) -> RunningGateway {
    start(
        "character_route = \"native\"",
        &[
            route("native", "openai", url, ""),
            route(
                "hermes",
                "openai",
                url,
                "tool_calling = \"prompted\"\nformat = \"hermes\"",
            ),
            route(
                "json",
                "openai",
                url,
                "tool_calling = \"prompted\"\nformat = \"json\"",
            ),
        ],
    )
    .await
}

/// The gateway in front of the real server (shared by this file's tests, started by the
/// first), through a tap that shows what reached the model. `None`: no server, skip.
async fn tapped() -> Option<(RunningGateway, Tap)> {
    let server = LlamaServer::shared()?;
    let tap = Tap::start(server.base_url()).await;
    let gateway = gateway_to(&format!("{}/v1", tap.base)).await;
    Some((gateway, tap))
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
}

/// A history in which the assistant answered each weather question with a call, then the
/// question for `ask`. A model this small never calls a tool unprompted; after four such
/// turns it calls on every route (after two, on the hermes route, it imitates the tool
/// result instead: see `prompted_garbage_comes_back_as_text`).
fn few_shot(shots: usize, ask: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for (index, city) in ["Paris", "Berlin", "Rome", "Oslo"]
        .iter()
        .take(shots)
        .enumerate()
    {
        let id = format!("call_{index}");
        messages.push(json!({"role": "user", "content": format!("Weather in {city}?")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "get_weather", "arguments": json!({"city": city}).to_string()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "18 C"}));
    }
    messages.push(json!({"role": "user", "content": format!("Weather in {ask}?")}));
    messages
}

fn tool_request(model: &str, messages: Vec<Value>, max_tokens: u64) -> Value {
    json!({"model": model, "messages": messages, "tools": [weather_tool()], "temperature": 0,
        "max_tokens": max_tokens})
}

/// The answer whole and streamed, checked to be one answer; returns its summary (ids
/// replaced by positions).
async fn whole_and_streamed(gateway: &RunningGateway, body: &Value) -> Value {
    let whole = post(gateway, body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = without_ids(summary(&whole.json()));
    let streamed = post_stream(gateway, &streaming(body.clone())).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(streamed.done, "no [DONE]: {}", streamed.text);
    assert_eq!(without_ids(accumulate(&streamed.chunks)), whole);
    whole
}

/// The call's arguments, which must be a JSON object with a string `city`.
fn city_of(call: &Value) -> String {
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    arguments["city"]
        .as_str()
        .unwrap_or_else(|| panic!("no city: {call}"))
        .to_owned()
}

fn is_weather_call(answer: &Value) {
    assert_eq!(answer["finish_reason"], "tool_calls", "{answer}");
    let calls = answer["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{answer}");
    assert_eq!(calls[0]["function"]["name"], "get_weather", "{answer}");
    assert!(!city_of(&calls[0]).is_empty(), "{answer}");
    assert!(answer["tool_call_errors"].is_null(), "{answer}");
}

#[tokio::test]
async fn plain_chat_streamed_and_whole_give_one_answer() {
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    let body = json!({"model": "native", "temperature": 0, "max_tokens": 40, "messages": [
        {"role": "system", "content": "Answer in one short sentence."},
        {"role": "user", "content": "What is the capital of France?"}]});
    let answer = whole_and_streamed(&gateway, &body).await;
    assert!(
        answer["content"]
            .as_str()
            .is_some_and(|text| !text.trim().is_empty()),
        "{answer}"
    );
    assert_eq!(answer["tool_calls"], json!([]));
    let usage = &answer["usage"];
    assert!(
        usage["completion_tokens"].as_u64().unwrap() <= 40,
        "{usage}"
    );
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_native_call_through_the_sdk_streamed_equals_whole() {
    let Some((gateway, tap)) = tapped().await else {
        return;
    };
    let body = tool_request("native", few_shot(4, "Tokyo"), 60);
    let result = python_client(
        "sdk/client.py",
        &[&gateway.base_url(), "request"],
        "openai",
        Some(&body),
    )
    .await;
    let whole = &result["whole"];
    let streamed = &result["streamed"]["final"];
    let comparable = |answer: &Value| {
        let calls: Vec<Value> = answer["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| {
                assert!(is_call_id(call["id"].as_str().unwrap()), "{call}");
                json!({"name": call["name"], "arguments": call["arguments"]})
            })
            .collect();
        json!({"content": answer["content"], "finish_reason": answer["finish_reason"],
            "tool_calls": calls, "usage": answer["usage"]})
    };
    assert_eq!(comparable(streamed), comparable(whole));
    assert_eq!(whole["finish_reason"], "tool_calls", "{whole}");
    let calls = whole["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{whole}");
    assert_eq!(calls[0]["name"], "get_weather");
    let arguments: Value = serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments["city"].is_string(), "{arguments}");
    assert!(whole["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    // Native: the tools and the earlier calls reached the server as fields, for its template.
    for sent in tap.requests() {
        assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(
            sent["messages"][1]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_tool_result_goes_back_to_the_model_and_it_answers() {
    let Some((gateway, tap)) = tapped().await else {
        return;
    };
    let mut messages = few_shot(4, "Tokyo");
    let first = post(&gateway, &tool_request("native", messages.clone(), 60)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    let message = first["choices"][0]["message"].clone();
    is_weather_call(&summary(&first));
    let id = message["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(message);
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": "25 C, clear sky"}));
    let answer = whole_and_streamed(&gateway, &tool_request("native", messages, 60)).await;
    assert!(
        ["stop", "tool_calls", "length"].contains(&answer["finish_reason"].as_str().unwrap()),
        "{answer}"
    );
    // The server got the result paired with the call the gateway had handed out.
    let sent = tap.requests().pop().unwrap();
    let sent = sent["messages"].as_array().unwrap();
    let (result, call) = (&sent[sent.len() - 1], &sent[sent.len() - 2]);
    assert_eq!(result["role"], "tool");
    assert_eq!(result["content"], "25 C, clear sky");
    assert_eq!(result["tool_call_id"], call["tool_calls"][0]["id"]);
    gateway.stop().await.unwrap();
}

/// At 20 tokens the model is cut inside its call's arguments (`{"city":`), and llama.cpp's
/// server hands the partial call on.
fn cut_call(model: &str) -> Value {
    tool_request(model, few_shot(4, "Tokyo"), 20)
}

#[tokio::test]
async fn a_call_cut_by_max_tokens_is_reported_in_tool_call_errors() {
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    let answer = whole_and_streamed(&gateway, &cut_call("native")).await;
    let calls = answer["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{answer}");
    assert!(
        serde_json::from_str::<Value>(calls[0]["function"]["arguments"].as_str().unwrap()).is_err(),
        "{answer}"
    );
    let errors = answer["tool_call_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{answer}");
    assert_eq!(errors[0]["index"], 0);
    assert_eq!(errors[0]["code"], "malformed_tool_arguments");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_call_cut_by_max_tokens_finishes_with_length() {
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    let answer = whole_and_streamed(&gateway, &cut_call("native")).await;
    assert_eq!(answer["finish_reason"], "length", "{answer}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn prompted_routes_send_their_markup_and_parse_the_models_calls() {
    let Some((gateway, tap)) = tapped().await else {
        return;
    };
    for route in ["hermes", "json"] {
        let already = tap.requests().len();
        let answer =
            whole_and_streamed(&gateway, &tool_request(route, few_shot(4, "Tokyo"), 60)).await;
        is_weather_call(&answer);
        assert!(
            answer["content"].is_null(),
            "no markup left in the text: {answer}"
        );
        // What reached the model: no tool fields at all; the tools in the system prompt, the
        // earlier calls and results written out as text.
        let sent = tap.requests();
        assert_eq!(sent.len(), already + 2, "{route}");
        for request in &sent[already..] {
            assert!(
                request
                    .get("tools")
                    .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty)),
                "{route}: {request}"
            );
            let messages = request["messages"].as_array().unwrap();
            assert_eq!(messages[0]["role"], "system", "{route}: {request}");
            assert!(
                messages[0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("get_weather"),
                "{route}: {request}"
            );
            let assistants: Vec<&Value> = messages
                .iter()
                .filter(|message| message["role"] == "assistant")
                .collect();
            assert_eq!(assistants.len(), 4, "{route}: {request}");
            for message in assistants {
                assert!(message.get("tool_calls").is_none(), "{route}: {message}");
                assert!(
                    message["content"].as_str().unwrap().contains("get_weather"),
                    "{route}: {message}"
                );
            }
            assert!(
                messages.iter().all(|message| message["role"] != "tool"),
                "{route}: {request}"
            );
        }
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn prompted_garbage_comes_back_as_text() {
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    // After only two examples the model writes a made-up `<tool_response>` block, which is
    // not a call in any family's markup.
    let answer =
        whole_and_streamed(&gateway, &tool_request("hermes", few_shot(2, "Tokyo"), 60)).await;
    assert_eq!(answer["tool_calls"], json!([]), "{answer}");
    assert!(answer["tool_call_errors"].is_null(), "{answer}");
    assert_eq!(answer["finish_reason"], "stop", "{answer}");
    assert!(
        answer["content"]
            .as_str()
            .is_some_and(|text| text.contains('<')),
        "the markup-like text is passed on as it is: {answer}"
    );
    gateway.stop().await.unwrap();
}

fn narrator(extra: Value) -> Value {
    let mut body = json!({"model": "character/narrator", "messages": [
        {"role": "user", "content": "I open the old door."}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

#[tokio::test]
async fn the_narrator_talks_over_the_character_route() {
    let Some((gateway, tap)) = tapped().await else {
        return;
    };
    let answer = whole_and_streamed(&gateway, &narrator(json!({}))).await;
    assert!(
        answer["content"]
            .as_str()
            .is_some_and(|text| !text.trim().is_empty()),
        "{answer}"
    );
    assert_eq!(
        answer["tool_calls"],
        json!([]),
        "the character's calls stay inside"
    );
    assert_eq!(answer["finish_reason"], "stop");
    let sent = &tap.requests()[0];
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("narrator"),
        "{sent}"
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "log_story_event");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn the_narrator_honours_max_tokens() {
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    let answer = whole_and_streamed(&gateway, &narrator(json!({"max_tokens": 5}))).await;
    assert_eq!(answer["finish_reason"], "length", "{answer}");
    assert!(
        answer["usage"]["completion_tokens"].as_u64().unwrap() <= 5,
        "{answer}"
    );
    gateway.stop().await.unwrap();
}

/// llama.cpp's server announces keep-alive and closes the connection after a stream: the
/// next request on it used to fail ("connection closed before message completed", about
/// one streamed request in five). Straight to the server, no tap, so its connections are
/// the gateway's.
#[tokio::test]
async fn fifty_streamed_and_fifty_whole_requests_back_to_back_all_succeed() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let gateway = gateway_to(&format!("{}/v1", server.base_url())).await;
    let body = json!({"model": "native", "temperature": 0, "max_tokens": 3, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say OK."}]});
    let mut failures = Vec::new();
    for round in 0..50 {
        let streamed = post_stream(&gateway, &streaming(body.clone())).await;
        if streamed.status != 200 || !streamed.done {
            failures.push(format!(
                "streamed {round}: {} {}",
                streamed.status, streamed.text
            ));
        }
    }
    for round in 0..50 {
        let whole = post(&gateway, &body).await;
        if whole.status != 200 {
            failures.push(format!("whole {round}: {} {}", whole.status, whole.text));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 100 failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    gateway.stop().await.unwrap();
}

/// `few_shot` in Anthropic's Messages shape: `tool_use` blocks and `tool_result` turns.
fn few_shot_messages(shots: usize, ask: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for (index, city) in ["Paris", "Berlin", "Rome", "Oslo"]
        .iter()
        .take(shots)
        .enumerate()
    {
        let id = format!("toolu_{index}");
        messages.push(json!({"role": "user", "content": format!("Weather in {city}?")}));
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": city}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": "18 C"}]}));
    }
    messages.push(json!({"role": "user", "content": format!("Weather in {ask}?")}));
    messages
}

/// `few_shot` as Responses input items: `function_call` and `function_call_output`.
fn few_shot_items(shots: usize, ask: &str) -> Vec<Value> {
    let mut items = Vec::new();
    for (index, city) in ["Paris", "Berlin", "Rome", "Oslo"]
        .iter()
        .take(shots)
        .enumerate()
    {
        let id = format!("call_{index}");
        items.push(
            json!({"type": "message", "role": "user", "content": format!("Weather in {city}?")}),
        );
        items.push(
            json!({"type": "function_call", "call_id": id, "name": "get_weather",
            "arguments": json!({"city": city}).to_string()}),
        );
        items.push(json!({"type": "function_call_output", "call_id": id, "output": "18 C"}));
    }
    items.push(json!({"type": "message", "role": "user", "content": format!("Weather in {ask}?")}));
    items
}

#[tokio::test]
async fn the_messages_api_streamed_and_whole_give_one_tool_call_on_every_route_kind() {
    use common::messages::*;
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    for model in ["native", "hermes"] {
        let body = json!({"model": model, "max_tokens": 60, "temperature": 0,
            "messages": few_shot_messages(4, "Tokyo"),
            "tools": [{"name": "get_weather", "description": "Current weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]});
        let whole = post_messages(&gateway, &body).await;
        assert_eq!(whole.status, 200, "{model}: {}", whole.text);
        let whole = without_message_ids(whole.json());
        let streamed = post_messages_stream(&gateway, &body).await;
        assert_eq!(streamed.status, 200, "{model}: {}", streamed.text);
        assert_eq!(
            without_message_ids(streamed.message),
            whole,
            "{model}: streamed and whole differ"
        );
        // The head's prompt count is llama.cpp's own, the one its answer reports at the end.
        assert_eq!(streamed.headers["x-switchboard-token-count"], "backend");
        assert_eq!(
            streamed.events[0].1["message"]["usage"]["input_tokens"],
            whole["usage"]["input_tokens"],
            "{model}: {}",
            streamed.text
        );
        assert_eq!(whole["stop_reason"], "tool_use", "{model}: {whole}");
        let call = whole["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|block| block["type"] == "tool_use")
            .unwrap_or_else(|| panic!("{model}: no tool_use block: {whole}"));
        assert_eq!(call["name"], "get_weather", "{model}: {whole}");
        assert!(
            call["input"]["city"]
                .as_str()
                .is_some_and(|city| !city.is_empty()),
            "{model}: {whole}"
        );
    }
}

#[tokio::test]
async fn the_responses_api_streamed_and_whole_give_one_function_call_on_every_route_kind() {
    use common::responses::*;
    let Some((gateway, _)) = tapped().await else {
        return;
    };
    for model in ["native", "hermes"] {
        let body = json!({"model": model, "max_output_tokens": 60, "temperature": 0, "store": false,
            "input": few_shot_items(4, "Tokyo"),
            "tools": [{"type": "function", "name": "get_weather", "description": "Current weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]});
        let whole = post_to(&gateway, "/v1/responses", &body).await;
        assert_eq!(whole.status, 200, "{model}: {}", whole.text);
        let whole = whole.json();
        let mut streaming = body.clone();
        streaming["stream"] = json!(true);
        let streamed = post_to(&gateway, "/v1/responses", &streaming).await;
        assert_eq!(streamed.status, 200, "{model}: {}", streamed.text);
        assert_eq!(
            comparable(replay(&events(&streamed.text))),
            comparable(whole.clone()),
            "{model}: streamed and whole differ"
        );
        assert_eq!(whole["status"], "completed", "{model}: {whole}");
        let call = whole["output"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["type"] == "function_call")
            .unwrap_or_else(|| panic!("{model}: no function_call: {whole}"));
        assert_eq!(call["name"], "get_weather", "{model}: {whole}");
        let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert!(
            arguments["city"]
                .as_str()
                .is_some_and(|city| !city.is_empty()),
            "{model}: {whole}"
        );
    }
}

/// A route over the real server and a replica that is not there: every request is answered
/// by the real one, the dead one is ejected, and the answers say which replica answered.
#[tokio::test]
async fn a_route_over_the_real_server_and_a_dead_replica_answers_every_request() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let live = format!("{}/v1", server.base_url());
    let dead = format!("{}/v1", closed_url().await);
    let text = format!(
        "[[route]]\nname = \"pool\"\nprovider = \"openai\"\nurls = [\"{dead}\", \"{live}\"]\nmodel = \"{}\"\neject_after = 1\neject_secs = 60\n",
        LlamaServer::MODEL
    );
    let gateway = start("upstream_header = true", &[text]).await;
    let body = json!({"model": "pool", "temperature": 0, "max_tokens": 3, "messages": [
        {"role": "user", "content": "Say OK."}]});
    for round in 0..10 {
        let answer = if round % 2 == 0 {
            post(&gateway, &body).await
        } else {
            let streamed = post_stream(&gateway, &streaming(body.clone())).await;
            assert!(streamed.done, "round {round}: {}", streamed.text);
            Answer {
                status: streamed.status,
                headers: streamed.headers,
                text: streamed.text,
            }
        };
        assert_eq!(answer.status, 200, "round {round}: {}", answer.text);
        assert_eq!(answer.headers["x-switchboard-upstream"], live.as_str());
    }
    let health: Value = get(&gateway, "/healthz").await.json();
    let dead_state = health["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|backend| backend["url"] == dead)
        .unwrap();
    // Two random choices between two idle replicas: the dead one is tried with one chance
    // in two per request, and once tried it is out for the rest of the test.
    let tried = dead_state["requests"].as_u64().unwrap();
    assert!(tried <= 1, "{health}");
    if tried == 1 {
        assert_eq!(dead_state["state"], "ejected", "{health}");
    }
    gateway.stop().await.unwrap();
}

/// A Python SDK MCP server whose `get_weather` answers what no model would make up.
const WEATHER_SERVER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("weather")

@app.tool()
def get_weather(city: str) -> str:
    """Current weather in a city"""
    return f"21 C and light rain over {city} (station 4471)"

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

#[tokio::test]
async fn the_models_call_runs_in_the_gateway_and_its_answer_follows_on_every_api() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let Some(python) = switchboard_testkit::mcp::python(Some("mcp.server.mcpserver")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = switchboard_testkit::mcp::script(dir.path(), "weather.py", WEATHER_SERVER);
    let port = switchboard_testkit::mcp::free_port();
    let _weather = switchboard_testkit::mcp::ServerProcess::start(
        &python,
        &[&path, &port.to_string()],
        &[],
        port,
    )
    .await;
    let tap = Tap::start(server.base_url()).await;
    let gateway = start(
        &format!("[[mcp_server]]\nname = \"weather\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"),
        &[route(
            "native",
            "openai",
            &format!("{}/v1", tap.base),
            "mcp_servers = [\"weather\"]\nmax_tool_rounds = 2",
        )],
    )
    .await;
    let mark = "light rain over Tokyo (station 4471)";
    crate::gateway_tools::ready(&gateway).await;

    let chat = post(
        &gateway,
        &json!({"model": "native", "messages": few_shot(4, "Tokyo"), "temperature": 0, "max_tokens": 60}),
    )
    .await;
    assert_eq!(chat.status, 200, "{}", chat.text);
    let chat = chat.json();
    let ran = &chat["choices"][0]["gateway_tool_calls"][0];
    assert_eq!(ran["server"], "weather", "{chat}");
    assert!(ran["content"].as_str().unwrap().contains(mark), "{chat}");
    assert!(
        chat["choices"][0]["message"]
            .get("tool_calls")
            .is_none_or(Value::is_null),
        "{chat}"
    );
    // The model was asked again with the result as a tool message.
    let sent = tap.requests().last().unwrap()["messages"].clone();
    assert!(sent.to_string().contains(mark), "{sent}");

    let response = post_to(
        &gateway,
        "/v1/responses",
        &json!({"model": "native", "input": few_shot_items(4, "Tokyo"), "temperature": 0,
            "max_output_tokens": 60, "store": false}),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.text);
    let response = response.json();
    let call = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_call")
        .unwrap_or_else(|| panic!("{response}"));
    assert!(
        call["output"].as_str().unwrap().contains(mark),
        "{response}"
    );
    assert!(["completed", "incomplete"].contains(&response["status"].as_str().unwrap()));

    let message = post_to(
        &gateway,
        "/v1/messages",
        &json!({"model": "native", "messages": few_shot_messages(4, "Tokyo"), "temperature": 0, "max_tokens": 60}),
    )
    .await;
    assert_eq!(message.status, 200, "{}", message.text);
    let message = message.json();
    let blocks = message["content"].as_array().unwrap();
    let result = blocks
        .iter()
        .find(|block| block["type"] == "mcp_tool_result")
        .unwrap_or_else(|| panic!("{message}"));
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(mark),
        "{message}"
    );
    assert_ne!(
        blocks.last().unwrap()["type"],
        "mcp_tool_use",
        "no dangling call: {message}"
    );
    gateway.stop().await.unwrap();
}
