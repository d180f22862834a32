//! Claude Code itself (npm `@anthropic-ai/claude-code`, run headless) through the gateway:
//! it asks for a file to be created, the scripted model answers with a Bash tool call, Claude
//! Code runs it and sends the result back, the model closes with text, and Claude Code
//! exits 0 with the file on disk. Once through a native route, once through a prompted
//! route whose model writes Hermes markup. The double answers whatever Claude Code asks
//! (title generation, token counts, …) by looking at each request, never by its position.
//!
//! The CLI is installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm`
//! on first use; where npm is missing the tests say SKIP and pass, and fail under
//! `SWITCHBOARD_REQUIRE_PEERS=1` (`switchboard_testkit::peers`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{route, sent};
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, claude_code, npm_package,
};

/// The Claude Code release these tests run.
const CLAUDE_CODE: &str = "2.1.330";
/// What the model is asked to do, and the file that proves it was done.
const PROMPT: &str = "Create an empty file named created.txt in the current directory.";
const FILE: &str = "created.txt";
/// A hard bound on one Claude Code run, so a stuck client fails instead of hanging.
const TIMEOUT_SECS: &str = "180";

/// The `claude` executable, installing it first if needed; `Err` says why it cannot be had
/// (npm is missing).
pub(crate) fn claude() -> Result<&'static Path, String> {
    static CLAUDE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLAUDE
        .get_or_init(|| {
            npm_package("@anthropic-ai/claude-code", CLAUDE_CODE)
                .map(|prefix| prefix.join("node_modules/.bin/claude"))
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// How the scripted model writes its tool call.
#[derive(Debug, Clone, Copy)]
enum Calls {
    Native,
    Hermes,
}

/// The model Claude Code talks to, answering each request by what it holds: a side request
/// without Bash gets a short title, a conversation whose Bash call has its result gets the
/// closing words, any other conversation offering Bash gets the call.
fn model(calls: Calls) -> impl Fn(&Captured) -> Reply + Send + Sync + 'static {
    move |request: &Captured| {
        let body = &request.body;
        if !request.head.starts_with("post /v1/chat/completions ") {
            // Token counting and anything else model servers may not offer.
            return Reply::json(404, &json!({"error": {"message": "Not Found"}}));
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let text = |message: &Value| match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect(),
            _ => String::new(),
        };
        let offers_bash = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == "Bash"))
            || messages.first().is_some_and(|system| {
                system["role"] == "system" && text(system).contains("\"Bash\"")
            });
        let last = messages.last().cloned().unwrap_or_default();
        let answered = last["role"] == "tool" || text(&last).contains("<tool_response>");
        let script = if !offers_bash {
            OpenAiScript::new()
                .text("Create a file")
                .finish("stop", 30, 3)
        } else if answered {
            OpenAiScript::new()
                .text("Created ")
                .text("created.txt.")
                .finish("stop", 900, 6)
        } else {
            let arguments = r#"{"command": "touch created.txt", "description": "Create the file"}"#;
            match calls {
                Calls::Native => OpenAiScript::new()
                    .text("I'll create it.")
                    .tool_call("call_1", "Bash", &[&arguments[..20], &arguments[20..]])
                    .finish("tool_calls", 800, 20),
                Calls::Hermes => {
                    let markup = format!(
                        "I'll create it.\n<tool_call>\n{{\"name\": \"Bash\", \"arguments\": {arguments}}}\n</tool_call>"
                    );
                    markup
                        .as_bytes()
                        .chunks(11)
                        .fold(OpenAiScript::new(), |script, piece| {
                            script.text(std::str::from_utf8(piece).unwrap())
                        })
                        .finish("stop", 800, 20)
                }
            }
        };
        script.reply()
    }
}

/// A scratch directory for one run, removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "switchboard-claude-code-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("home")).unwrap();
        std::fs::create_dir_all(path.join("work")).unwrap();
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs Claude Code headless against the gateway in a scratch home and working directory.
async fn run_claude_code(
    claude: &'static Path,
    gateway: &RunningGateway,
    scratch: &Scratch,
) -> std::process::Output {
    let base = gateway.base_url();
    let home = scratch.0.join("home");
    let work = scratch.0.join("work");
    tokio::task::spawn_blocking(move || {
        claude_code(claude, TIMEOUT_SECS, &home, &work, &base, "sk-ant-dummy")
            .args(["-p", PROMPT, "--allowedTools", "Bash"])
            .output()
            .expect("timeout or claude did not run")
    })
    .await
    .unwrap()
}

async fn round_trip(name: &str, calls: Calls, route_extra: &str) {
    let Some(claude) = peer("Claude Code", claude) else {
        return;
    };
    let backend = ScriptedServer::responding(model(calls)).await;
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"tests/no-characters-here\"\n{}",
        route(
            "local",
            "openai",
            &format!("{}/v1", backend.base),
            &format!("aliases = [\"claude-*\"]\n{route_extra}")
        )
    );
    let gateway = RunningGateway::start(&Config::from_toml(&text).unwrap(), &|_| None)
        .await
        .unwrap();
    let scratch = Scratch::new(name);
    let output = run_claude_code(claude, &gateway, &scratch).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let asked: Vec<String> = backend
        .requests()
        .iter()
        .map(|request| request.head.lines().next().unwrap_or_default().to_owned())
        .collect();
    assert!(
        output.status.success(),
        "Claude Code failed ({}):\nstdout: {stdout}\nstderr: {stderr}\nthe model was asked: {asked:?}",
        output.status
    );
    assert!(
        scratch.0.join("work").join(FILE).exists(),
        "no {FILE}: the Bash call never ran\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("Created created.txt."), "{stdout}");
    // The conversation went model → Bash call → result → model.
    let answered = (0..backend.requests().len())
        .map(|index| sent(&backend, index))
        .any(|body| {
            body["messages"].as_array().is_some_and(|messages| {
                messages.iter().any(|message| {
                    message["role"] == "tool"
                        || message["content"]
                            .as_str()
                            .is_some_and(|text| text.contains("<tool_response>"))
                })
            })
        });
    assert!(
        answered,
        "the Bash result never reached the model: {asked:?}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn claude_code_runs_a_bash_call_through_a_native_route() {
    round_trip("native", Calls::Native, "").await;
}

#[tokio::test]
async fn claude_code_runs_a_bash_call_through_a_prompted_hermes_route() {
    round_trip(
        "hermes",
        Calls::Hermes,
        "tool_calling = \"prompted\"\nformat = \"hermes\"",
    )
    .await;
}
