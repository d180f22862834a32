//! Characters' tools over MCP at `/mcp` and `/mcp/characters/{name}`, spoken to over real
//! sockets in JSON-RPC as clients send it: both protocol eras on one URL, names that fit
//! model APIs (long or odd ones shortened and mapped back), calls that run exactly as the
//! characters API runs them (the same `Error: …` results), unknown tools as `-32602`, the
//! transport's checks (a foreign `Origin` is 403, GET without a session 405), and keys (401
//! with `WWW-Authenticate`, a key's characters only, a call counted against its limits).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::{Config, RunningGateway};

pub(crate) const MODERN: &str = "2026-07-28";
pub(crate) const LEGACY: &str = "2025-11-25";
const KEY: &str = "sk-sb-mcp-7dQwK2mZp9LrX4vT8nB3cY6hJ1sF5gA0eU2i";
const NARRATOR_KEY: &str = "sk-sb-mcp-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo";

/// A gateway on a folder with the repository's narrator and game master, the executor's
/// toolbox (which throws and spins on demand) and a character with a long dotted file
/// name; `settings` are more top-level lines (keys).
async fn gateway(settings: &str) -> (RunningGateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for name in ["narrator.js", "game-master.js"] {
        std::fs::copy(Path::new(CHARACTERS).join(name), dir.path().join(name)).unwrap();
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        here.join("../switchboard-characters/tests/fixtures/runtime/toolbox.js"),
        dir.path().join("toolbox.js"),
    )
    .unwrap();
    std::fs::copy(
        here.join("tests/mcp/long.js"),
        dir.path()
            .join("weather.v2.character-with-a-rather-long-name.js"),
    )
    .unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{settings}\n{}",
        dir.path().display(),
        route("qwen", "openai", "http://127.0.0.1:9", "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    (
        RunningGateway::start(&config, &|_| None).await.unwrap(),
        dir,
    )
}

pub(crate) fn key(name: &str, secret: &str, extra: &str) -> String {
    let digest: String = Sha256::digest(secret.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("[[key]]\nname = \"{name}\"\nsha256 = \"{digest}\"\n{extra}\n")
}

/// One client of one URL: modern (stateless, `_meta` on every request) or legacy (a
/// session opened with `initialize`).
pub(crate) struct Client {
    pub(crate) url: String,
    key: Option<&'static str>,
    pub(crate) session: Option<String>,
    next: u64,
}

/// An MCP answer: its HTTP status and headers, and the JSON-RPC message in it (from a JSON
/// body or the SSE stream), if any.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) message: Option<Value>,
    pub(crate) text: String,
}

impl Client {
    pub(crate) fn modern(gateway: &RunningGateway, path: &str) -> Self {
        Self {
            url: format!("{}{path}", gateway.base_url()),
            key: None,
            session: None,
            next: 1,
        }
    }

    pub(crate) fn with_key(mut self, key: &'static str) -> Self {
        self.key = Some(key);
        self
    }

    pub(crate) async fn legacy(gateway: &RunningGateway, path: &str) -> Self {
        let mut client = Self::modern(gateway, path);
        let reply = client
            .send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let message = reply.message.unwrap();
        assert_eq!(message["result"]["protocolVersion"], LEGACY, "{message}");
        assert_eq!(
            message["result"]["capabilities"]["tools"]["listChanged"],
            true
        );
        client.session = Some(reply.headers["mcp-session-id"].to_str().unwrap().to_owned());
        let done = client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(done.status, 202, "{}", done.text);
        client
    }

    /// Sends one message as the client's era does.
    pub(crate) async fn send(&mut self, mut message: Value) -> Reply {
        let method = message["method"].as_str().unwrap().to_owned();
        let mut request = client()
            .post(&self.url)
            .header("accept", "application/json, text/event-stream");
        match &self.session {
            Some(session) => {
                request = request
                    .header("mcp-session-id", session)
                    .header("mcp-protocol-version", LEGACY);
            }
            None if method != "initialize" => {
                message["params"]["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                request = request
                    .header("mcp-protocol-version", MODERN)
                    .header("mcp-method", &method);
                if let Some(name) = message["params"]["name"].as_str() {
                    request = request.header("mcp-name", name);
                }
            }
            None => {}
        }
        if let Some(key) = self.key {
            request = request.bearer_auth(key);
        }
        let response = request.json(&message).send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let message = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).ok()
        } else {
            // The last JSON-RPC message of an SSE stream.
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .rfind(|message| message.get("id").is_some())
        };
        Reply {
            status,
            headers,
            message,
            text,
        }
    }

    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let reply = self
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text);
        let message = reply
            .message
            .unwrap_or_else(|| panic!("{method}: {}", reply.text));
        assert_eq!(message["id"], id, "{message}");
        message
    }

    /// A legacy session's GET stream, open (what a client that listens for notices holds).
    pub(crate) async fn listen(&self) -> reqwest::Response {
        let stream = client()
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", self.session.as_deref().unwrap())
            .header("mcp-protocol-version", LEGACY)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        stream
    }

    pub(crate) async fn tools(&mut self) -> Vec<Value> {
        let message = self.request("tools/list", json!({})).await;
        message["result"]["tools"].as_array().unwrap().clone()
    }

    pub(crate) async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}

/// Reads a session's stream until `notifications/tools/list_changed` comes, for at most 10 s.
pub(crate) async fn hear_list_changed(stream: &mut reqwest::Response) {
    let mut seen = String::new();
    while !seen.contains("notifications/tools/list_changed") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("no list_changed on the stream: {seen}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

pub(crate) fn names(tools: &[Value]) -> Vec<&str> {
    tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect()
}

/// The text and `isError` of a `tools/call` answer.
pub(crate) fn outcome(message: &Value) -> (String, bool) {
    let result = &message["result"];
    assert_eq!(result["content"][0]["type"], "text", "{message}");
    (
        result["content"][0]["text"].as_str().unwrap().to_owned(),
        result["isError"].as_bool().unwrap(),
    )
}

/// What `POST /v1/characters/{name}/tools/{tool}` answers for the same call.
async fn through_the_api(
    gateway: &RunningGateway,
    character: &str,
    tool: &str,
    arguments: &Value,
) -> (String, bool) {
    let answer = post_to(
        gateway,
        &format!("/v1/characters/{character}/tools/{tool}"),
        &json!({"arguments": arguments}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = answer.json();
    (
        body["content"].as_str().unwrap().to_owned(),
        body["is_error"].as_bool().unwrap(),
    )
}

#[tokio::test]
async fn every_characters_tools_are_listed_prefixed_in_one_order_with_their_schemas() {
    let (gateway, _dir) = gateway("").await;
    let mut client = Client::modern(&gateway, "/mcp");
    let tools = client.tools().await;
    let listed = names(&tools);
    assert_eq!(
        listed[..4],
        [
            "game-master_roll_dice",
            "game-master_record_score",
            "game-master_get_scoreboard",
            "narrator_log_story_event"
        ],
        "{listed:?}"
    );
    assert!(listed.contains(&"toolbox_spin"), "{listed:?}");
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            name.len() <= 46
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let narrator = &tools[3];
    assert_eq!(
        narrator["description"],
        "Log an important narrative event to the terminal for the developer to see"
    );
    assert_eq!(narrator["inputSchema"]["required"], json!(["event"]));
    assert_eq!(
        narrator["inputSchema"]["properties"]["importance"]["default"],
        "medium"
    );
    // The same list, in the same order, every time.
    assert_eq!(client.tools().await, tools);
    let message = client.request("tools/list", json!({})).await;
    assert_eq!(message["result"]["resultType"], "complete");
    assert!(message["result"]["ttlMs"].is_u64(), "{message}");
}

#[tokio::test]
async fn long_or_dotted_names_are_shortened_and_map_back_with_a_structured_result() {
    let (gateway, _dir) = gateway("").await;
    let mut client = Client::modern(&gateway, "/mcp");
    let tools = client.tools().await;
    let long = tools
        .iter()
        .find(|tool| tool["name"].as_str().unwrap().starts_with("weather_v2_"))
        .unwrap_or_else(|| panic!("{:?}", names(&tools)));
    let name = long["name"].as_str().unwrap();
    assert_eq!(name.len(), 46, "{name}");
    assert_eq!(
        long["outputSchema"],
        json!({"type": "object", "properties": {"result": {"type": "string", "pattern": "^Sunny"}}, "required": ["result"]})
    );
    let answer = client.call(name, json!({"city": "Oslo"})).await;
    assert_eq!(outcome(&answer), ("Sunny in Oslo".to_owned(), false));
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"result": "Sunny in Oslo"})
    );
}

#[tokio::test]
async fn one_characters_tools_are_served_unprefixed_at_its_own_url() {
    let (gateway, _dir) = gateway("").await;
    let mut client = Client::modern(&gateway, "/mcp/characters/narrator");
    assert_eq!(names(&client.tools().await), ["log_story_event"]);
    let answer = client
        .call("log_story_event", json!({"event": "a door opens"}))
        .await;
    assert_eq!(
        outcome(&answer),
        ("Logged story event: a door opens".to_owned(), false)
    );
    // Its name in the whole list is not its name here.
    let unknown = client
        .call("narrator_log_story_event", json!({"event": "x"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let mut nobody = Client::modern(&gateway, "/mcp/characters/nobody");
    assert!(nobody.tools().await.is_empty());
}

#[tokio::test]
async fn calls_run_as_the_characters_api_runs_them_and_failures_are_error_results() {
    let (gateway, _dir) = gateway("").await;
    let mut client = Client::modern(&gateway, "/mcp");
    let cases = [
        (
            "narrator",
            "log_story_event",
            json!({"event": "the dragon wakes"}),
            false,
        ),
        ("narrator", "log_story_event", json!({}), true),
        ("narrator", "log_story_event", json!({"event": 7}), true),
        ("toolbox", "echo", json!({"text": "hi"}), false),
        ("toolbox", "fail", json!({"how": "custom_error"}), true),
        ("toolbox", "odd_return", json!({"what": "long"}), false),
        ("game-master", "roll_dice", json!({"sides": 7}), true),
    ];
    for (character, tool, arguments, is_error) in cases {
        let answer = client
            .call(&format!("{character}_{tool}"), arguments.clone())
            .await;
        let (text, error) = outcome(&answer);
        assert_eq!(error, is_error, "{character}_{tool} {arguments}: {text}");
        assert_eq!(
            (text.clone(), error),
            through_the_api(&gateway, character, tool, &arguments).await,
            "{character}_{tool} {arguments}"
        );
        if is_error {
            assert!(text.starts_with("Error: "), "{text}");
        }
    }
    let echoed = outcome(&client.call("toolbox_echo", json!({"text": "hi"})).await);
    assert_eq!(echoed.0, "hi (plain)", "defaults are filled in");
    let thrown = outcome(
        &client
            .call("toolbox_fail", json!({"how": "custom_error"}))
            .await,
    );
    assert_eq!(thrown.0, "Error: OopsError - it went wrong");
    let started = Instant::now();
    let spun = outcome(&client.call("toolbox_spin", json!({})).await);
    assert_eq!(
        spun,
        (
            "Error: Tool execution timed out (exceeded 100ms)".to_owned(),
            true
        )
    );
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
    let unknown = client.call("narrator_no_such_tool", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn legacy_sessions_list_and_call_on_the_same_url() {
    let (gateway, _dir) = gateway("").await;
    let mut client = Client::legacy(&gateway, "/mcp").await;
    let tools = client.tools().await;
    let modern = Client::modern(&gateway, "/mcp").tools().await;
    assert_eq!(tools, modern);
    let answer = client
        .call("narrator_log_story_event", json!({"event": "old client"}))
        .await;
    assert_eq!(
        outcome(&answer),
        ("Logged story event: old client".to_owned(), false)
    );
    assert_eq!(
        client.call("nope", json!({})).await["error"]["code"],
        -32602
    );
}

#[tokio::test]
async fn foreign_origins_are_refused_and_get_without_a_session_is_405() {
    let (gateway, _dir) = gateway("").await;
    let url = format!("{}/mcp", gateway.base_url());
    let refused = client()
        .post(&url)
        .header("origin", "http://evil.example")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let mut local = Client::modern(&gateway, "/mcp");
    assert!(!local.tools().await.is_empty());
    for accept in ["text/event-stream", "application/json"] {
        let get = client()
            .get(&url)
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 405, "{accept}");
    }
}

#[tokio::test]
async fn without_a_key_mcp_is_401_with_www_authenticate() {
    let (gateway, _dir) = gateway(&key("all", KEY, "")).await;
    let mut anonymous = Client::modern(&gateway, "/mcp");
    let reply = anonymous
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .await;
    assert_eq!(reply.status, 401, "{}", reply.text);
    assert_eq!(reply.headers["www-authenticate"], "Bearer");
    let mut keyed = Client::modern(&gateway, "/mcp").with_key(KEY);
    assert!(names(&keyed.tools().await).contains(&"toolbox_echo"));
}

#[tokio::test]
async fn a_key_limited_to_the_narrator_sees_and_calls_only_its_tools() {
    let keys = [
        "max_body_bytes = 4096\n",
        &key("all", KEY, ""),
        &key(
            "narrator-only",
            NARRATOR_KEY,
            "routes = [\"character/narrator\"]\nrequests_per_minute = 3",
        ),
    ]
    .concat();
    let (gateway, _dir) = gateway(&keys).await;
    let mut narrator = Client::modern(&gateway, "/mcp").with_key(NARRATOR_KEY);
    assert_eq!(names(&narrator.tools().await), ["narrator_log_story_event"]);
    let answer = narrator
        .call("narrator_log_story_event", json!({"event": "allowed"}))
        .await;
    assert!(!outcome(&answer).1);
    // Beyond its reach: exactly an unknown tool, and it never runs.
    let refused = narrator
        .call(
            "game-master_record_score",
            json!({"player": "x", "points": 1}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "unknown tool: game-master_record_score"
    );
    let mut all = Client::modern(&gateway, "/mcp").with_key(KEY);
    let board = outcome(&all.call("game-master_get_scoreboard", json!({})).await);
    assert!(!board.0.contains("x:"), "{}", board.0);
    let mut scoped = Client::modern(&gateway, "/mcp/characters/game-master").with_key(NARRATOR_KEY);
    assert!(scoped.tools().await.is_empty());
    // Calls count against its 3 requests a minute (the refused one too); lists do not.
    narrator.tools().await;
    let third = narrator
        .call("narrator_log_story_event", json!({"event": "third"}))
        .await;
    assert!(!outcome(&third).1);
    let limited = narrator
        .send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "narrator_log_story_event", "arguments": {"event": "x"}}}))
        .await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    // A body past the limit is a 413, whether the key's calls are counted (the gate reads
    // the body to tell) or not (the endpoint refuses it).
    for secret in [NARRATOR_KEY, KEY] {
        let large = client()
            .post(format!("{}/mcp", gateway.base_url()))
            .bearer_auth(secret)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(format!(
                r#"{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "narrator_log_story_event", "arguments": {{"event": "{}"}}}}}}"#,
                "x".repeat(8192)
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(large.status(), 413, "{}", large.text().await.unwrap());
    }
}

/// What the official MCP Python SDK saw: one era's list and calls.
fn check_sdk_run(seen: &Value, era: &str) {
    assert_eq!(seen["protocol_version"], era, "{seen}");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"narrator_log_story_event"), "{tools:?}");
    assert!(
        seen["schemas"]
            .as_object()
            .unwrap()
            .values()
            .all(|schema| schema["type"] == "object")
    );
    let calls = &seen["calls"];
    assert_eq!(calls["ok"]["text"], "Logged story event: the SDK called");
    assert_eq!(calls["ok"]["is_error"], false);
    assert_eq!(
        calls["bad_argument"]["text"],
        "Error: Invalid parameters - /event: expected string, got number 7"
    );
    assert_eq!(calls["bad_argument"]["is_error"], true);
    assert_eq!(calls["throws"]["text"], "Error: OopsError - it went wrong");
    assert_eq!(calls["throws"]["is_error"], true);
    assert_eq!(
        calls["past_deadline"]["text"],
        "Error: Tool execution timed out (exceeded 100ms)"
    );
    assert_eq!(calls["past_deadline"]["is_error"], true);
    // Answered within the toolbox's 100 ms deadline and a small margin.
    let seconds = calls["past_deadline"]["seconds"].as_f64().unwrap();
    assert!(seconds < 0.5, "{seconds}");
}

#[tokio::test]
async fn the_official_python_sdk_lists_and_calls_in_both_eras() {
    let (gateway, _dir) = gateway("").await;
    let url = format!("{}/mcp", gateway.base_url());
    for (mode, era) in [("legacy", LEGACY), ("auto", MODERN), (MODERN, MODERN)] {
        let seen = python_client("mcp/client.py", &["http", mode, &url], "mcp", None).await;
        check_sdk_run(&seen, era);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_call_whose_client_leaves_never_runs() {
    let (gateway, dir) = gateway("").await;
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/queue.js"),
        dir.path().join("queue.js"),
    )
    .unwrap();
    let registry = std::sync::Arc::clone(&gateway.state.characters);
    tokio::task::spawn_blocking(move || registry.reload())
        .await
        .unwrap();
    // A character runs one call at a time: this one holds it for its 1 s deadline.
    let mut first = Client::modern(&gateway, "/mcp");
    let holding = tokio::spawn(async move { first.call("queue_hold", json!({})).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Queued behind it, a call whose client leaves while it waits.
    let leaving = client()
        .post(format!("{}/mcp", gateway.base_url()))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "queue_mark")
        .timeout(Duration::from_millis(100))
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "queue_mark", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await;
    assert!(leaving.is_err(), "the client was to leave first");
    let held = outcome(&holding.await.unwrap());
    assert_eq!(
        held,
        (
            "Error: Tool execution timed out (exceeded 1000ms)".to_owned(),
            true
        )
    );
    let mut next = Client::modern(&gateway, "/mcp");
    let marked = outcome(&next.call("queue_was_marked", json!({})).await);
    assert_eq!(marked.0, "marked: false", "the abandoned call ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_hears_of_a_reload_on_its_stream() {
    let (gateway, dir) = gateway("").await;
    let client = Client::legacy(&gateway, "/mcp").await;
    let mut stream = client.listen().await;
    std::fs::write(
        dir.path().join("coin.js"),
        concat!(
            "export const CHARACTER_NAME = \"Coin\";\n",
            "export const VOICE_SOURCE = { source_type: \"file\", path_on_server: \"v.wav\" };\n",
            "export const INSTRUCTIONS = { instruction_prompt: \"Flip.\", language: \"en\" };\n",
            "export const TOOLS = [{ type: \"function\", function: { name: \"flip\", ",
            "description: \"Flips a coin\", parameters: { type: \"object\", properties: {} } } }];\n",
            "export class PromptGenerator { makeSystemPrompt() { return \"Flip.\"; } ",
            "handleToolCall() { return \"heads\"; } }\n",
        ),
    )
    .unwrap();
    let registry = std::sync::Arc::clone(&gateway.state.characters);
    tokio::task::spawn_blocking(move || registry.reload())
        .await
        .unwrap();
    hear_list_changed(&mut stream).await;
    let mut client = client;
    let tools = client.tools().await;
    assert!(names(&tools).contains(&"coin_flip"), "{:?}", names(&tools));
}

#[tokio::test]
async fn a_character_whose_file_breaks_keeps_serving_its_last_good_tools() {
    let (gateway, dir) = gateway("").await;
    let mut client = Client::modern(&gateway, "/mcp");
    let before = client.tools().await;
    std::fs::write(
        dir.path().join("narrator.js"),
        "export const CHARACTER_NAME = ;\n",
    )
    .unwrap();
    let registry = std::sync::Arc::clone(&gateway.state.characters);
    tokio::task::spawn_blocking(move || registry.reload())
        .await
        .unwrap();
    assert_eq!(client.tools().await, before);
    let answer = client
        .call("narrator_log_story_event", json!({"event": "still here"}))
        .await;
    assert_eq!(
        outcome(&answer),
        ("Logged story event: still here".to_owned(), false)
    );
}
