//! Tool search on a character route, as on any route: the narrator's own tool stays offered
//! and runs in the gateway; the client's deferred tools reach the model only once its search
//! finds them; a found tool's call goes back to the client, whose result continues the
//! turn. On Chat Completions (`{"type": "tool_search"}`) and Messages (Anthropic's regex
//! search tool), whole as streamed, whatever the backend's chunking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_server::RunningGateway;
use switchboard_testkit::{
    Captured, Chunking, OpenAiScript, Reply, ScriptedServer, message_text, tool_names,
};

use crate::common::messages::{fold, parse_events, post_messages, without_message_ids};
use crate::common::{self, accumulate, parse_sse, post_with, sent, summary, without_ids};

const CHARACTER: &str = "character/narrator";
const OWN_TOOL: &str = "log_story_event";
const FOUND: &str = "get_weather";

/// The model: logs a story event with the narrator's tool, then searches for the weather
/// tool (with whichever search tool it is offered), calls it once offered, and narrates
/// the weather once the client answered the call.
fn model(request: &Captured, chunking: Chunking) -> Reply {
    let body = &request.body;
    let tools = tool_names(body);
    let last = body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or_default();
    let search = tools
        .iter()
        .find(|tool| tool.contains("search"))
        .cloned()
        .unwrap_or_default();
    let script = if last["role"] == "user" {
        OpenAiScript::new()
            .text("The sky darkens. ")
            .tool_call(
                "call_log",
                OWN_TOOL,
                &[r#"{"event": "A storm"#, r#" gathers"}"#],
            )
            .finish("tool_calls", 100, 10)
    } else if message_text(&last).contains("18 degrees") {
        OpenAiScript::new()
            .text("It is 18 degrees ")
            .text("in Paris.")
            .finish("stop", 160, 6)
    } else if tools.iter().any(|tool| tool == FOUND) {
        OpenAiScript::new()
            .tool_call("call_weather", FOUND, &[r#"{"city": "#, r#""Paris"}"#])
            .finish("tool_calls", 140, 8)
    } else {
        OpenAiScript::new()
            .tool_call(
                "call_search",
                &search,
                &[r#"{"pattern": "weath"#, r#"er"}"#],
            )
            .finish("tool_calls", 120, 9)
    };
    script.reply_in(chunking)
}

/// A gateway whose narrator talks through a backend answering in `chunking`.
async fn narrator(chunking: Chunking) -> (RunningGateway, ScriptedServer) {
    let backend = ScriptedServer::responding(move |request| model(request, chunking)).await;
    let gateway = common::one_route("openai", &format!("{}/v1", backend.base), "").await;
    (gateway, backend)
}

/// What the backend was offered and read, round by round: the narrator's tool and the
/// search first, never the weather tool's definition before the search found it; the
/// narrator's tool really ran.
fn check_rounds(backend: &ScriptedServer, search: &str) {
    assert_eq!(backend.requests().len(), 3);
    let first = sent(backend, 0);
    assert_eq!(tool_names(&first), [OWN_TOOL, search]);
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("narrator of an interactive adventure"),
        "{first}"
    );
    let second = sent(backend, 1);
    assert_eq!(tool_names(&second), [OWN_TOOL, search]);
    let logged = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(logged["role"], "tool");
    assert_eq!(message_text(logged), "Logged story event: A storm gathers");
    let third = sent(backend, 2);
    assert_eq!(tool_names(&third), [OWN_TOOL, search, FOUND]);
    assert_eq!(
        third["tools"][2]["function"]["parameters"]["required"],
        json!(["city"]),
        "the found tool is offered in full"
    );
    let result = third["messages"].as_array().unwrap().last().unwrap();
    assert!(
        message_text(result).contains("- get_weather: Current weather in a city"),
        "{result}"
    );
}

fn city() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

fn chat_body() -> Value {
    let mut tools = vec![
        json!({"type": "tool_search", "mode": "regex"}),
        json!({"type": "function", "defer_loading": true, "function": {"name": FOUND, "description": "Current weather in a city", "parameters": city()}}),
    ];
    tools.extend((0..39).map(|n| {
        json!({"type": "function", "defer_loading": true, "function": {"name": format!("inventory_bin_{n}"), "description": "Count the parts in a storage bin", "parameters": city()}})
    }));
    json!({"model": CHARACTER, "messages": [{"role": "user", "content": "I step outside. What is the weather?"}], "tools": tools})
}

#[tokio::test]
async fn chat_a_character_searches_the_clients_deferred_tools_beside_its_own() {
    let (gateway, backend) = narrator(Chunking::PerEvent("\n\n")).await;
    let whole = post_with(&gateway, "/v1/chat/completions", &chat_body(), &[]).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    assert_eq!(whole["model"], CHARACTER);
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "only the client's own call: {whole}");
    assert_eq!(calls[0]["function"]["name"], FOUND);
    assert_eq!(calls[0]["function"]["arguments"], r#"{"city": "Paris"}"#);
    let call_id = calls[0]["id"].as_str().unwrap().to_owned();
    assert!(common::is_call_id(&call_id), "{call_id}");
    check_rounds(&backend, "tool_search");

    // Streamed, from a backend sending a byte at a time: the same answer.
    let (bytes_gateway, bytes_backend) = narrator(Chunking::Bytes).await;
    let mut streamed = chat_body();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let answer = post_with(&bytes_gateway, "/v1/chat/completions", &streamed, &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let (chunks, done) = parse_sse(&answer.text);
    assert!(done);
    assert_eq!(
        without_ids(accumulate(&chunks)),
        without_ids(summary(&whole)),
        "streamed equals whole"
    );
    check_rounds(&bytes_backend, "tool_search");
    bytes_gateway.stop().await.unwrap();

    // The client answers its call: the character goes on from the result.
    let mut next = chat_body();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(choice["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": "18 degrees, clear"}));
    let answer = post_with(&gateway, "/v1/chat/completions", &next, &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = answer.json();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "It is 18 degrees in Paris."
    );
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    // The history called the tool found: it stays offered, with no search again.
    let continued = sent(&backend, 3);
    assert_eq!(tool_names(&continued), [FOUND, OWN_TOOL, "tool_search"]);
    let result = continued["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], call_id.as_str());
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn chat_a_character_without_a_search_still_refuses_client_tools() {
    let (gateway, backend) = narrator(Chunking::Whole).await;
    let mut body = chat_body();
    let tools = body["tools"].as_array_mut().unwrap();
    tools.remove(0);
    for tool in tools {
        tool.as_object_mut().unwrap().remove("defer_loading");
    }
    let answer = post_with(&gateway, "/v1/chat/completions", &body, &[]).await;
    let error = answer.error(400);
    assert_eq!(error["param"], "tools");
    // A tool result is the last message only where the client has tools of its own.
    let mut body = common::request(CHARACTER, "hi");
    body["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": FOUND, "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "18 degrees"}),
    ]);
    let error = post_with(&gateway, "/v1/chat/completions", &body, &[])
        .await
        .error(400);
    assert_eq!(error["param"], "messages[2]");
    assert!(backend.requests().is_empty());
    gateway.stop().await.unwrap();
}

fn messages_body() -> Value {
    let schema = city();
    let mut tools = vec![
        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}),
        json!({"name": FOUND, "description": "Current weather in a city", "input_schema": schema, "defer_loading": true}),
    ];
    tools.extend((0..39).map(|n| {
        json!({"name": format!("inventory_bin_{n}"), "description": "Count the parts in a storage bin", "input_schema": schema, "defer_loading": true})
    }));
    json!({"model": CHARACTER, "max_tokens": 1024, "tools": tools,
        "messages": [{"role": "user", "content": "I step outside. What is the weather?"}]})
}

/// A message with the ids the gateway minted replaced, so answers to separate requests
/// compare: `toolu_…` ones and the search's `srvtoolu_…` ones.
fn comparable(message: Value) -> Value {
    let mut message = without_message_ids(message);
    for block in message["content"].as_array_mut().unwrap() {
        for field in ["id", "tool_use_id"] {
            if block[field]
                .as_str()
                .is_some_and(|id| id.starts_with("srvtoolu_"))
            {
                block[field] = json!("srvtoolu_<id>");
            }
        }
    }
    message
}

#[tokio::test]
async fn messages_a_character_searches_the_clients_deferred_tools_beside_its_own() {
    let (gateway, backend) = narrator(Chunking::PerEvent("\n\n")).await;
    let whole = post_messages(&gateway, &messages_body()).await;
    assert_eq!(whole.status, 200, "{}", whole.text);
    let whole = whole.json();
    assert_eq!(whole["stop_reason"], "tool_use");
    let kinds: Vec<&str> = whole["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap())
        .collect();
    // The narrator's own call stays inside; the search shows as Anthropic's blocks.
    assert_eq!(
        kinds,
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "tool_use"
        ],
        "{whole}"
    );
    let content = &whole["content"];
    assert_eq!(content[0]["text"], "The sky darkens. ");
    assert_eq!(content[1]["name"], "tool_search_tool_regex");
    assert_eq!(content[1]["input"], json!({"pattern": "weather"}));
    assert_eq!(
        content[2]["content"]["tool_references"],
        json!([{"type": "tool_reference", "tool_name": FOUND}])
    );
    let call = &content[3];
    assert_eq!(call["name"], FOUND);
    assert_eq!(call["input"], json!({"city": "Paris"}));
    let call_id = call["id"].as_str().unwrap().to_owned();
    assert!(call_id.starts_with("toolu_"), "{call_id}");
    check_rounds(&backend, "tool_search_tool_regex");

    let (bytes_gateway, bytes_backend) = narrator(Chunking::Bytes).await;
    let mut streamed = messages_body();
    streamed["stream"] = json!(true);
    let answer = post_messages(&bytes_gateway, &streamed).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let message = fold(&parse_events(&answer.text));
    assert_eq!(
        comparable(message),
        comparable(whole.clone()),
        "streamed equals whole"
    );
    check_rounds(&bytes_backend, "tool_search_tool_regex");
    bytes_gateway.stop().await.unwrap();

    // The client answers its call: the character goes on from the result.
    let mut next = messages_body();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": whole["content"]}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call_id, "content": "18 degrees, clear"}]}));
    let answer = post_messages(&gateway, &next).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let answer = answer.json();
    assert_eq!(answer["content"][0]["text"], "It is 18 degrees in Paris.");
    assert_eq!(answer["stop_reason"], "end_turn");
    // The history's reference keeps the found tool offered, as on a route.
    let continued = sent(&backend, 3);
    assert_eq!(
        tool_names(&continued),
        [FOUND, OWN_TOOL, "tool_search_tool_regex"]
    );
    gateway.stop().await.unwrap();
}
