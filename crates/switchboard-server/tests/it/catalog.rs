//! One catalog of tool sources (issue 37, item 5): for one configuration (a character with
//! tools of its own that uses an MCP server, the server with a tool whose name is past what
//! model APIs take, a key with `tools` globs), `/mcp`, a character's turn and a request
//! naming the server show the same tools under the same shortening rule and the same key
//! filter. The server is a Python program of the test's own speaking JSON-RPC on stdio;
//! the model a scripted backend that records what it was offered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::gateway_tools::ready;
use crate::mcp::{Client, key, names};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{python, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer};
use switchboard_tools::names::served;

const KEY: &str = "sk-sb-catalog-Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3";

/// Past 64 characters once prefixed with `py_`.
const LONG: &str = "a_tool_whose_name_runs_on_and_on_well_past_what_any_model_api_will_ever_take";

/// `/mcp`'s longest name in this configuration (`mcp_tool_name_max_chars`).
const MCP_MAX: usize = 40;

/// Tools `echo`, `dump` and [`LONG`] (`argv[1]`), each answering its own name.
const SERVER: &str = r#"
import json, sys

empty = {"type": "object"}
tools = [{"name": name, "description": name, "inputSchema": empty}
         for name in ("echo", "dump", sys.argv[1])]

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
    elif method == "tools/call":
        name = message["params"]["name"]
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": name}]}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// A character with two tools of its own that uses server `py`.
const SCOUT: &str = r#"
export const CHARACTER_NAME = "Scout";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/scout.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You scout.", language: "en" };
export const TOOLS = [
  { type: "function", function: { name: "note", description: "Notes", parameters: { type: "object", properties: {} } } },
  { type: "function", function: { name: "secret", description: "Hidden", parameters: { type: "object", properties: {} } } },
];
export const MCP_SERVERS = ["py"];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
  handleToolCall(toolName) { return toolName; }
}
"#;

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

async fn post_keyed(gateway: &RunningGateway, body: Value) -> Value {
    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_a_characters_turn_and_a_request_agree_on_names_and_a_keys_filter() {
    let Some(python) = python(None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let program = script(dir.path(), "server.py", SERVER);
    let characters = dir.path().join("characters");
    std::fs::create_dir(&characters).unwrap();
    std::fs::write(characters.join("scout.js"), SCOUT).unwrap();
    let backend = ScriptedServer::responding(|_: &Captured| {
        OpenAiScript::new().text("ok").finish("stop", 1, 1).reply()
    })
    .await;
    // The key names the long tool as `/mcp` serves it, and leaves out `dump` and the
    // character's `secret`.
    let long_at_mcp = served(&format!("py_{LONG}"), MCP_MAX).into_owned();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = {}\nmcp_tool_name_max_chars = {MCP_MAX}\n\
         [[mcp_server]]\nname = \"py\"\ncommand = [{}, \"-u\", {}, {}]\n{}\n{}",
        json!(characters.to_str().unwrap()),
        json!(python),
        json!(program),
        json!(LONG),
        key(
            "narrow",
            KEY,
            &format!(
                "tools = [\"scout_note\", \"py_echo\", {}]",
                json!(long_at_mcp)
            )
        ),
        route("local", "openai", &format!("{}/v1", backend.base), "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    ready(&gateway).await;

    // `/mcp`: every tool by its catalog name, cut to `mcp_tool_name_max_chars`.
    let mut mcp = Client::modern(&gateway, "/mcp").with_key(KEY);
    let listed = mcp.tools().await;
    assert_eq!(
        names(&listed),
        ["scout_note", "py_echo", long_at_mcp.as_str()]
    );

    // A model is offered a server's tool under its catalog name cut to 64 characters,
    // by the same rule.
    let long_for_models = served(&format!("py_{LONG}"), 64).into_owned();
    post_keyed(
        &gateway,
        json!({"model": "character/scout", "messages": [{"role": "user", "content": "Go"}]}),
    )
    .await;
    assert_eq!(
        offered(&backend.requests()[0]),
        ["note", "py_echo", long_for_models.as_str()]
    );

    // A request naming the server: the same tools of it (a name that fits is offered
    // unprefixed, as the request named the server's tools).
    post_keyed(
        &gateway,
        json!({"model": "local", "messages": [{"role": "user", "content": "Go"}],
            "tools": [{"type": "mcp", "server_label": "py", "require_approval": "never"}]}),
    )
    .await;
    assert_eq!(
        offered(&backend.requests()[1]),
        ["echo", long_for_models.as_str()]
    );
    gateway.stop().await.unwrap();
}
