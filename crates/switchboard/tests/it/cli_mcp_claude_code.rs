//! Claude Code (the real CLI, headless) using a character's tool over MCP, with the gateway
//! as its model backend: a scripted model calls `mcp__switchboard__narrator_log_story_event`,
//! Claude Code calls the tool, the narrator's tool runs, and its result reaches the model.
//! Over the gateway's `/mcp` with a key in the header (`--mcp-config`,
//! `--strict-mcp-config`, `--allowedTools`), and over `switchboard mcp` spawned on stdio.
//!
//! The CLI is installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm`
//! on first use; where npm is missing the tests say SKIP and pass (fail under SWITCHBOARD_REQUIRE_PEERS=1).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::path::{Path, PathBuf};

use common::characters;
use serde_json::json;
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, claude_code, message_text, npm_package,
};

/// The Claude Code release these tests run.
const CLAUDE_CODE: &str = "2.1.330";
const KEY: &str = "sk-sb-claude-mcp-7dQwK2mZp9LrX4vT8nB3cY6hJ1sF5g";
const TOOL: &str = "mcp__switchboard__narrator_log_story_event";
const EVENT: &str = "the MCP door opens";
/// A hard bound on one run, so a stuck client fails instead of hanging.
const TIMEOUT_SECS: &str = "180";

/// The model Claude Code talks to: a conversation offering the narrator's MCP tool gets a
/// call to it, and once the tool's result is in, closing words; side requests get a title.
fn model(request: &Captured) -> Reply {
    if !request.head.starts_with("post /v1/chat/completions ") {
        return Reply::json(404, &json!({"error": {"message": "Not Found"}}));
    }
    let body = &request.body;
    let offers_tool = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == TOOL));
    let answered = body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    let script = if !offers_tool {
        OpenAiScript::new()
            .text("Log an event")
            .finish("stop", 30, 3)
    } else if answered {
        OpenAiScript::new()
            .text("The event is logged.")
            .finish("stop", 900, 6)
    } else {
        let arguments = json!({"event": EVENT}).to_string();
        OpenAiScript::new()
            .text("I'll log it.")
            .tool_call("call_1", TOOL, &[&arguments])
            .finish("tool_calls", 800, 20)
    };
    script.reply()
}

/// How Claude Code reaches the tools.
enum Via {
    Http,
    Stdio,
}

async fn round_trip(via: Via) {
    let Some(claude) = peer("Claude Code", || {
        npm_package("@anthropic-ai/claude-code", CLAUDE_CODE)
            .map(|prefix| prefix.join("node_modules/.bin/claude"))
    }) else {
        return;
    };
    let backend = ScriptedServer::responding(model).await;
    let settings = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n[[key]]\nname = \"claude\"\nkey_env = \"CLAUDE_KEY\"\n\n\
         [[route]]\nname = \"local\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"scripted\"\naliases = [\"claude-*\"]\n",
        characters(),
        backend.base
    );
    let env = |name: &str| (name == "CLAUDE_KEY").then(|| KEY.to_owned());
    let gateway = RunningGateway::start(&Config::from_toml(&settings).unwrap(), &env)
        .await
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (home, work) = (scratch.path().join("home"), scratch.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let server = match via {
        Via::Http => json!({"type": "http", "url": format!("{}/mcp", gateway.base_url()),
            "headers": {"Authorization": format!("Bearer {KEY}")}}),
        Via::Stdio => json!({"type": "stdio", "command": env!("CARGO_BIN_EXE_switchboard"),
            "args": ["mcp", "--characters", characters()]}),
    };
    let config = scratch.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"switchboard": server}}).to_string(),
    )
    .unwrap();
    let output = run(claude, &gateway, &home, &work, &config).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "Claude Code failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    assert!(
        stdout.contains("The event is logged."),
        "{stdout}\n{stderr}"
    );
    // The result the model read is the one only the narrator's code writes.
    let results: Vec<String> = backend
        .requests()
        .iter()
        .flat_map(|request| {
            request.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|message| message["role"] == "tool")
        .map(|message| message_text(&message))
        .collect();
    assert!(
        results
            .iter()
            .any(|result| result.contains(&format!("Logged story event: {EVENT}"))),
        "the tool's result never reached the model: {results:?}\n{stderr}"
    );
    gateway.stop().await.unwrap();
}

async fn run(
    claude: PathBuf,
    gateway: &RunningGateway,
    home: &Path,
    work: &Path,
    config: &Path,
) -> std::process::Output {
    let base = gateway.base_url();
    let (home, work, config) = (home.to_owned(), work.to_owned(), config.to_owned());
    tokio::task::spawn_blocking(move || {
        claude_code(&claude, TIMEOUT_SECS, &home, &work, &base, KEY)
            .args(["-p", "Log that the door opens.", "--mcp-config"])
            .arg(&config)
            .args(["--strict-mcp-config", "--allowedTools", TOOL])
            // Offers MCP tools to the model itself rather than behind its ToolSearch tool.
            .env("ENABLE_TOOL_SEARCH", "false")
            .output()
            .expect("timeout or claude did not run")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_calls_a_characters_tool_over_mcp_with_a_key() {
    round_trip(Via::Http).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_calls_a_characters_tool_over_switchboard_mcp_on_stdio() {
    round_trip(Via::Stdio).await;
}
