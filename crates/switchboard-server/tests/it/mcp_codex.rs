//! The Codex CLI (npm `@openai/codex`, pinned) using a character's tool over the gateway's
//! `/mcp` (`[mcp_servers.switchboard]` with `url` and `bearer_token_env_var`), with the
//! gateway as its model provider too, under a model name outside Codex's own catalog (so
//! that Codex offers MCP tools to the model directly) and the server's tools approved
//! (`codex exec` with `approval_policy = "never"` refuses tools that need approval): a
//! scripted model calls the narrator's tool, the tool runs in the gateway, and its result
//! reaches the model.
//!
//! The CLI is installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm`
//! on first use; where npm is missing the test says SKIP and passes (fails under SWITCHBOARD_REQUIRE_PEERS=1).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, message_text, npm_package,
};

const CODEX_VERSION: &str = "0.169.0";
const KEY: &str = "sk-sb-codex-mcp-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0P";
const TOOL: &str = "narrator_log_story_event";
const EVENT: &str = "the MCP door opens";

/// The model Codex talks to: a conversation offering the narrator's tool (under whatever
/// name Codex gives MCP tools) gets a call to it, and closing words once its result is in.
fn model(request: &Captured) -> Reply {
    let body = &request.body;
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tool = body["tools"].as_array().and_then(|tools| {
        tools
            .iter()
            .filter_map(|tool| tool["function"]["name"].as_str())
            .find(|name| name.ends_with(TOOL))
            .map(str::to_owned)
    });
    let answered = messages.last().is_some_and(|last| last["role"] == "tool");
    let script = match tool {
        Some(_) if answered => OpenAiScript::new()
            .text("The event is logged.")
            .finish("stop", 900, 6),
        Some(name) => {
            let arguments = json!({"event": EVENT}).to_string();
            OpenAiScript::new()
                .tool_call("call_1", &name, &[&arguments])
                .finish("tool_calls", 800, 20)
        }
        None => OpenAiScript::new().text("No tool.").finish("stop", 30, 3),
    };
    script.reply()
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_calls_a_characters_tool_over_mcp_with_a_bearer_token() {
    let Some(codex) = peer("Codex", || {
        npm_package("@openai/codex", CODEX_VERSION)
            .map(|prefix| prefix.join("node_modules/.bin/codex"))
    }) else {
        return;
    };
    let backend = ScriptedServer::responding(model).await;
    let digest: String = Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let settings = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n[[key]]\nname = \"codex\"\nsha256 = \"{digest}\"\n{}",
        route("local", "openai", &format!("{}/v1", backend.base), "")
    );
    let gateway = RunningGateway::start(&Config::from_toml(&settings).unwrap(), &|_| None)
        .await
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (home, work) = (scratch.path().join("home"), scratch.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let base = gateway.base_url();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"local\"\nmodel_provider = \"switchboard\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n\n\
             [model_providers.switchboard]\nname = \"Switchboard\"\nbase_url = \"{base}/v1\"\nwire_api = \"responses\"\nenv_key = \"SWITCHBOARD_KEY\"\n\n\
             [mcp_servers.switchboard]\nurl = \"{base}/mcp\"\nbearer_token_env_var = \"SWITCHBOARD_KEY\"\ndefault_tools_approval_mode = \"approve\"\n"
        ),
    )
    .unwrap();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("timeout")
            .args(["-k", "10", "180"])
            .arg(codex)
            .args(["exec", "--skip-git-repo-check", "-C"])
            .arg(&work)
            .arg("Log that the door opens.")
            .env("CODEX_HOME", &home)
            .env("SWITCHBOARD_KEY", KEY)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let offered: Vec<Value> = backend
        .requests()
        .iter()
        .map(|request| request.body["tools"].clone())
        .collect();
    assert!(
        output.status.success(),
        "codex exec exited with {}:\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
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
        "the tool's result never reached the model: {results:?}\nstdout: {stdout}\nstderr: {stderr}\noffered: {offered:?}"
    );
    gateway.stop().await.unwrap();
}
