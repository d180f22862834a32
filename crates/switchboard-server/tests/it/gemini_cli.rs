//! Gemini CLI itself (npm `@google/gemini-cli`, run headless) through the gateway's Gemini
//! API: asked to create a file, it first makes its router call (a JSON answer to a
//! `responseJsonSchema` with upper-case types), then streams with `?alt=sse` and its own
//! tools in `parametersJsonSchema`; the scripted model answers with a `write_file` call,
//! the CLI writes the file and sends the result back, the model closes with text, and the
//! CLI exits 0 with the file on disk. Once with the key as `GEMINI_API_KEY` (sent as
//! `x-goog-api-key`), once as a Bearer header beside the empty `x-goog-api-key` the CLI
//! then sends. The double answers each request by what it holds, never by its position.
//!
//! The CLI is installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm`
//! on first use; where npm is missing the tests say SKIP and pass, and fail under
//! `SWITCHBOARD_REQUIRE_PEERS=1` (`switchboard_testkit::peers`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::route;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, message_text, npm_package,
};

use crate::gateway_tools::{everything, ready};

/// The Gemini CLI release these tests run.
const GEMINI_CLI: &str = "0.61.0";
const PROMPT: &str = "Create a file named created.txt containing the word hello.";
const FILE: &str = "created.txt";
/// A hard bound on one run, so a stuck client fails instead of hanging.
const TIMEOUT_SECS: &str = "180";
const KEY: &str = "sk-gemini-cli-test";

/// The `gemini` executable, installing it first if needed; `Err` says why it cannot be had.
fn gemini_cli() -> Result<&'static Path, String> {
    static CLI: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLI.get_or_init(|| {
        npm_package("@google/gemini-cli", GEMINI_CLI)
            .map(|prefix| prefix.join("node_modules/.bin/gemini"))
    })
    .as_deref()
    .map_err(Clone::clone)
}

/// The gateway's slow tool (server-everything's, on the route's MCP server), as the model
/// calls it, and what its result says.
const SLOW_TOOL: &str = "trigger-long-running-operation";
const SLOW_DONE: &str = "Long running operation completed";

/// Whether a request offers the CLI's `write_file` (the router call offers none of its tools).
fn offers_write(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|tool| tool["function"]["name"] == "write_file")
    })
}

/// The model the CLI talks to: its router call (no tools, a JSON schema to answer) gets a
/// score, a conversation whose `write_file` call has its result gets the closing words,
/// any other conversation offering `write_file` gets the call. With `slow`, the gateway's
/// slow tool is called first, and `write_file` once its result is read.
fn model(file: PathBuf, slow: bool) -> impl Fn(&Captured) -> Reply + Send + Sync + 'static {
    move |request: &Captured| {
        let body = &request.body;
        if !request.head.starts_with("post /v1/chat/completions ") {
            return Reply::json(404, &json!({"error": {"message": "Not Found"}}));
        }
        let last = body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .filter(|last| last["role"] == "tool");
        let slow_done = last.is_some_and(|last| message_text(last).contains(SLOW_DONE));
        let answered = last.is_some() && !slow_done;
        let script = if !offers_write(body) {
            OpenAiScript::new()
                .text(r#"{"complexity_reasoning": "one file", "#)
                .text(r#""complexity_score": 5}"#)
                .finish("stop", 30, 12)
        } else if answered {
            OpenAiScript::new()
                .text("Created ")
                .text("created.txt.")
                .finish("stop", 900, 6)
        } else if slow && !slow_done {
            OpenAiScript::new()
                .tool_call("call_slow", SLOW_TOOL, &[r#"{"duration": 3, "steps": 3}"#])
                .finish("tool_calls", 700, 10)
        } else {
            let arguments = json!({"file_path": file, "content": "hello\n"}).to_string();
            OpenAiScript::new()
                .tool_call(
                    "call_1",
                    "write_file",
                    &[&arguments[..15], &arguments[15..]],
                )
                .finish("tool_calls", 800, 20)
        };
        script.reply()
    }
}

/// A scratch directory for one run, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "switchboard-gemini-cli-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("home/.gemini")).unwrap();
        std::fs::create_dir_all(path.join("work")).unwrap();
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How the CLI is given the gateway's key.
#[derive(Debug, Clone, Copy)]
enum KeyGiven {
    /// `GEMINI_API_KEY`, with `selectedType: "gemini-api-key"`.
    ApiKey,
    /// A Bearer header through `GEMINI_CLI_CUSTOM_HEADERS`, with `useExternal: true`.
    Bearer,
}

/// The CLI asked to create a file, given the key as `given`; with `slow`, the route runs
/// server-everything, whose slow tool the model calls first (the stream keeps alive while
/// the gateway runs it).
async fn round_trip(name: &str, given: KeyGiven, slow: bool) {
    let Some(cli) = peer("Gemini CLI", gemini_cli) else {
        return;
    };
    let servers = match slow {
        true => match everything() {
            Some(servers) => servers,
            None => return,
        },
        false => String::new(),
    };
    let scratch = Scratch::new(name);
    let work = scratch.0.join("work");
    let backend = ScriptedServer::responding(model(work.join(FILE), slow)).await;
    let digest: String = Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"tests/no-characters-here\"\n{servers}\n[[key]]\nname = \"cli\"\nsha256 = \"{digest}\"\n{}",
        route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            if slow {
                "aliases = [\"gemini-*\"]\nmcp_servers = [\"everything\"]"
            } else {
                "aliases = [\"gemini-*\"]"
            }
        )
    );
    let gateway = RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap();
    if slow {
        ready(&gateway).await;
    }
    let auth = match given {
        KeyGiven::ApiKey => json!({"selectedType": "gemini-api-key"}),
        KeyGiven::Bearer => json!({"useExternal": true}),
    };
    let settings = json!({"security": {"auth": auth},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false}, "general": {"disableAutoUpdate": true}});
    std::fs::write(
        scratch.0.join("home/.gemini/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut command = Command::new("timeout");
    command
        .args(["-k", "5", TIMEOUT_SECS])
        .arg(cli)
        .args(["-p", PROMPT, "--yolo"])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.0.join("home"))
        .env("GOOGLE_GEMINI_BASE_URL", gateway.base_url())
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("GEMINI_TELEMETRY_ENABLED", "false");
    match given {
        KeyGiven::ApiKey => command.env("GEMINI_API_KEY", KEY),
        KeyGiven::Bearer => command.env(
            "GEMINI_CLI_CUSTOM_HEADERS",
            format!("Authorization: Bearer {KEY}"),
        ),
    };
    let output = tokio::task::spawn_blocking(move || command.output().expect("gemini did not run"))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let asked: Vec<Value> = backend
        .requests()
        .iter()
        .map(|request| request.body.clone())
        .collect();
    assert!(
        output.status.success(),
        "Gemini CLI failed ({}):\nstdout: {stdout}\nstderr: {stderr}\nthe model was asked {} times",
        output.status,
        asked.len()
    );
    assert_eq!(
        std::fs::read_to_string(work.join(FILE)).ok().as_deref(),
        Some("hello\n"),
        "the write_file call never ran\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("Created created.txt."), "{stdout}");
    // The router's schema arrived as JSON Schema, and the CLI's own tools as sent.
    let router = asked
        .iter()
        .find(|body| !offers_write(body))
        .expect("no router call");
    assert_eq!(
        router["response_format"]["json_schema"]["schema"]["type"], "object",
        "{router}"
    );
    let main = asked
        .iter()
        .find(|body| offers_write(body))
        .expect("no call with tools");
    assert!(main["tools"].as_array().unwrap().len() >= 10, "{main}");
    let answered = asked.iter().any(|body| {
        body["messages"]
            .as_array()
            .is_some_and(|messages| messages.iter().any(|message| message["role"] == "tool"))
    });
    assert!(answered, "the write_file result never reached the model");
    if slow {
        let read_slow = asked.iter().any(|body| {
            body["messages"].as_array().is_some_and(|messages| {
                messages
                    .iter()
                    .any(|message| message_text(message).contains(SLOW_DONE))
            })
        });
        assert!(read_slow, "the gateway's slow tool never ran");
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn gemini_cli_writes_a_file_with_its_api_key() {
    round_trip("api-key", KeyGiven::ApiKey, false).await;
}

#[tokio::test]
async fn gemini_cli_writes_a_file_with_a_bearer_key_beside_an_empty_google_key() {
    round_trip("bearer", KeyGiven::Bearer, false).await;
}

/// The route runs server-everything, and the model has the gateway run its 3-second tool
/// before calling `write_file`: the CLI's stream carries blank lines meanwhile, which its SDK
/// reads past.
#[tokio::test]
async fn gemini_cli_reads_past_keep_alives_while_the_gateway_runs_a_slow_tool() {
    round_trip("slow", KeyGiven::ApiKey, true).await;
}
