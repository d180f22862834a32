//! Deferred MCP toolsets on Messages: an `mcp_toolset` whose tools wait for a search
//! (`default_config.defer_loading`, overridden per tool by `configs`) offers the model only
//! the search tool; the gateway's search finds a deferred tool of the reference
//! `server-everything`, the model calls it from the next round on, and the gateway runs it.
//! The backend, a scripted Anthropic model, never sees a deferred definition before the
//! search; the answer shows `server_tool_use`/`tool_search_tool_result` then
//! `mcp_tool_use`/`mcp_tool_result`, streamed as whole, and the official `anthropic` SDK
//! (tests/messages_sdk/mcp_tool_search.py) reads them as its own types.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{AnthropicScript, Captured, Chunking, ScriptedServer, message_text};

use crate::common::{CHARACTERS, client, python_client, route};
use crate::gateway_tools::{everything, ready};

const SEARCH: &str = "tool_search_tool_regex";

/// The names of the tools a backend request offered.
fn offered(request: &Captured) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// The model's rounds a backend received (not the token counts a stream asks for beside
/// them).
fn rounds(backend: &ScriptedServer) -> Vec<Captured> {
    backend
        .requests()
        .into_iter()
        .filter(|request| !request.head.contains("count_tokens"))
        .collect()
}

/// The text of the tool results in the last message of a backend request.
fn last_results(request: &Captured) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    blocks
        .iter()
        .filter(|block| block["type"] == "tool_result")
        .map(message_text)
        .collect()
}

/// The model: searches for the echo tool, calls it once it is offered, then says what it
/// said; after a search that did not find it, says so.
async fn model(chunking: Chunking) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let results = last_results(request);
        let script = if results.contains("Echo:") {
            AnthropicScript::new(30)
                .text(&format!("The tool said: {results}"))
                .finish("end_turn", 6)
        } else if offered(request).iter().any(|name| name == "echo") {
            AnthropicScript::new(20)
                .tool_use("toolu_echo", "echo", &[r#"{"message": "#, r#""deferred"}"#])
                .finish("tool_use", 5)
        } else if !results.is_empty() {
            AnthropicScript::new(20)
                .text("No echo tool.")
                .finish("end_turn", 3)
        } else {
            AnthropicScript::new(10)
                .text("Let me look.")
                .tool_use("toolu_search", SEARCH, &[r#"{"pattern": "^echo$"}"#])
                .finish("tool_use", 4)
        };
        script.reply_in(chunking)
    })
    .await
}

async fn gateway(servers: &str, backend: &ScriptedServer) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n{servers}\n{}",
        route("local", "anthropic", &backend.base, "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    ready(&gateway).await;
    gateway
}

/// A request naming the gateway's own `everything` server through the MCP connector, with
/// this toolset and, when `search`, the regex search tool.
fn body(gateway: &RunningGateway, toolset: Value, search: bool) -> Value {
    let url = format!("{}/mcp/servers/everything", gateway.base_url());
    let mut tools = vec![toolset];
    if search {
        tools.push(json!({"type": "tool_search_tool_regex_20251119", "name": SEARCH}));
    }
    json!({"model": "local", "max_tokens": 300,
        "messages": [{"role": "user", "content": "Echo something."}],
        "mcp_servers": [{"type": "url", "url": url, "name": "ev"}],
        "tools": tools})
}

fn toolset(extra: Value) -> Value {
    let mut toolset = json!({"type": "mcp_toolset", "mcp_server_name": "ev"});
    toolset
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    toolset
}

async fn post(gateway: &RunningGateway, path: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(format!("{}{path}", gateway.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A streamed answer's content, its blocks put together from their events.
async fn streamed(gateway: &RunningGateway, body: &Value) -> Value {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let text = client()
        .post(format!("{}/v1/messages", gateway.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut blocks: Vec<Value> = Vec::new();
    let mut json_parts: Vec<String> = Vec::new();
    for data in text.lines().filter_map(|line| line.strip_prefix("data: ")) {
        let event: Value = serde_json::from_str(data).unwrap();
        let index = event["index"].as_u64().unwrap_or_default() as usize;
        match event["type"].as_str().unwrap() {
            "content_block_start" => {
                blocks.push(event["content_block"].clone());
                json_parts.push(String::new());
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match delta["type"].as_str().unwrap() {
                    "text_delta" => {
                        let text = blocks[index]["text"].as_str().unwrap_or_default();
                        blocks[index]["text"] =
                            json!(format!("{text}{}", delta["text"].as_str().unwrap()));
                    }
                    "input_json_delta" => {
                        json_parts[index].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    _ => {}
                }
            }
            "content_block_stop" if !json_parts[index].is_empty() => {
                blocks[index]["input"] = serde_json::from_str(&json_parts[index]).unwrap();
            }
            _ => {}
        }
    }
    Value::Array(blocks)
}

fn kinds(content: &Value) -> Vec<&str> {
    content
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap())
        .collect()
}

/// The tools a `tool_search_tool_result` block references.
fn references(block: &Value) -> Vec<&str> {
    block["content"]["tool_references"]
        .as_array()
        .unwrap_or_else(|| panic!("{block}"))
        .iter()
        .map(|reference| reference["tool_name"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_mcp_tool_is_found_offered_and_run_in_the_gateway_streamed_as_whole() {
    let Some(servers) = everything() else { return };
    for chunking in [Chunking::Bytes, Chunking::PerEvent("\n\n"), Chunking::Whole] {
        let backend = model(chunking).await;
        let gateway = gateway(&servers, &backend).await;
        let body = body(
            &gateway,
            toolset(json!({"default_config": {"defer_loading": true}})),
            true,
        );
        let (status, whole) = post(&gateway, "/v1/messages", &body).await;
        assert_eq!(status, 200, "{whole}");
        let content = &whole["content"];
        assert_eq!(
            kinds(content),
            [
                "text",
                "server_tool_use",
                "tool_search_tool_result",
                "mcp_tool_use",
                "mcp_tool_result",
                "text"
            ],
            "{whole}"
        );
        assert!(content[1]["id"].as_str().unwrap().starts_with("srvtoolu_"));
        assert_eq!(content[1]["name"], SEARCH);
        assert_eq!(content[1]["input"], json!({"pattern": "^echo$"}));
        assert_eq!(content[2]["tool_use_id"], content[1]["id"]);
        assert_eq!(references(&content[2]), ["echo"]);
        assert_eq!(
            (&content[3]["name"], &content[3]["server_name"]),
            (&json!("echo"), &json!("ev"))
        );
        // The tool really ran, on the server.
        assert_eq!(content[4]["content"][0]["text"], "Echo: deferred");
        assert_eq!(whole["stop_reason"], "end_turn");

        // The backend saw only the search tool before the search, and the tool found after.
        let requests = rounds(&backend);
        assert_eq!(requests.len(), 3);
        assert_eq!(offered(&requests[0]), [SEARCH]);
        assert!(
            !requests[0].body.to_string().contains("\"echo\""),
            "{}",
            requests[0].body
        );
        assert_eq!(offered(&requests[1]), [SEARCH, "echo"]);

        // Streamed: the same blocks, in order, with the same contents.
        let stream = streamed(&gateway, &body).await;
        assert_eq!(kinds(&stream), kinds(content), "{stream}");
        for (streamed, whole) in stream
            .as_array()
            .unwrap()
            .iter()
            .zip(content.as_array().unwrap())
        {
            for field in ["name", "input", "server_name", "text", "content"] {
                if !whole[field].is_null() {
                    assert_eq!(
                        streamed[field], whole[field],
                        "{field}: {streamed} / {whole}"
                    );
                }
            }
        }

        // The answer sent back as history loads the tool the search found: it is offered
        // from the first round of the next turn.
        let mut next = body.clone();
        next["messages"] = json!([
            {"role": "user", "content": "Echo something."},
            {"role": "assistant", "content": content},
            {"role": "user", "content": "Once more."}]);
        let asked = rounds(&backend).len();
        let (status, again) = post(&gateway, "/v1/messages", &next).await;
        assert_eq!(status, 200, "{again}");
        assert_eq!(offered(&rounds(&backend)[asked]), ["echo", SEARCH]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn per_tool_configs_override_the_default_both_ways_and_disabled_tools_are_left_out() {
    let Some(servers) = everything() else { return };
    let backend = model(Chunking::PerEvent("\n\n")).await;
    let gateway = gateway(&servers, &backend).await;

    // Deferred by default, echo offered at once: the model calls it without a search.
    let body = body(
        &gateway,
        toolset(json!({"default_config": {"defer_loading": true},
            "configs": {"echo": {"defer_loading": false}}})),
        true,
    );
    let (status, whole) = post(&gateway, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        kinds(&whole["content"]),
        ["mcp_tool_use", "mcp_tool_result", "text"]
    );
    let first = &rounds(&backend)[0];
    assert_eq!(offered(first), ["echo", SEARCH]);

    // Offered by default, echo deferred: every other tool is offered, echo only once found.
    let asked = rounds(&backend).len();
    let body = self::body(
        &gateway,
        toolset(json!({"configs": {"echo": {"defer_loading": true}}})),
        true,
    );
    let (status, whole) = post(&gateway, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        kinds(&whole["content"]),
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "mcp_tool_use",
            "mcp_tool_result",
            "text"
        ]
    );
    let first = offered(&rounds(&backend)[asked]);
    assert!(first.len() > 2, "{first:?}");
    assert!(!first.iter().any(|name| name == "echo"), "{first:?}");
    assert!(
        offered(&rounds(&backend)[asked + 1])
            .iter()
            .any(|name| name == "echo")
    );

    // Disabled: left out entirely, so no search finds it.
    let asked = rounds(&backend).len();
    let body = self::body(
        &gateway,
        toolset(json!({"default_config": {"defer_loading": true},
            "configs": {"echo": {"enabled": false}}})),
        true,
    );
    let (status, whole) = post(&gateway, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{whole}");
    let content = &whole["content"];
    assert_eq!(
        kinds(content),
        ["text", "server_tool_use", "tool_search_tool_result", "text"],
        "{whole}"
    );
    assert!(references(&content[2]).is_empty(), "{whole}");
    assert_eq!(
        offered(&rounds(&backend)[asked + 1]),
        [SEARCH],
        "nothing was found to offer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_deferred_with_no_search_tool_is_anthropics_400() {
    let Some(servers) = everything() else { return };
    let backend = model(Chunking::Whole).await;
    let gateway = gateway(&servers, &backend).await;
    let deferred = toolset(json!({"default_config": {"defer_loading": true}}));
    let (status, error) = post(
        &gateway,
        "/v1/messages",
        &body(&gateway, deferred.clone(), false),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("every tool has defer_loading"),
        "{message}"
    );
    // One tool offered at once is enough to answer with.
    let some = toolset(json!({"default_config": {"defer_loading": true},
        "configs": {"echo": {"defer_loading": false}}}));
    let (status, whole) = post(&gateway, "/v1/messages", &body(&gateway, some, false)).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(offered(&rounds(&backend)[0]), ["echo"]);
    // A count is refused alike, and counts no deferred definition.
    let (status, _) = post(
        &gateway,
        "/v1/messages/count_tokens",
        &body(&gateway, deferred, false),
    )
    .await;
    assert_eq!(status, 400);
}

/// A message's content, whatever its per-request ids.
fn comparable(message: &Value) -> Value {
    let mut content = message["content"].clone();
    for block in content.as_array_mut().unwrap() {
        for field in ["id", "tool_use_id"] {
            if block[field].is_string() {
                block[field] = json!("<id>");
            }
        }
    }
    content
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_sdk_reads_the_search_and_the_mcp_blocks_as_its_own_types() {
    let Some(servers) = everything() else { return };
    let backend = model(Chunking::Bytes).await;
    let gateway = gateway(&servers, &backend).await;
    let mut asked = body(
        &gateway,
        toolset(json!({"default_config": {"defer_loading": true}})),
        true,
    );
    let asked = json!({"mcp_servers": asked["mcp_servers"].take(), "tools": asked["tools"].take()});
    let result = python_client(
        "messages_sdk/mcp_tool_search.py",
        &[&gateway.base_url()],
        "anthropic",
        Some(&asked),
    )
    .await;
    assert_eq!(
        result["classes"],
        json!([
            "BetaTextBlock",
            "BetaServerToolUseBlock",
            "BetaToolSearchToolResultBlock",
            "BetaMCPToolUseBlock",
            "BetaMCPToolResultBlock",
            "BetaTextBlock"
        ]),
        "{result}"
    );
    assert_eq!(result["streamed_classes"], result["classes"]);
    assert_eq!(
        comparable(&result["streamed"]),
        comparable(&result["whole"])
    );
    let content = &result["whole"]["content"];
    assert_eq!(references(&content[2]), ["echo"]);
    assert_eq!(content[4]["content"][0]["text"], "Echo: deferred");
    assert_eq!(offered(&rounds(&backend)[0]), [SEARCH]);
}
