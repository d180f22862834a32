//! Google's Gemini API as a fourth front-end: the official `google-genai` Python SDK
//! (tests/gemini_sdk/client.py) against scripted OpenAI-format backends on loopback, the
//! raw wire forms (SSE, Google's JSON-array stream, the whole body) agreeing, and every
//! kind of bad input answered in Google's error shape without reaching the backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{BACKEND_MODEL, CHARACTERS, python_client, read_answer, route, sent};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{Captured, Chunking, OpenAiScript, Reply, ScriptedServer};

/// The key the SDK is given.
const KEY: &str = "sk-gemini-test";

/// A gateway with one key, a native route (`native`) and a prompted hermes route
/// (`hermes`) in front of `backend`, and the repository's characters.
async fn gateway(backend: &ScriptedServer) -> RunningGateway {
    let digest: String = Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\nmax_body_bytes = 65536\n[[key]]\nname = \"gemini\"\nsha256 = \"{digest}\"\n{}{}",
        route(
            "native",
            "openai",
            &format!("{}/v1", backend.base),
            "eject_after = 100"
        ),
        route(
            "hermes",
            "openai",
            &format!("{}/v1", backend.base),
            "tool_calling = \"prompted\"\nformat = \"hermes\"",
        )
    );
    let config = Config::from_toml(&text).unwrap();
    RunningGateway::start(&config, &|_| None).await.unwrap()
}

async fn sdk(gateway: &RunningGateway, case: &'static str) -> Value {
    python_client(
        "gemini_sdk/client.py",
        &[&gateway.base_url(), case],
        "google-genai",
        None,
    )
    .await
}

/// The same answer twice: per SSE event for the whole answer, one byte per HTTP chunk for
/// the stream, so agreement cannot come from the two seeing the same chunking.
fn replies(script: &OpenAiScript) -> Vec<Reply> {
    vec![script.reply(), Reply::sse(script.body(), Chunking::Bytes)]
}

fn weather_call() -> OpenAiScript {
    OpenAiScript::new()
        .text("Let me ")
        .text("check.")
        .tool_call("call_1", "get_weather", &["{\"city\":", " \"Par", "is\"}"])
        .finish("tool_calls", 20, 9)
}

/// The whole answer and the stream read as one agree (call ids aside: each request mints
/// its own), and the whole one is returned.
fn agree(result: &Value) -> Value {
    let mut whole = result["whole"].clone();
    let mut streamed = result["streamed"].clone();
    for answer in [&mut whole, &mut streamed] {
        for call in answer["calls"].as_array_mut().unwrap() {
            assert!(call["id"].as_str().unwrap().starts_with("call_"), "{call}");
            call["id"] = json!("<id>");
        }
    }
    for field in ["text", "calls", "finish", "usage"] {
        assert_eq!(streamed[field], whole[field], "{field}: {result}");
    }
    whole
}

#[tokio::test]
async fn sdk_text_whole_and_streamed_agree() {
    let script = OpenAiScript::new()
        .text("Hello")
        .text(", world.")
        .finish("stop", 5, 3);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "text").await;
    let whole = agree(&result);
    assert_eq!(whole["text"], "Hello, world.");
    assert_eq!(whole["finish"], "STOP");
    assert_eq!(
        whole["usage"],
        json!({"prompt_token_count": 5, "candidates_token_count": 3, "total_token_count": 8})
    );
    assert_eq!(whole["model_version"], "native");
    assert!(
        result["streamed"]["chunks"].as_u64().unwrap() >= 2,
        "{result}"
    );
    let asked = sent(&backend, 0);
    assert_eq!(asked["model"], BACKEND_MODEL);
    assert_eq!(
        asked["messages"],
        json!([{"role": "user", "content": "Say hello."}])
    );
    gateway.stop().await.unwrap();
}

/// The SDK reads the backend's reasoning tokens as its own `thoughts_token_count`, apart
/// from the answer's, whole and streamed alike.
#[tokio::test]
async fn sdk_reads_the_reasoning_tokens_as_thoughts() {
    let script = OpenAiScript::new()
        .text("Hello.")
        .finish("stop", 5, 3)
        .reasoning_tokens(2);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "text").await;
    let whole = agree(&result);
    assert_eq!(
        whole["usage"],
        json!({"prompt_token_count": 5, "candidates_token_count": 1,
            "thoughts_token_count": 2, "total_token_count": 8})
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_function_call_whole_and_streamed_agree() {
    let backend = ScriptedServer::start(replies(&weather_call())).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "tools").await;
    let whole = agree(&result);
    assert_eq!(whole["text"], "Let me check.");
    assert_eq!(
        whole["calls"],
        json!([{"id": "<id>", "name": "get_weather", "args": {"city": "Paris"}}])
    );
    assert_eq!(whole["finish"], "STOP");
    let asked = sent(&backend, 0);
    let tools = asked["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    // Google's OpenAPI subset arrived as JSON Schema; parametersJsonSchema as it was.
    assert_eq!(
        tools[0]["function"]["parameters"],
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    );
    assert_eq!(tools[1]["function"]["name"], "get_time");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_function_response_answers_the_call() {
    let answer = OpenAiScript::new()
        .text("It is 22°C and sunny in Paris.")
        .finish("stop", 60, 11);
    let backend = ScriptedServer::start(vec![weather_call().reply(), answer.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "round-trip").await;
    let call_id = result["first"]["calls"][0]["id"].as_str().unwrap();
    assert_eq!(result["second"]["text"], "It is 22°C and sunny in Paris.");
    let asked = sent(&backend, 1);
    let messages = asked["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(messages[0]["content"], "You are terse.");
    assert_eq!(messages[2]["content"], "Let me check.");
    assert_eq!(messages[2]["tool_calls"][0]["id"], call_id);
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(messages[3]["tool_call_id"], call_id);
    assert_eq!(messages[3]["content"], "22°C and sunny");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_automatic_function_calling_runs_the_python_function() {
    let call = OpenAiScript::new()
        .tool_call("call_1", "get_weather", &["{\"city\": \"Paris\"}"])
        .finish("tool_calls", 20, 9);
    let answer = OpenAiScript::new()
        .text("Sunny, 22°C.")
        .finish("stop", 40, 5);
    let backend = ScriptedServer::start(vec![call.reply(), answer.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "automatic").await;
    assert_eq!(result["answer"]["text"], "Sunny, 22°C.", "{result}");
    let asked = sent(&backend, 1);
    let result_message = asked["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(result_message["role"], "tool", "{asked}");
    assert!(
        result_message["content"]
            .as_str()
            .unwrap()
            .contains("22°C and sunny in Paris"),
        "{result_message}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_any_with_allowed_names_forces_that_function() {
    let call = OpenAiScript::new()
        .tool_call("call_1", "get_time", &["{\"city\": \"Paris\"}"])
        .finish("tool_calls", 20, 9);
    let backend = ScriptedServer::start(vec![call.reply()]).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "any").await;
    assert_eq!(result["calls"][0]["name"], "get_time", "{result}");
    let asked = sent(&backend, 0);
    let names: Vec<&str> = asked["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_time"]);
    assert_eq!(
        asked["tool_choice"],
        json!({"type": "function", "function": {"name": "get_time"}})
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_count_tokens_and_the_model_list() {
    let backend = ScriptedServer::responding(|request: &Captured| {
        if request.head.starts_with("post /tokenize ") {
            Reply::json(
                200,
                &json!({"count": 57, "max_model_len": 8192, "tokens": []}),
            )
        } else {
            Reply::json(404, &json!({"error": "Not Found"}))
        }
    })
    .await;
    let gateway = gateway(&backend).await;
    let counted = sdk(&gateway, "count").await;
    assert_eq!(counted["total"], 57);
    let models = sdk(&gateway, "models").await;
    assert_eq!(
        models["listed"].as_array().unwrap()[..2],
        [json!("models/native"), json!("models/hermes")]
    );
    assert!(
        models["listed"]
            .as_array()
            .unwrap()
            .contains(&json!("models/character/narrator")),
        "{models}"
    );
    assert_eq!(models["got"], "models/native");
    assert_eq!(models["character"], "models/character/narrator");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_prompted_route_yields_function_call_parts() {
    let markup = "I'll look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n";
    let script = markup
        .as_bytes()
        .chunks(9)
        .fold(OpenAiScript::new(), |script, piece| {
            script.text(std::str::from_utf8(piece).unwrap())
        })
        .finish("stop", 40, 17);
    let backend = ScriptedServer::start(replies(&script)).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "prompted").await;
    let whole = agree(&result);
    assert!(
        whole["text"]
            .as_str()
            .unwrap()
            .starts_with("I'll look that up."),
        "{whole}"
    );
    assert_eq!(whole["calls"][0]["name"], "get_weather");
    assert_eq!(whole["calls"][0]["args"], json!({"city": "Paris"}));
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_narrator_runs_its_tool_in_the_gateway() {
    let call = OpenAiScript::new()
        .tool_call(
            "call_narratornarratornarrator1",
            "log_story_event",
            &["{\"event\": \"The hero found the brass key\"}"],
        )
        .finish("tool_calls", 100, 20);
    let words = OpenAiScript::new()
        .text("The door ")
        .text("creaks open.")
        .finish("stop", 150, 12);
    let backend = ScriptedServer::start(vec![
        call.reply(),
        words.reply(),
        call.reply(),
        Reply::sse(words.body(), Chunking::Bytes),
    ])
    .await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "narrator").await;
    let whole = agree(&result);
    assert_eq!(whole["text"], "The door creaks open.");
    assert_eq!(
        whole["calls"],
        json!([]),
        "the character's calls stay inside"
    );
    let asked = sent(&backend, 1);
    let last = asked["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(
        last["content"],
        "Logged story event: The hero found the brass key"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn sdk_refusals_are_googles_errors() {
    let backend = ScriptedServer::start(vec![]).await;
    let gateway = gateway(&backend).await;
    let result = sdk(&gateway, "errors").await;
    let found: Vec<(u64, &str)> = result
        .as_array()
        .unwrap()
        .iter()
        .map(|refusal| {
            (
                refusal["code"].as_u64().unwrap_or_default(),
                refusal["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (404, "NOT_FOUND"),
            (401, "UNAUTHENTICATED"),
            (400, "INVALID_ARGUMENT")
        ],
        "{result}"
    );
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

/// `POST` a raw body to a Gemini path with these headers.
async fn post(
    gateway: &RunningGateway,
    path: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
) -> common::Answer {
    let mut request = common::client()
        .post(format!("{}{path}", gateway.base_url()))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    read_answer(request.body(body).send().await.unwrap()).await
}

/// A Google-shaped error with this status and status name; its message.
fn google_error(answer: &common::Answer, code: u16, status: &str) -> String {
    assert_eq!(answer.status, code, "{}", answer.text);
    let body = answer.json();
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["status"], status, "{body}");
    assert!(error["details"].is_array(), "{body}");
    error["message"].as_str().unwrap().to_owned()
}

fn hello() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

#[tokio::test]
async fn every_key_form_works_and_bad_input_never_reaches_the_backend() {
    let script = OpenAiScript::new().text("ok").finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![script.reply(); 6]).await;
    let gateway = gateway(&backend).await;
    let path = "/v1beta/models/native:generateContent";
    let bearer = format!("Bearer {KEY}");
    for (query, headers) in [
        ("", vec![("x-goog-api-key", KEY)]),
        (&format!("?key={KEY}") as &str, vec![]),
        ("", vec![("authorization", bearer.as_str())]),
        // Gemini CLI sends an empty key header beside the Bearer it was given.
        (
            "",
            vec![("x-goog-api-key", ""), ("authorization", bearer.as_str())],
        ),
    ] {
        let answer = post(
            &gateway,
            &format!("{path}{query}"),
            hello().to_string(),
            &headers,
        )
        .await;
        assert_eq!(answer.status, 200, "{query} {headers:?}: {}", answer.text);
        assert_eq!(
            answer.json()["candidates"][0]["content"]["parts"][0]["text"],
            "ok"
        );
    }
    let v1 = post(
        &gateway,
        "/v1/models/models/native:generateContent",
        hello().to_string(),
        &[("x-goog-api-key", KEY)],
    )
    .await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    assert_eq!(backend.requests().len(), 5);

    let key = [("x-goog-api-key", KEY)];
    let missing = post(&gateway, path, hello().to_string(), &[]).await;
    google_error(&missing, 401, "UNAUTHENTICATED");
    let empty = post(
        &gateway,
        path,
        hello().to_string(),
        &[("x-goog-api-key", "")],
    )
    .await;
    google_error(&empty, 401, "UNAUTHENTICATED");
    let wrong = post(
        &gateway,
        path,
        hello().to_string(),
        &[("x-goog-api-key", "nope")],
    )
    .await;
    google_error(&wrong, 401, "UNAUTHENTICATED");
    let wrong_query = post(
        &gateway,
        &format!("{path}?key=nope"),
        hello().to_string(),
        &[],
    )
    .await;
    google_error(&wrong_query, 401, "UNAUTHENTICATED");
    let unknown = post(
        &gateway,
        "/v1beta/models/nope:generateContent",
        hello().to_string(),
        &key,
    )
    .await;
    assert!(google_error(&unknown, 404, "NOT_FOUND").contains("nope"));
    let malformed = post(&gateway, path, "{\"contents\": [", &key).await;
    assert!(google_error(&malformed, 400, "INVALID_ARGUMENT").contains("not valid JSON"));
    for (body, field) in [
        (
            json!({"contents": [{"role": "user", "parts": [{"text": 5}]}]}),
            "contents[0].parts[0].text",
        ),
        (
            json!({"contents": [{"role": "user", "parts": [{"text": "a"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}),
            "contents[1].parts[0].functionResponse.name",
        ),
        (
            json!({"contents": [{"role": "user", "parts": [{"audioClip": {"x": 1}}]}]}),
            "contents[0].parts[0].audioClip",
        ),
        (
            json!({"contents": [{"role": "user", "parts": [{"text": "a"}]}],
                "generationConfig": {"candidateCount": 2}}),
            "generationConfig.candidateCount",
        ),
    ] {
        let answer = post(&gateway, path, body.to_string(), &key).await;
        let message = google_error(&answer, 400, "INVALID_ARGUMENT");
        assert!(message.starts_with(field), "{message}");
        assert_eq!(
            answer.json()["error"]["details"][0]["fieldViolations"][0]["field"],
            field
        );
    }
    let method = post(
        &gateway,
        "/v1beta/models/native:embedContent",
        hello().to_string(),
        &key,
    )
    .await;
    google_error(&method, 404, "NOT_FOUND");
    assert_eq!(
        backend.requests().len(),
        5,
        "nothing more reached the backend"
    );
    gateway.stop().await.unwrap();
}

/// The parts of a `GenerateContentResponse` stream as one answer: its texts joined, its
/// calls (ids aside), and the last finish and usage.
fn fold(responses: &[Value]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    let (mut finish, mut usage) = (Value::Null, Value::Null);
    for response in responses {
        let candidate = &response["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(piece) = part["text"].as_str() {
                text.push_str(piece);
            }
            if part["functionCall"].is_object() {
                let mut call = part["functionCall"].clone();
                call["id"] = json!("<id>");
                calls.push(call);
            }
        }
        if !candidate["finishReason"].is_null() {
            finish = candidate["finishReason"].clone();
        }
        if !response["usageMetadata"].is_null() {
            usage = response["usageMetadata"].clone();
        }
    }
    json!({"text": text, "calls": calls, "finish": finish, "usage": usage})
}

fn sse_responses(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[tokio::test]
async fn sse_and_json_array_streams_equal_the_whole_answer_whatever_the_chunking() {
    let script = weather_call();
    let chunkings = [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole];
    let mut replies = vec![script.reply()];
    for chunking in chunkings.iter().chain(&chunkings) {
        replies.push(Reply::sse(script.body(), *chunking));
    }
    let backend = ScriptedServer::start(replies).await;
    let gateway = gateway(&backend).await;
    let key = [("x-goog-api-key", KEY)];
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "weather?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]});
    let whole = post(
        &gateway,
        "/v1beta/models/native:generateContent",
        body.to_string(),
        &key,
    )
    .await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = fold(&[whole.json()]);
    assert_eq!(whole["text"], "Let me check.");
    assert_eq!(
        whole["calls"],
        json!([{"id": "<id>", "name": "get_weather", "args": {"city": "Paris"}}])
    );
    assert_eq!(whole["finish"], "STOP");
    for _ in &chunkings {
        let sse = post(
            &gateway,
            "/v1beta/models/native:streamGenerateContent?alt=sse",
            body.to_string(),
            &key,
        )
        .await;
        assert_eq!(sse.status, 200, "{}", sse.text);
        assert_eq!(sse.headers["content-type"], "text/event-stream");
        assert_eq!(fold(&sse_responses(&sse.text)), whole, "{}", sse.text);
    }
    for _ in &chunkings {
        let array = post(
            &gateway,
            "/v1beta/models/native:streamGenerateContent",
            body.to_string(),
            &key,
        )
        .await;
        assert_eq!(array.status, 200, "{}", array.text);
        assert!(
            array.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let responses: Vec<Value> = serde_json::from_str(&array.text).unwrap();
        assert_eq!(fold(&responses), whole, "{}", array.text);
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_stream_that_fails_after_its_start_ends_with_an_error() {
    let script = OpenAiScript::new()
        .text("Once ")
        .text("upon ")
        .text("a time")
        .finish("stop", 5, 3);
    let backend = ScriptedServer::start(vec![script.cut_after(2); 3]).await;
    let gateway = gateway(&backend).await;
    let answer = post(
        &gateway,
        "/v1beta/models/native:streamGenerateContent?alt=sse",
        hello().to_string(),
        &[("x-goog-api-key", KEY)],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let responses = sse_responses(&answer.text);
    let last = responses.last().unwrap();
    assert!(
        last["error"]["code"].as_u64().unwrap() >= 500,
        "{}",
        answer.text
    );
    assert!(last["error"]["status"].is_string(), "{last}");
    gateway.stop().await.unwrap();
}

/// On the real llama.cpp server (SmolLM2, see `real_backend.rs`): one Gemini request with
/// a function declaration and a few-shot history in Gemini's parts yields a
/// `functionCall` part, whole and streamed alike.
#[tokio::test]
async fn the_real_model_answers_a_gemini_request_with_a_function_call() {
    let Some(server) = switchboard_testkit::LlamaServer::shared() else {
        return;
    };
    let gateway = common::start(
        "",
        &[route(
            "native",
            "openai",
            &format!("{}/v1", server.base_url()),
            "",
        )],
    )
    .await;
    let mut contents = Vec::new();
    for city in ["Paris", "Berlin", "Rome", "Oslo"] {
        contents.push(json!({"role": "user", "parts": [{"text": format!("Weather in {city}?")}]}));
        contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": city}}}]}));
        contents.push(json!({"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": "18 C"}}}]}));
    }
    contents.push(json!({"role": "user", "parts": [{"text": "Weather in Lisbon?"}]}));
    let body = json!({"contents": contents,
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Current weather in a city",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}],
        "generationConfig": {"temperature": 0, "maxOutputTokens": 60}});
    let whole = post(
        &gateway,
        "/v1beta/models/native:generateContent",
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = fold(&[whole.json()]);
    let calls = whole["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{whole}");
    assert_eq!(calls[0]["name"], "get_weather", "{whole}");
    assert!(
        calls[0]["args"]["city"]
            .as_str()
            .is_some_and(|city| !city.is_empty()),
        "{whole}"
    );
    let streamed = post(
        &gateway,
        "/v1beta/models/native:streamGenerateContent?alt=sse",
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(
        fold(&sse_responses(&streamed.text)),
        whole,
        "{}",
        streamed.text
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn limits_answer_resource_exhausted_and_openai_clients_keep_their_model_shape() {
    let script = OpenAiScript::new().text("ok").finish("stop", 1, 1);
    let backend = ScriptedServer::start(vec![script.reply()]).await;
    let digest: String = Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n[[key]]\nname = \"gemini\"\nsha256 = \"{digest}\"\nrequests_per_minute = 1\n{}",
        route("native", "openai", &format!("{}/v1", backend.base), "")
    );
    let gateway = RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap();
    let key = [("x-goog-api-key", KEY)];
    let path = "/v1beta/models/native:generateContent";
    let first = post(&gateway, path, hello().to_string(), &key).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let second = post(&gateway, path, hello().to_string(), &key).await;
    google_error(&second, 429, "RESOURCE_EXHAUSTED");
    let get = |path: &'static str, google: bool| {
        let mut request = common::client().get(format!("{}{path}", gateway.base_url()));
        request = if google {
            request.header("x-goog-api-key", KEY)
        } else {
            request.bearer_auth(KEY)
        };
        async move { read_answer(request.send().await.unwrap()).await }
    };
    let google = get("/v1/models/native", true).await.json();
    assert_eq!(google["name"], "models/native");
    let openai = get("/v1/models/native", false).await.json();
    assert_eq!(openai["id"], "native");
    assert_eq!(openai["object"], "model");
    let missing = get("/v1beta/models/nope", true).await;
    google_error(&missing, 404, "NOT_FOUND");
    gateway.stop().await.unwrap();
}

/// While the gateway runs a slow tool (server-everything's 3-second operation, on the route's
/// MCP server), a Gemini stream says it is alive with blank lines, in both framings; Google's
/// SDK reads the stream past them to the same answer as the whole one, and the JSON array
/// is still one JSON value.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_keeps_alive_while_the_gateway_runs_a_slow_tool() {
    use crate::gateway_tools::{caller_model, everything};
    let Some(servers) = everything() else { return };
    let backend = caller_model(
        "trigger-long-running-operation",
        json!({"duration": 3, "steps": 3}),
    )
    .await;
    let gateway =
        crate::gateway_tools::gateway(&servers, &backend, "mcp_servers = [\"everything\"]").await;
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "Run it."}]}]});
    let ask = |query: &'static str| {
        common::client()
            .post(format!(
                "{}/v1beta/models/local:streamGenerateContent{query}",
                gateway.base_url()
            ))
            .json(&body)
            .send()
    };
    let sse = ask("?alt=sse").await.unwrap().text().await.unwrap();
    assert!(
        sse.contains("\n\n\n"),
        "no blank line kept it alive:\n{sse}"
    );
    assert!(sse.contains("Long running operation completed"), "{sse}");
    let array = ask("").await.unwrap().text().await.unwrap();
    assert!(array.contains("\n\n"), "{array}");
    let parsed: Value = serde_json::from_str(&array).unwrap();
    assert!(
        parsed.as_array().is_some_and(|array| array.len() > 1),
        "{parsed}"
    );
    let result = sdk(&gateway, "slow").await;
    let whole = agree(&result);
    assert!(
        whole["text"]
            .as_str()
            .is_some_and(|text| text.contains("Long running operation completed")),
        "{result}"
    );
    gateway.stop().await.unwrap();
}
