//! Names, key globs, metric labels and URL allow-lists under attack (issue 36, items 4, 6,
//! 7, 13 and 14): a key's `tools` globs hold in a character's conversation and match one
//! spelling everywhere; `mcp_allowed_urls` is matched part by part against the parsed URL
//! and its resolved address, and a refused or failed server's answer is not quoted back;
//! two servers cannot take each other's tool names; and client-chosen server labels do not
//! become metric series. The MCP server is a Python SDK server of the tests' own over HTTP,
//! the model a scripted backend that calls what the test wants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::gateway_tools::caller_model;
use crate::mcp::{Client, key, names, outcome};

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{ServerProcess, free_port, python, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer, message_text};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "sk-sb-h5-Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3Wx4Yz";

/// A server whose tools a narrow key must not reach, with a dotted name and one that a
/// character of the stem `up` also has.
const UP_SERVER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("up")

@app.tool()
def echo(message: str) -> str:
    """Echoes."""
    return f"Echo: {message}"

@app.tool()
def whoami() -> str:
    """Secret."""
    return "SECRET-IDENTITY-42"

@app.tool(name="read.secret")
def read_dotted() -> str:
    """Dotted."""
    return "dotted-secret"

@app.tool()
def read_open() -> str:
    """Open."""
    return "open"

@app.tool()
def write_secret() -> str:
    """Refused."""
    return "written"

@app.tool()
def roll_dice() -> str:
    """The server's dice."""
    return "server dice"

@app.tool(name="v1.x")
def dotted_v1() -> str:
    """Served as up_v1_x_6a246f82."""
    return "dotted"

@app.tool(name="v1_x_6a246f82")
def literal_v1() -> str:
    """Literally named as the other is served."""
    return "literal"

@app.tool()
def h5_probe() -> str:
    """Counted."""
    return "probed"

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

/// A character that uses server `up`.
const SPY: &str = r#"
export const CHARACTER_NAME = "Spy";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/spy.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You are a spy.", language: "en" };
export const MCP_SERVERS = ["up"];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
}
"#;

struct Up {
    _process: ServerProcess,
    _script: tempfile::TempDir,
    port: u16,
}

async fn up_server() -> Option<Up> {
    let python = python(Some("mcp.server.mcpserver"))?;
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", UP_SERVER);
    let port = free_port();
    let process = ServerProcess::start(&python, &[&path, &port.to_string()], &[], port).await;
    Some(Up {
        _process: process,
        _script: dir,
        port,
    })
}

/// A gateway on `characters` with `settings`, one route to `backend`, the key `narrow`
/// (`KEY`, with `tools`) and the environment empty.
async fn gateway_with(
    characters: &Path,
    settings: &str,
    backend: &ScriptedServer,
    tools: &str,
) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{settings}\n{}\n{}",
        characters.display(),
        key("narrow", KEY, &format!("tools = {tools}")),
        route("local", "openai", &format!("{}/v1", backend.base), "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    crate::gateway_tools::ready(&gateway).await;
    gateway
}

fn up_entry(port: u16) -> String {
    format!("[[mcp_server]]\nname = \"up\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n")
}

async fn post_keyed(gateway: &RunningGateway, path: &str, body: Value) -> (u16, Value) {
    let response = client()
        .post(format!("{}{path}", gateway.base_url()))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The function names a backend request offered.
fn offered(request: &Captured) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A model that calls at once every tool of `calls` whose `who` its system prompt mentions,
/// then repeats what the results said (a model with nothing to call answers in words).
async fn calling_model(calls: &'static [(&'static str, &'static str)]) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let messages = request.body["messages"].as_array().cloned().unwrap();
        let last = messages.last().cloned().unwrap();
        if last["role"] == "tool" {
            let results: Vec<String> = messages
                .iter()
                .filter(|message| message["role"] == "tool")
                .map(message_text)
                .collect();
            return OpenAiScript::new()
                .text(&results.join(" | "))
                .finish("stop", 20, 7)
                .reply();
        }
        let prompt = message_text(&messages[0]);
        let mine: Vec<&str> = calls
            .iter()
            .filter(|(who, _)| prompt.contains(who))
            .map(|(_, tool)| *tool)
            .collect();
        if mine.is_empty() {
            return OpenAiScript::new()
                .text("nothing to call")
                .finish("stop", 10, 5)
                .reply();
        }
        let mut script = OpenAiScript::new();
        for (index, tool) in mine.iter().enumerate() {
            script = script.tool_call(&format!("call_h5_{index}"), tool, &["{}"]);
        }
        script.finish("tool_calls", 10, 5).reply()
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keys_tools_globs_hold_in_a_characters_conversation() {
    let Some(up) = up_server().await else { return };
    let characters = tempfile::tempdir().unwrap();
    std::fs::write(characters.path().join("spy.js"), SPY).unwrap();
    std::fs::copy(
        Path::new(CHARACTERS).join("game-master.js"),
        characters.path().join("game-master.js"),
    )
    .unwrap();
    let backend = calling_model(&[("spy", "up_whoami"), ("game master", "roll_dice")]).await;
    let gateway = gateway_with(
        characters.path(),
        &up_entry(up.port),
        &backend,
        r#"["up_echo", "narrator_*"]"#,
    )
    .await;

    let (status, spy) = post_keyed(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "character/spy", "messages": [{"role": "user", "content": "Who?"}]}),
    )
    .await;
    assert_eq!(status, 200, "{spy}");
    let said = spy["choices"][0]["message"]["content"].as_str().unwrap();
    let requests = backend.requests();
    // Only what the key may use is offered; the refused tool is a tool that does not exist.
    assert_eq!(offered(&requests[0]), ["up_echo"], "{said}");
    assert!(!said.contains("SECRET-IDENTITY-42"), "{said}");
    assert_eq!(said, "Error: Unknown tool: up_whoami");

    let (status, master) = post_keyed(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "character/game-master", "messages": [{"role": "user", "content": "Roll"}]}),
    )
    .await;
    assert_eq!(status, 200, "{master}");
    let said = master["choices"][0]["message"]["content"].as_str().unwrap();
    let requests = backend.requests();
    assert!(
        offered(&requests[2]).is_empty(),
        "{:?}",
        offered(&requests[2])
    );
    assert_eq!(said, "Error: Unknown tool: roll_dice");
    // The characters API's tool endpoint answers it as a tool that does not exist, too.
    let (status, called) = post_keyed(
        &gateway,
        "/v1/characters/game-master/tools/roll_dice",
        json!({"arguments": {}}),
    )
    .await;
    assert_eq!(status, 200, "{called}");
    assert_eq!(
        called["content"], "Error: Unknown tool: roll_dice",
        "{called}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn one_spelling_decides_what_a_key_sees_at_mcp_and_in_a_loop() {
    let Some(up) = up_server().await else { return };
    let characters = tempfile::tempdir().unwrap();
    let backend = calling_model(&[]).await;
    let gateway = gateway_with(
        characters.path(),
        &up_entry(up.port),
        &backend,
        r#"["up_read_*"]"#,
    )
    .await;
    let mut mcp = Client::modern(&gateway, "/mcp").with_key(KEY);
    let listed = mcp.tools().await;
    let mut at_mcp: Vec<String> = names(&listed).into_iter().map(str::to_owned).collect();
    at_mcp.sort();
    let (status, body) = post_keyed(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "local", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "mcp", "server_label": "up", "require_approval": "never"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let mut in_loop: Vec<String> = offered(&backend.requests()[0])
        .into_iter()
        .map(|name| {
            if name.starts_with("up_") {
                name
            } else {
                format!("up_{name}")
            }
        })
        .collect();
    in_loop.sort();
    assert_eq!(at_mcp, in_loop, "the same set on both paths");
    assert_eq!(at_mcp.len(), 2, "{at_mcp:?}");
    assert!(at_mcp.contains(&"up_read_open".to_owned()), "{at_mcp:?}");
    let dotted = at_mcp
        .iter()
        .find(|name| name.starts_with("up_read_secret_"))
        .unwrap_or_else(|| panic!("{at_mcp:?}"))
        .clone();
    let answer = mcp.call(&dotted, json!({})).await;
    assert_eq!(outcome(&answer), ("dotted-secret".to_owned(), false));
    gateway.stop().await.unwrap();
}

#[test]
fn a_server_name_that_begins_with_another_and_an_underscore_is_refused() {
    let text = "listen = \"127.0.0.1:0\"\n\
        [[mcp_server]]\nname = \"up\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
        [[mcp_server]]\nname = \"up_two\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
        [[mcp_server]]\nname = \"upper\"\nurl = \"http://127.0.0.1:9/mcp\"\n";
    let error = Config::from_toml(text).unwrap_err().to_string();
    assert!(
        error.contains("mcp_server[1] (\"up_two\").name") && error.contains("\"up\""),
        "{error}"
    );
    assert!(!error.contains("upper"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_whose_names_meet_at_mcp_are_left_out_not_chosen_by_order() {
    let Some(up) = up_server().await else { return };
    let characters = tempfile::tempdir().unwrap();
    // A character of the stem `up`: its `roll_dice` and server `up`'s are both `up_roll_dice`.
    std::fs::copy(
        Path::new(CHARACTERS).join("game-master.js"),
        characters.path().join("up.js"),
    )
    .unwrap();
    let backend = calling_model(&[]).await;
    let gateway = gateway_with(characters.path(), &up_entry(up.port), &backend, r#"["*"]"#).await;
    let mut mcp = Client::modern(&gateway, "/mcp").with_key(KEY);
    let listed = mcp.tools().await;
    let listed = names(&listed);
    assert!(listed.contains(&"up_record_score"), "{listed:?}");
    assert!(listed.contains(&"up_echo"), "{listed:?}");
    assert!(!listed.contains(&"up_roll_dice"), "{listed:?}");
    let call = mcp.call("up_roll_dice", json!({})).await;
    assert_eq!(call["error"]["code"], -32602, "{call}");
    // A tool named literally as another is served once shortened: neither is chosen.
    assert!(!listed.contains(&"up_v1_x_6a246f82"), "{listed:?}");
    let call = mcp.call("up_v1_x_6a246f82", json!({})).await;
    assert_eq!(call["error"]["code"], -32602, "{call}");
    gateway.stop().await.unwrap();
}

/// A character with a tool of its own named as server `up`'s `echo` is offered to it.
const TWIN: &str = r#"
export const CHARACTER_NAME = "Twin";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/twin.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You are a twin.", language: "en" };
export const MCP_SERVERS = ["up"];
export const TOOLS = [{ type: "function", function: { name: "up_echo", description: "Mine.",
  parameters: { type: "object", properties: {} } } }];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
  handleToolCall(toolName, toolInput) { return "OWN ECHO"; }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_characters_tool_and_its_servers_tool_of_one_name_are_both_left_out() {
    let Some(up) = up_server().await else { return };
    let characters = tempfile::tempdir().unwrap();
    std::fs::write(characters.path().join("twin.js"), TWIN).unwrap();
    let backend = calling_model(&[("twin", "up_echo")]).await;
    let gateway = gateway_with(characters.path(), &up_entry(up.port), &backend, r#"["*"]"#).await;
    let (status, twin) = post_keyed(
        &gateway,
        "/v1/chat/completions",
        json!({"model": "character/twin", "messages": [{"role": "user", "content": "Echo"}]}),
    )
    .await;
    assert_eq!(status, 200, "{twin}");
    let offered = offered(&backend.requests()[0]);
    assert!(!offered.contains(&"up_echo".to_owned()), "{offered:?}");
    assert!(offered.contains(&"up_whoami".to_owned()), "{offered:?}");
    assert_eq!(
        twin["choices"][0]["message"]["content"],
        "Error: Unknown tool: up_echo"
    );
    gateway.stop().await.unwrap();
}

/// A listener of the test's own on loopback that counts connections and plays an internal
/// service that half speaks MCP: it opens a legacy session, then answers `tools/list` with
/// an error quoting a secret. One request per connection.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let method = request["method"].as_str().unwrap_or("");
                let id = request["id"].clone();
                let (status, body) = match method {
                    "initialize" => (
                        "200 OK",
                        json!({"jsonrpc": "2.0", "id": id, "result": {
                            "protocolVersion": request["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "internal", "version": "1"}}})
                        .to_string(),
                    ),
                    "tools/list" => (
                        "200 OK",
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                            "message": "INTERNAL-ADMIN-PAGE token=hunter2"}})
                        .to_string(),
                    ),
                    _ if id.is_null() => ("202 Accepted", String::new()),
                    _ => (
                        "200 OK",
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                            "message": "no such method"}})
                        .to_string(),
                    ),
                };
                let _ = socket
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    (port, count)
}

/// One HTTP request's JSON body, read within 5 s; `None` for any other request.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Value> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = String::from_utf8_lossy(&buffer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                return serde_json::from_slice(&buffer[end + 4..end + 4 + length]).ok();
            }
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        let read = tokio::time::timeout(left, socket.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if read == 0 || buffer.len() > 1 << 20 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_urls_are_matched_part_by_part_and_internal_answers_stay_inside() {
    let (port, connections) = counting_listener().await;
    let backend = caller_model("nothing", json!({})).await;
    let characters = tempfile::tempdir().unwrap();
    let settings = format!(
        "mcp_allowed_urls = [\"http://*.allowed.test/*\", \"http://tools.allowed.test:*/*\", \"http://local*:*/*\", \"http://127.0.0.1:{port}/named/*\"]\n"
    );
    let gateway = gateway_with(characters.path(), &settings, &backend, r#"["*"]"#).await;
    let refused = [
        format!("http://127.0.0.1:{port}/x.allowed.test/mcp"),
        format!("http://tools.allowed.test:x@127.0.0.1:{port}/mcp"),
        // Resolves to loopback, and no pattern names the host itself.
        format!("http://localhost:{port}/mcp"),
    ];
    for url in &refused {
        let (status, body) = post_keyed(
            &gateway,
            "/v1/responses",
            json!({"model": "local", "input": "x", "tools": [{"type": "mcp",
                "server_label": "x", "server_url": url, "require_approval": "never"}]}),
        )
        .await;
        assert_eq!(status, 400, "{url}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.contains(":x@"), "{message}");
    }
    assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing connects");
    assert!(backend.requests().is_empty());

    // Named by the operator literally: it connects, and its answer stays in the gateway.
    let (status, body) = post_keyed(
        &gateway,
        "/v1/responses",
        json!({"model": "local", "input": "x", "tools": [{"type": "mcp",
            "server_label": "x", "server_url": format!("http://127.0.0.1:{port}/named/mcp"),
            "require_approval": "never"}]}),
    )
    .await;
    assert!(connections.load(Ordering::SeqCst) > 0);
    let listing = &body["output"][0];
    assert_eq!(listing["type"], "mcp_list_tools", "{body}");
    eprintln!("the listing's error: {}", listing["error"]);
    assert!(
        listing["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{body}"
    );
    let text = body.to_string();
    assert!(!text.contains("INTERNAL-ADMIN-PAGE"), "{status}: {text}");
    assert!(!text.contains("hunter2"), "{status}: {text}");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn request_named_servers_share_one_metric_label() {
    let Some(up) = up_server().await else { return };
    let backend = caller_model("h5_probe", json!({})).await;
    let characters = tempfile::tempdir().unwrap();
    let settings = format!("mcp_allowed_urls = [\"http://127.0.0.1:{}/*\"]\n", up.port);
    let gateway = gateway_with(characters.path(), &settings, &backend, r#"["*"]"#).await;
    let url = format!("http://127.0.0.1:{}/mcp", up.port);
    let started = Instant::now();
    for label in 0..50 {
        let (status, body) = post_keyed(
            &gateway,
            "/v1/chat/completions",
            json!({"model": "local", "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "mcp", "server_label": format!("h5label{label}"),
                    "server_url": url, "require_approval": "never"}]}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["choices"][0]["gateway_tool_calls"][0]["content"], "probed",
            "{body}"
        );
    }
    let metrics = client()
        .get(format!("{}/metrics", gateway.base_url()))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = metrics
        .lines()
        .filter(|line| {
            line.starts_with("gateway_mcp_tool_calls_total{") && line.contains("tool=\"h5_probe\"")
        })
        .count();
    eprintln!(
        "50 labels: {series} series of gateway_mcp_tool_calls_total in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(series, 1, "{metrics}");
    assert!(
        metrics.contains("gateway_mcp_tool_calls_total{mcp_server=\"request\",tool=\"h5_probe\""),
        "{metrics}"
    );
    gateway.stop().await.unwrap();
}
