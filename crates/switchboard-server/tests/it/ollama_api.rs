//! Ollama's API served by the gateway, to the clients that speak it: the official `ollama`
//! Python client (tests/ollama/client.py, which Home Assistant's integration uses), Home
//! Assistant's and Open WebUI's calls replayed as they make them, and bad input. A scripted
//! OpenAI-format backend answers on loopback; the gateway sits in front of it with a key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::RunningGateway;
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};

const KEY: &str = "sk-ollama-test-key";

/// A scripted backend answering `replies` in order, behind a gateway that needs [`KEY`],
/// with a native route `qwen`, a prompted hermes route `hermes`, and the repository's
/// characters on `qwen`.
async fn setup(replies: Vec<Reply>) -> (ScriptedServer, RunningGateway) {
    let backend = ScriptedServer::start(replies).await;
    let key = format!(
        "[[key]]\nname = \"home\"\nsha256 = \"{}\"\n",
        hex::encode(Sha256::digest(KEY.as_bytes()))
    );
    let gateway = start(
        &format!("character_route = \"qwen\"\n{key}"),
        &[
            route("qwen", "openai", &format!("{}/v1", backend.base), ""),
            route(
                "hermes",
                "openai",
                &format!("{}/v1", backend.base),
                "tool_calling = \"prompted\"\nformat = \"hermes\"",
            ),
        ],
    )
    .await;
    (backend, gateway)
}

/// Runs `client.py BASE KEY CASE [MODEL]` and returns the JSON it printed.
async fn ollama_client(gateway: &RunningGateway, case: &str, model: Option<&str>) -> Value {
    let base = gateway.base_url();
    let mut args = vec![base.as_str(), KEY, case];
    args.extend(model);
    python_client("ollama/client.py", &args, "ollama", None).await
}

fn text(words: &[&str]) -> OpenAiScript {
    words
        .iter()
        .fold(OpenAiScript::new(), |script, word| script.text(word))
        .finish("stop", 12, 5)
}

fn weather_call() -> OpenAiScript {
    OpenAiScript::new()
        .tool_call(
            "call_abcdefghijklmnopqrstuvwx12",
            "get_weather",
            &["{\"city\":", " \"Par", "is\"}"],
        )
        .finish("tool_calls", 20, 9)
}

/// The same answer whole and one byte per HTTP chunk.
fn twice(script: &OpenAiScript) -> [Reply; 2] {
    [script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

/// What a whole answer and its stream must agree on.
fn agreed(answer: &Value) -> Value {
    json!({"model": answer["model"], "content": answer["content"], "tool_calls": answer["tool_calls"],
        "done": answer["done"], "done_reason": answer["done_reason"],
        "prompt_eval_count": answer["prompt_eval_count"], "eval_count": answer["eval_count"]})
}

#[tokio::test]
async fn the_python_client_lists_shows_and_pulls_what_the_key_may_use() {
    let (backend, gateway) = setup(Vec::new()).await;
    let result = ollama_client(&gateway, "catalogue", None).await;
    let listed = result["list"].as_array().unwrap();
    for name in ["qwen:latest", "hermes:latest", "character/narrator:latest"] {
        assert!(listed.contains(&json!(name)), "{name}: {listed:?}");
    }
    assert_eq!(result["show"]["details"]["family"], BACKEND_MODEL);
    assert_eq!(result["show"]["model_info"]["general.basename"], "qwen");
    assert_eq!(
        result["show"]["capabilities"],
        json!(["completion", "tools"])
    );
    assert_eq!(
        result["show_character"]["capabilities"],
        json!(["completion", "tools"])
    );
    let running = result["ps"].as_array().unwrap();
    assert!(
        running.iter().any(|model| model["model"] == "qwen:latest"
            && model["expires_at"].as_str().unwrap().ends_with("+00:00")),
        "{running:?}"
    );
    assert!(
        result["expires_at_raw"]
            .as_str()
            .unwrap()
            .ends_with("+00:00")
    );
    assert_eq!(
        result["pull_streamed"],
        json!([
            "pulling manifest",
            "verifying sha256 digest",
            "writing manifest",
            "success"
        ])
    );
    assert_eq!(result["pull_whole"], "success");
    for case in ["pull_unknown", "pull_unknown_streamed", "show_unknown"] {
        assert_eq!(result[case]["status"], 404, "{case}: {result}");
        assert!(
            result[case]["error"]
                .as_str()
                .unwrap()
                .contains("no-such-model"),
            "{case}: {result}"
        );
    }
    assert_eq!(result["wrong_key"]["status"], 401, "{result}");
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn the_python_client_chats_calls_tools_and_generates_streamed_as_whole() {
    let mut replies = Vec::new();
    replies.extend(twice(&text(&["It is ", "sunny."])));
    replies.extend(twice(&weather_call()));
    replies.push(text(&["18 C ", "and sunny."]).reply());
    replies.push(text(&["{\"city\": ", "\"Paris\"}"]).reply());
    replies.push(text(&["{\"city\": \"Paris\"}"]).reply());
    replies.extend(twice(&text(&["Hi", "!"])));
    let (backend, gateway) = setup(replies).await;
    let result = ollama_client(&gateway, "chat", Some("qwen:latest")).await;

    let whole = &result["text"];
    assert_eq!(whole["model"], "qwen:latest");
    assert_eq!(whole["content"], "It is sunny.");
    assert_eq!(whole["done"], true);
    assert_eq!(whole["done_reason"], "stop");
    assert_eq!(whole["prompt_eval_count"], 12);
    assert_eq!(whole["eval_count"], 5);
    assert!(whole["total_duration"].as_u64().unwrap() > 0);
    assert_eq!(agreed(whole), agreed(&result["text_streamed"]));
    assert!(result["text_streamed"]["chunks"].as_u64().unwrap() >= 3);

    let call = &result["call"];
    assert_eq!(
        call["tool_calls"],
        json!([{"name": "get_weather", "arguments": {"city": "Paris"}}])
    );
    assert_eq!(call["done_reason"], "stop");
    assert_eq!(agreed(call), agreed(&result["call_streamed"]));
    // What the backend was asked: the options mapped, `num_ctx` and `keep_alive` ignored.
    let asked = sent(&backend, 2);
    assert_eq!(asked["temperature"], 0.2);
    assert_eq!(asked["max_tokens"], 64);
    assert!(asked.get("num_ctx").is_none() && asked.get("keep_alive").is_none());
    assert_eq!(asked["tools"][0]["function"]["name"], "get_weather");

    // The round trip: the client dropped the call's id; the result names its tool.
    assert_eq!(result["round_trip"]["content"], "18 C and sunny.");
    let asked = sent(&backend, 4);
    let messages = asked["messages"].as_array().unwrap();
    let call_id = &messages[2]["tool_calls"][0]["id"];
    assert!(is_call_id(call_id.as_str().unwrap()), "{asked}");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(&messages[3]["tool_call_id"], call_id);

    assert_eq!(result["json"]["content"], "{\"city\": \"Paris\"}");
    assert_eq!(
        sent(&backend, 5)["response_format"],
        json!({"type": "json_object"})
    );
    let schema = &sent(&backend, 6)["response_format"];
    assert_eq!(schema["type"], "json_schema");
    assert_eq!(schema["json_schema"]["schema"]["required"], json!(["city"]));

    let generated = &result["generate"];
    assert_eq!(generated["response"], "Hi!");
    assert_eq!(generated["done_reason"], "stop");
    assert_eq!(
        sent(&backend, 7)["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}])
    );
    assert_eq!(result["generate_streamed"]["response"], "Hi!");
    assert_eq!(result["generate_streamed"]["done"], true);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_prompted_route_gives_the_python_client_tool_calls() {
    let script = OpenAiScript::new()
        .text("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
        .finish("stop", 30, 12);
    let (_backend, gateway) = setup(twice(&script).into()).await;
    let result = ollama_client(&gateway, "calls", Some("hermes")).await;
    let expected = json!([{"name": "get_weather", "arguments": {"city": "Paris"}}]);
    assert_eq!(result["call"]["tool_calls"], expected, "{result}");
    assert_eq!(result["call"]["content"], "");
    assert_eq!(agreed(&result["call"]), agreed(&result["call_streamed"]));
    gateway.stop().await.unwrap();
}

/// The model first logs a story event with the narrator's own tool, then narrates.
fn narrator_turn() -> [Reply; 2] {
    let call = OpenAiScript::new()
        .tool_call(
            "call_narratornarratornarrator1",
            "log_story_event",
            &["{\"event\": \"The hero found the brass key\", \"importance\": \"high\"}"],
        )
        .finish("tool_calls", 100, 20);
    [call.reply(), text(&["The door ", "creaks open."]).reply()]
}

#[tokio::test]
async fn a_character_answers_by_its_bare_and_tagged_names_with_its_tool_run_in_the_gateway() {
    let mut replies = narrator_turn().to_vec();
    replies.extend(narrator_turn());
    let (backend, gateway) = setup(replies).await;
    let result = ollama_client(&gateway, "character", Some("narrator")).await;
    for case in ["whole", "streamed"] {
        let answer = &result[case];
        assert_eq!(
            answer["content"], "The door creaks open.",
            "{case}: {result}"
        );
        assert_eq!(answer["tool_calls"], json!([]), "{case}");
        assert_eq!(answer["done_reason"], "stop", "{case}");
    }
    assert_eq!(result["whole"]["model"], "narrator");
    assert_eq!(result["streamed"]["model"], "character/narrator:latest");
    // The follow-up carries the tool's result, run in the gateway.
    let follow_up = sent(&backend, 1);
    let messages = follow_up["messages"].as_array().unwrap();
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("narrator")
    );
    assert_eq!(messages.last().unwrap()["role"], "tool");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn home_assistant_gets_its_call_whole_and_completes_the_turn_with_the_result() {
    let call = OpenAiScript::new()
        .tool_call(
            "call_hasshasshasshasshasshass12",
            "HassTurnOn",
            &["{\"name\": \"kitchen ", "light\", \"domain\": [\"light\"]}"],
        )
        .finish("tool_calls", 200, 15);
    let done = text(&["The kitchen light ", "is on."]);
    let replies = vec![
        Reply::sse(call.body(), Chunking::Bytes),
        Reply::sse(done.body(), Chunking::Bytes),
    ];
    let (backend, gateway) = setup(replies).await;
    let result = ollama_client(&gateway, "home-assistant", Some("qwen")).await;
    assert_eq!(result["pulled"], "success", "{result}");
    assert_eq!(
        result["first_calls"],
        json!([{"name": "HassTurnOn", "arguments": {"name": "kitchen light", "domain": ["light"]}}])
    );
    assert_eq!(result["answer"], "The kitchen light is on.");
    assert_eq!(result["second_calls"], json!([]));
    // The result, sent with neither id nor tool name, answers the call by its position.
    let asked = sent(&backend, 1);
    let messages = asked["messages"].as_array().unwrap();
    let id = &messages[2]["tool_calls"][0]["id"];
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["name"],
        "HassTurnOn"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(&messages[3]["tool_call_id"], id);
    assert_eq!(asked["tools"].as_array().unwrap().len(), 2);
    gateway.stop().await.unwrap();
}

fn authorized(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("authorization", format!("Bearer {KEY}"))
}

/// NDJSON lines as JSON, each line whole.
fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line:?}")))
        .collect()
}

#[tokio::test]
async fn open_webui_calls_replayed_work_with_latest_names_and_its_history() {
    let (backend, gateway) = setup(vec![Reply::sse(
        text(&["Paris ", "is sunny."]).body(),
        Chunking::Bytes,
    )])
    .await;
    let base = gateway.base_url();
    let client = client();
    // Open WebUI reads the version as dotted integers.
    let version: Value = authorized(client.get(format!("{base}/api/version")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let parts: Vec<u32> = version["version"]
        .as_str()
        .unwrap()
        .split('.')
        .map(|part| part.parse().unwrap())
        .collect();
    assert_eq!(parts.len(), 3);
    // It lists the models and offers only those, by their `model` names.
    let tags: Value = authorized(client.get(format!("{base}/api/tags")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let qwen = tags["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|model| model["model"] == "qwen:latest")
        .unwrap();
    assert_eq!(qwen["name"], "qwen:latest");
    assert_eq!(qwen["digest"].as_str().unwrap().len(), 64);
    // A streamed chat with a history of its own shape: calls with index, id and object
    // arguments, results with tool_call_id.
    let body = json!({"model": "qwen:latest", "stream": true, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"index": 0, "id": "call_owui",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "call_owui", "content": "sunny"}],
        "options": {"temperature": 0.5}});
    let response = authorized(client.post(format!("{base}/api/chat")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let chunks = lines(&response.text().await.unwrap());
    let content: String = chunks
        .iter()
        .filter_map(|chunk| chunk["message"]["content"].as_str())
        .collect();
    assert_eq!(content, "Paris is sunny.");
    let last = chunks.last().unwrap();
    assert_eq!(last["done"], true);
    for field in [
        "total_duration",
        "load_duration",
        "prompt_eval_count",
        "prompt_eval_duration",
        "eval_count",
        "eval_duration",
    ] {
        assert!(last[field].is_u64(), "{field}: {last}");
    }
    let asked = sent(&backend, 0);
    assert_eq!(asked["messages"][1]["tool_calls"][0]["id"], "call_owui");
    assert_eq!(asked["messages"][2]["tool_call_id"], "call_owui");
    // Its unload: one JSON object, the model not asked.
    let unload = authorized(client.post(format!("{base}/api/generate")))
        .json(&json!({"model": "qwen:latest", "prompt": "", "keep_alive": 0}))
        .send()
        .await
        .unwrap();
    assert_eq!(unload.headers()["content-type"], "application/json");
    let unload: Value = unload.json().await.unwrap();
    assert_eq!(unload["done_reason"], "unload");
    assert_eq!(unload["response"], "");
    // Ollama's load requests likewise: a chat without messages, streamed or not.
    let load = post_with(
        &gateway,
        "/api/chat",
        &json!({"model": "qwen:latest", "messages": []}),
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await
    .json();
    assert_eq!(load["done_reason"], "load");
    assert_eq!(load["message"]["content"], "");
    let unknown = post_with(
        &gateway,
        "/api/generate",
        &json!({"model": "no-such-model", "keep_alive": 0}),
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert_eq!(backend.requests().len(), 1);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn the_root_says_ollama_is_running_to_clients_asking_for_data_and_serves_the_page_to_browsers()
 {
    let (_backend, gateway) = setup(Vec::new()).await;
    let base = gateway.base_url();
    let client = client();
    for accept in ["application/json", "text/plain"] {
        let answer = client
            .get(format!("{base}/"))
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.text().await.unwrap(), "Ollama is running");
    }
    let head = client
        .head(format!("{base}/"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    for accept in ["text/html,application/xhtml+xml,*/*;q=0.8", "*/*"] {
        let page = client
            .get(format!("{base}/"))
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        let content_type = page.headers()["content-type"].to_str().unwrap();
        assert!(content_type.starts_with("text/html"), "{accept}");
    }
    gateway.stop().await.unwrap();
}

/// Asserts Ollama's error shape with this status, and returns its message.
fn ollama_error(answer: &Answer, status: u16) -> String {
    assert_eq!(answer.status, status, "{}", answer.text);
    let body = answer.json();
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["error"], "{body}");
    body["error"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn bad_input_gets_ollama_shaped_errors_naming_the_problem_and_nothing_reaches_the_backend() {
    let (backend, gateway) = setup(Vec::new()).await;
    let base = gateway.base_url();
    let send = |path: &'static str, body: Vec<u8>, key: &'static str| {
        let url = format!("{base}{path}");
        async move {
            read_answer(
                client()
                    .post(url)
                    .header("authorization", format!("Bearer {key}"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let chat = |body: Value| send("/api/chat", body.to_string().into_bytes(), KEY);
    let user = json!({"role": "user", "content": "hi"});

    let error = ollama_error(&send("/api/chat", b"{\"model\": ".to_vec(), KEY).await, 400);
    assert!(error.contains("JSON"), "{error}");
    let error = ollama_error(
        &chat(json!({"model": "qwen", "messages": [{"content": "hi"}]})).await,
        400,
    );
    assert!(error.contains("messages[0].role"), "{error}");
    let error = ollama_error(
        &chat(
            json!({"model": "qwen", "messages": [user, {"role": "assistant",
            "tool_calls": [{"function": {"name": 5}}]}]}),
        )
        .await,
        400,
    );
    assert!(
        error.contains("messages[1].tool_calls[0].function.name"),
        "{error}"
    );
    let error = ollama_error(
        &chat(json!({"model": "qwen", "messages": [user], "options": {"temperature": "hot"}}))
            .await,
        400,
    );
    assert!(error.contains("options.temperature"), "{error}");
    let error = ollama_error(
        &chat(json!({"model": "qwen", "messages": [user], "format": 3})).await,
        400,
    );
    assert!(error.contains("format"), "{error}");
    let error = ollama_error(
        &chat(json!({"model": "qwen", "messages": [user, {"role": "tool", "content": "x"}]})).await,
        400,
    );
    assert!(error.contains("messages[1]"), "{error}");
    let error = ollama_error(
        &send(
            "/api/generate",
            json!({"model": "qwen", "prompt": "def f(", "suffix": "return 1"})
                .to_string()
                .into_bytes(),
            KEY,
        )
        .await,
        400,
    );
    assert!(error.contains("suffix"), "{error}");
    let error = ollama_error(
        &chat(json!({"model": "no-such-model", "messages": [user]})).await,
        404,
    );
    assert!(error.contains("no-such-model"), "{error}");
    let wrong_key = send(
        "/api/chat",
        json!({"model": "qwen", "messages": [user]})
            .to_string()
            .into_bytes(),
        "sk-wrong",
    )
    .await;
    assert!(ollama_error(&wrong_key, 401).contains("not valid"));
    for path in ["/api/create", "/api/delete"] {
        let answer = send(path, b"{}".to_vec(), KEY).await;
        let error = ollama_error(&answer, 501);
        assert!(error.contains("not served"), "{path}: {error}");
    }
    // A route whose backend serves no embeddings says so; a body naming no model is a 400.
    for path in ["/api/embed", "/api/embeddings"] {
        let body = json!({"model": "qwen", "input": "hi"})
            .to_string()
            .into_bytes();
        let error = ollama_error(&send(path, body, KEY).await, 501);
        assert!(error.contains("qwen does not embed"), "{path}: {error}");
        let error = ollama_error(&send(path, b"{}".to_vec(), KEY).await, 400);
        assert!(error.contains("model"), "{path}: {error}");
    }
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_failure_after_the_stream_began_ends_it_with_an_error_line() {
    let script = text(&["It is ", "sunny and ", "warm."]);
    let (_backend, gateway) = setup(vec![script.cut_after(2)]).await;
    let answer = post_with(
        &gateway,
        "/api/chat",
        &json!({"model": "qwen", "messages": [{"role": "user", "content": "hi"}]}),
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let chunks = lines(&answer.text);
    assert_eq!(chunks[0]["message"]["content"], "It is ");
    let last = chunks.last().unwrap();
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty()),
        "{last}"
    );
    assert!(chunks.iter().all(|chunk| chunk["done"] != true));
    gateway.stop().await.unwrap();
}

/// The npm `ollama` client's version the test installs.
const OLLAMA_JS: &str = "0.6.4";

#[tokio::test]
async fn the_javascript_client_streams_a_chat_with_a_tool_call() {
    let Some(package) = switchboard_testkit::peers::peer("the ollama JavaScript client", || {
        switchboard_testkit::npm_package("ollama", OLLAMA_JS)
    }) else {
        return;
    };
    let (_backend, gateway) = setup(vec![Reply::sse(weather_call().body(), Chunking::Bytes)]).await;
    let base = gateway.base_url();
    let output = tokio::process::Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/ollama/client.mjs"
        ))
        .args([base.as_str(), KEY, "qwen:latest"])
        .env("OLLAMA_JS", package)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client.mjs failed: {stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result,
        json!({"content": "", "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "done": true, "done_reason": "stop"})
    );
    gateway.stop().await.unwrap();
}

/// A history in Ollama's shape in which the assistant answered each weather question with
/// a call (SmolLM2 calls a tool only after such turns; see real_backend.rs `few_shot`),
/// then the question for `ask`.
fn ollama_few_shot(ask: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for city in ["Paris", "Berlin", "Rome", "Oslo"] {
        messages.push(json!({"role": "user", "content": format!("Weather in {city}?")}));
        messages.push(json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": city}}}]}));
        messages.push(json!({"role": "tool", "tool_name": "get_weather", "content": "18 C"}));
    }
    messages.push(json!({"role": "user", "content": format!("Weather in {ask}?")}));
    messages
}

#[tokio::test]
async fn on_the_real_llama_server_a_chat_with_a_tool_yields_tool_calls_streamed_as_whole() {
    let Some(server) = switchboard_testkit::LlamaServer::shared() else {
        return;
    };
    let gateway = start(
        "",
        &[route(
            "qwen",
            "openai",
            &format!("{}/v1", server.base_url()),
            "",
        )],
    )
    .await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Current weather in a city", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let body = json!({"model": "qwen:latest", "messages": ollama_few_shot("Madrid"), "tools": tools,
        "options": {"temperature": 0, "num_predict": 60}, "stream": false});
    let whole = post_to(&gateway, "/api/chat", &body).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    let calls = whole["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{whole}");
    assert_eq!(calls[0]["function"]["name"], "get_weather", "{whole}");
    assert!(
        calls[0]["function"]["arguments"]["city"].is_string(),
        "{whole}"
    );
    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let streamed = post_to(&gateway, "/api/chat", &streaming).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let chunks = lines(&streamed.text);
    let streamed_calls: Vec<Value> = chunks
        .iter()
        .filter_map(|chunk| chunk["message"]["tool_calls"].as_array())
        .flatten()
        .map(|call| json!({"name": call["function"]["name"], "arguments": call["function"]["arguments"]}))
        .collect();
    let whole_calls: Vec<Value> = calls
        .iter()
        .map(|call| json!({"name": call["function"]["name"], "arguments": call["function"]["arguments"]}))
        .collect();
    assert_eq!(streamed_calls, whole_calls);
    assert_eq!(chunks.last().unwrap()["done"], true);
    gateway.stop().await.unwrap();
}

/// `/api/embed` on a route whose backend is an Ollama server is passed on as the client sent
/// it, the model named as the backend knows it, and answered as the backend answered, the
/// model named as the client asked.
#[tokio::test]
async fn embeddings_pass_through_to_a_route_whose_backend_is_ollama() {
    let backend = ScriptedServer::start(vec![Reply::json(
        200,
        &json!({"model": BACKEND_MODEL, "embeddings": [[0.25, -0.5, 1.0]],
            "total_duration": 1200, "prompt_eval_count": 2}),
    )])
    .await;
    let gateway = start("", &[route("local", "ollama", &backend.base, "")]).await;
    let answer = post_to(
        &gateway,
        "/api/embed",
        &json!({"model": "local:latest", "input": "why is the sky blue?", "truncate": true}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = answer.json();
    assert_eq!(body["embeddings"], json!([[0.25, -0.5, 1.0]]));
    assert_eq!(body["model"], "local:latest");
    let sent = &backend.requests()[0];
    assert!(sent.head.starts_with("post /api/embed "), "{}", sent.head);
    assert_eq!(
        sent.body,
        json!({"model": BACKEND_MODEL, "input": "why is the sky blue?", "truncate": true})
    );
    gateway.stop().await.unwrap();
}

/// An answer is read up to a bound (16 MiB): a backend's larger embeddings are an error that
/// says why, in Ollama's shape, and the gateway never holds more than the bound.
#[tokio::test]
async fn embeddings_past_the_bound_on_an_answer_are_an_error_that_says_why() {
    // About 18 MiB: three million numbers of six bytes each.
    let huge = json!({"model": BACKEND_MODEL, "embeddings": [vec![0.125; 3_000_000]]});
    let backend = ScriptedServer::start(vec![Reply::json(200, &huge)]).await;
    let gateway = start("", &[route("local", "ollama", &backend.base, "")]).await;
    let answer = post_to(
        &gateway,
        "/api/embed",
        &json!({"model": "local", "input": "why is the sky blue?"}),
    )
    .await;
    assert_eq!(answer.status, 502, "{}", answer.text);
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.contains("larger than the gateway reads"), "{error}");
    gateway.stop().await.unwrap();
}
