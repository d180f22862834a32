//! The Codex CLI itself (npm `@openai/codex`, pinned) as the gateway's client: `codex exec`
//! headless, with a scratch `CODEX_HOME` whose model provider is the gateway
//! (`wire_api = "responses"`), approvals off and a sandbox that lets it write in a scratch
//! directory, under a hard `timeout -k`. A scripted backend plays the model: it answers by
//! looking at each request (Codex may ask more than once, or ask other things), with a
//! shell call, an `apply_patch` custom-tool call, or a JavaScript `exec` call, natively or
//! in Hermes markup, and with a closing text once it sees the tool's result.
//!
//! The CLI is installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm`
//! when missing (`switchboard_testkit::npm_package`). Without npm these tests say SKIP and pass,
//! and fail under `SWITCHBOARD_REQUIRE_PEERS=1` (`switchboard_testkit::peers`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{
    Captured, OpenAiScript, Reply, ScriptedServer, message_text, npm_package,
};

const CODEX_VERSION: &str = "0.169.0";
/// The backend model of the route whose model answers in Hermes markup.
const HERMES_MODEL: &str = "scripted-hermes";
const SHELL_FILE: &str = "shell.txt";
const PATCH_FILE: &str = "patched.txt";
const JS_FILE: &str = "from-js.txt";

/// The `codex` launcher, installed when missing; `None` when npm is not there (or in a quick
/// run), after a SKIP line (see `switchboard_testkit::peers`).
fn codex() -> Option<PathBuf> {
    peer("Codex", || {
        npm_package("@openai/codex", CODEX_VERSION)
            .map(|prefix| prefix.join("node_modules/.bin/codex"))
    })
}

/// The tools the model was offered: native tool names, or the names in a prompted route's
/// system prompt.
fn offered(body: &Value, name: &str) -> bool {
    match body["tools"].as_array() {
        Some(tools) if !tools.is_empty() => {
            tools.iter().any(|tool| tool["function"]["name"] == name)
        }
        _ => body["messages"]
            .as_array()
            .and_then(|messages| messages.first())
            .is_some_and(|system| message_text(system).contains(&format!("\"{name}\""))),
    }
}

/// The call the scripted model makes for the task in the user's last message, as
/// (tool name, arguments), in whatever shell tool the request offers.
fn call_for(body: &Value, task: &str) -> Option<(String, Value)> {
    if task.contains("PATCH") {
        let patch = format!(
            "*** Begin Patch\n*** Add File: {PATCH_FILE}\n+from apply_patch\n*** End Patch\n"
        );
        return Some(("apply_patch".into(), json!({"input": patch})));
    }
    if task.contains("JAVASCRIPT") {
        let script = format!("await tools.exec_command({{cmd: \"echo from-js > {JS_FILE}\"}});");
        return Some(("exec".into(), json!({"input": script})));
    }
    if task.contains("SHELL") {
        let command = format!("echo shell-ok > {SHELL_FILE}");
        return [
            ("exec_command", json!({"cmd": command})),
            ("shell_command", json!({"command": command})),
            ("shell", json!({"command": ["bash", "-lc", command]})),
        ]
        .into_iter()
        .find(|(name, _)| offered(body, name))
        .map(|(name, arguments)| (name.to_owned(), arguments));
    }
    None
}

/// The scripted model: a call for the task, then a closing text once a tool result is back.
fn model(request: &Captured) -> Reply {
    let body = &request.body;
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let hermes = body["model"] == HERMES_MODEL;
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let answered = last["role"] == "tool"
        || (hermes && last["role"] == "user" && message_text(&last).contains("<tool_response>"));
    let task = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .map(message_text)
        .unwrap_or_default();
    let reply = match (answered, call_for(body, &task)) {
        (false, Some((name, arguments))) if offered(body, &name) => {
            if hermes {
                let markup = format!(
                    "<tool_call>\n{}\n</tool_call>",
                    json!({"name": name, "arguments": arguments})
                );
                OpenAiScript::new()
                    .text("On it.\n")
                    .text(&markup)
                    .finish("stop", 100, 20)
            } else {
                let arguments = arguments.to_string();
                let (head, tail) = arguments.split_at(5);
                OpenAiScript::new()
                    .tool_call("", &name, &[head, tail])
                    .finish("tool_calls", 100, 20)
            }
        }
        (false, Some((name, _))) => OpenAiScript::new()
            .text(&format!("I was not offered {name}."))
            .finish("stop", 10, 5),
        _ => OpenAiScript::new().text("All done.").finish("stop", 120, 3),
    };
    reply.reply()
}

/// A gateway with one route to the scripted model, reached through `alias`.
async fn gateway(
    backend: &ScriptedServer,
    backend_model: &str,
    settings: &str,
    alias: &str,
) -> switchboard_server::RunningGateway {
    let route = format!(
        "[[route]]\nname = \"local\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"{backend_model}\"\naliases = [\"{alias}\"]\n{settings}\n",
        backend.base
    );
    start("", &[route]).await
}

/// Runs `codex exec PROMPT` with `model` against the gateway in a scratch directory;
/// returns that directory after checking that Codex exited 0.
fn run_codex(codex: &Path, gateway: &str, model: &str, prompt: &str, name: &str) -> PathBuf {
    // One directory per case, emptied before each run so runs never pile up, and kept
    // after it for a look at what Codex did.
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("codex-{name}"));
    let _ = std::fs::remove_dir_all(&scratch);
    let home = scratch.join("codex-home");
    let work = scratch.join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"{model}\"\nmodel_provider = \"switchboard\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n\n\
             [model_providers.switchboard]\nname = \"Switchboard\"\nbase_url = \"{gateway}/v1\"\nwire_api = \"responses\"\n"
        ),
    )
    .unwrap();
    let output = Command::new("timeout")
        .args(["-k", "10", "180"])
        .arg(codex)
        .args(["exec", "--skip-git-repo-check", "-C"])
        .arg(&work)
        .arg(prompt)
        .env("CODEX_HOME", &home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "codex exec exited with {}:\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    work
}

/// The tool results the backend was sent back (tool messages, or Hermes tool responses).
fn results(backend: &ScriptedServer) -> Vec<String> {
    backend
        .requests()
        .iter()
        .filter_map(|request| {
            request.body["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .cloned()
        })
        .filter(|last| last["role"] == "tool" || message_text(last).contains("<tool_response>"))
        .map(|last| message_text(&last))
        .collect()
}

async fn shell_and_patch(backend_model: &str, settings: &str, name: &str) {
    let Some(codex) = codex() else { return };
    let backend = ScriptedServer::responding(model).await;
    let gateway = gateway(&backend, backend_model, settings, "gpt-5.5").await;
    let base = gateway.base_url();
    let launcher = codex.clone();
    let (shell_name, patch_name) = (format!("{name}-shell"), format!("{name}-patch"));
    let work = tokio::task::spawn_blocking(move || {
        run_codex(
            &launcher,
            &base,
            "gpt-5.5",
            "SHELL: write shell-ok into shell.txt with a command",
            &shell_name,
        )
    })
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(work.join(SHELL_FILE))
            .unwrap()
            .trim(),
        "shell-ok"
    );
    let base = gateway.base_url();
    let work = tokio::task::spawn_blocking(move || {
        run_codex(
            &codex,
            &base,
            "gpt-5.5",
            "PATCH: create patched.txt with apply_patch",
            &patch_name,
        )
    })
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(work.join(PATCH_FILE)).unwrap(),
        "from apply_patch\n"
    );
    let results = results(&backend);
    assert!(
        results.len() >= 2,
        "the model saw both tools' results: {results:?}"
    );
    assert!(
        results.iter().any(|result| result.contains("Success")),
        "apply_patch reported success: {results:?}"
    );
    for request in backend.requests() {
        assert_eq!(request.body["model"], backend_model);
    }
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_runs_a_shell_command_and_applies_a_patch_through_a_native_route() {
    shell_and_patch("scripted-native", "", "native").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_runs_a_shell_command_and_applies_a_patch_through_a_prompted_route() {
    shell_and_patch(
        HERMES_MODEL,
        "tool_calling = \"prompted\"\nformat = \"hermes\"",
        "hermes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_code_mode_gets_its_tools_through_additional_tools() {
    let Some(codex) = codex() else { return };
    let backend = ScriptedServer::responding(model).await;
    let gateway = gateway(&backend, "scripted-native", "", "gpt-6*").await;
    let base = gateway.base_url();
    let work = tokio::task::spawn_blocking(move || {
        run_codex(
            &codex,
            &base,
            "gpt-6-sol",
            "JAVASCRIPT: write from-js.txt from a script",
            "code-mode",
        )
    })
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(work.join(JS_FILE)).unwrap().trim(),
        "from-js"
    );
    let first = &backend.requests()[0].body;
    assert!(
        offered(first, "exec"),
        "exec came from additional_tools: {}",
        first["tools"]
    );
    gateway.stop().await.unwrap();
}
