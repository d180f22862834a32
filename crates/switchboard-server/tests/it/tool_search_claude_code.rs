//! Claude Code's own tool search through the gateway (`ENABLE_TOOL_SEARCH=true`): with an
//! MCP server of 40 tools (`--mcp-config`, the official Python `mcp` SDK), Claude Code
//! sends the model no MCP tool's schema, only its `ToolSearch` tool; the scripted model
//! searches, Claude Code answers with a `tool_reference` block and sends the found tool with
//! `defer_loading`, the gateway loads the referenced definition for the model, the model
//! calls it and Claude Code really runs it on the MCP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{python, script};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{Captured, OpenAiScript, Reply, ScriptedServer, claude_code, tool_names};

use crate::common::{route, sent};
use crate::messages_claude_code::{Scratch, claude};

/// 40 tools (four verbs on ten topics); each call is written to the file named by the
/// first argument, so the test sees it ran.
const SERVER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("inventory")
RAN = sys.argv[1]

def tool(verb, topic):
    def run(item: str) -> str:
        with open(RAN, "a") as ran:
            ran.write(f"{verb}_{topic}:{item}\n")
        return f"{verb} {topic} {item}: done"
    run.__name__ = f"{verb}_{topic}"
    run.__doc__ = f"{verb.capitalize()} the {topic} records of one item."
    return run

for verb in ["list", "count", "archive", "describe"]:
    for topic in ["alpha", "bravo", "charlie", "delta", "echo",
                  "foxtrot", "golf", "hotel", "india", "juliet"]:
        server.tool()(tool(verb, topic))
server.run()
"#;

const FOUND: &str = "mcp__inventory__archive_delta";
const TIMEOUT_SECS: &str = "180";

/// The text of each tool result in the conversation.
fn results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The model: side requests (no ToolSearch offered) get a title; a conversation without a
/// search searches; one whose search loaded the tool calls it; one with the tool's result
/// closes in words.
fn model(request: &Captured) -> Reply {
    if !request.head.starts_with("post /v1/chat/completions ") {
        return Reply::json(404, &json!({"error": {"message": "Not Found"}}));
    }
    let body = &request.body;
    let tools = tool_names(body);
    let results = results(body);
    let script = if !tools.iter().any(|tool| tool == "ToolSearch") {
        OpenAiScript::new().text("Archive").finish("stop", 30, 2)
    } else if results
        .iter()
        .any(|text| text.contains("archive delta x7: done"))
    {
        OpenAiScript::new()
            .text("Archived x7.")
            .finish("stop", 900, 4)
    } else if results
        .iter()
        .any(|text| text.contains(&format!("Tool loaded: {FOUND}")))
        && tools.iter().any(|tool| tool == FOUND)
    {
        OpenAiScript::new()
            .tool_call("call_2", FOUND, &[r#"{"item": "x7"}"#])
            .finish("tool_calls", 850, 10)
    } else {
        let arguments = format!(r#"{{"query": "select:{FOUND}", "max_results": 5}}"#);
        OpenAiScript::new()
            .tool_call("call_1", "ToolSearch", &[&arguments])
            .finish("tool_calls", 800, 10)
    };
    script.reply()
}

#[tokio::test]
async fn claude_code_finds_a_deferred_mcp_tool_and_the_gateway_loads_it() {
    let Some(claude) = peer("Claude Code", claude) else {
        return;
    };
    let Some(python) = python(Some("mcp")) else {
        return;
    };
    let backend = ScriptedServer::responding(model).await;
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"tests/no-characters-here\"\n{}",
        route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            "aliases = [\"claude-*\"]"
        )
    );
    let gateway = RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap();
    let scratch = Scratch::new("tool-search");
    let server = script(&scratch.0, "inventory.py", SERVER);
    let ran = scratch.0.join("ran.txt");
    let config = scratch.0.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"inventory": {"command": python, "args": [server, ran]}}})
            .to_string(),
    )
    .unwrap();
    let base = gateway.base_url();
    let (home, work) = (scratch.0.join("home"), scratch.0.join("work"));
    let output = tokio::task::spawn_blocking(move || {
        claude_code(claude, TIMEOUT_SECS, &home, &work, &base, "sk-ant-dummy")
            .env("ENABLE_TOOL_SEARCH", "true")
            .args(["-p", "Archive item x7 of delta."])
            .arg("--mcp-config")
            .arg(&config)
            .args(["--allowedTools", FOUND])
            .output()
            .expect("timeout or claude did not run")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let asked: Vec<Value> = (0..backend.requests().len())
        .map(|index| sent(&backend, index))
        .filter(|body| tool_names(body).iter().any(|tool| tool == "ToolSearch"))
        .collect();
    let offered: Vec<Vec<String>> = asked.iter().map(tool_names).collect();
    assert!(
        output.status.success(),
        "Claude Code failed ({}):\nstdout: {stdout}\nstderr: {stderr}\nthe model was offered: {offered:?}",
        output.status
    );
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap_or_default(),
        "archive_delta:x7\n",
        "the MCP tool did not run once; the model was offered {offered:?}"
    );
    assert!(stdout.contains("Archived x7."), "{stdout}");
    // Before the search, no MCP tool reached the model; after it, only the one found (with
    // its full definition), never the placeholder Claude Code keeps deferred.
    let first = offered.first().unwrap();
    assert!(
        !first.iter().any(|tool| tool.starts_with("mcp__")),
        "{first:?}"
    );
    let loaded = asked
        .iter()
        .flat_map(|body| body["tools"].as_array().cloned().unwrap_or_default())
        .find(|tool| tool["function"]["name"] == FOUND)
        .unwrap_or_else(|| panic!("{FOUND} was never offered: {offered:?}"));
    assert_eq!(
        loaded["function"]["parameters"]["properties"]["item"]["type"],
        "string"
    );
    for tools in &offered {
        assert!(
            tools
                .iter()
                .all(|tool| !tool.starts_with("mcp__") || tool == FOUND),
            "{tools:?}"
        );
        assert!(!tools.iter().any(|tool| tool == "DeferredToolPlaceholder"));
    }
    gateway.stop().await.unwrap();
}
