//! `switchboard chat` as a character developer runs it, with standard input piped and a
//! scripted OpenAI-compatible backend on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use switchboard_testkit::{OpenAiScript, ScriptedServer};

fn characters() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../characters")
        .display()
        .to_string()
}

async fn chat(args: &[&str], input: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .arg("chat")
        .args(args)
        .args(["--characters", &characters()])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OLLAMA_HOST")
        .env_remove("SWITCHBOARD_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        // A command that fails on its flags exits before reading: the pipe may already be closed.
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn piped_chat_streams_the_story_and_shows_the_tool() {
    let server = ScriptedServer::start(vec![
        OpenAiScript::new()
            .text("The bridge gives way. ")
            .tool_call(
                "call_1",
                "log_story_event",
                &["{\"event\":\"The hero fell\",", "\"importance\":\"high\"}"],
            )
            .finish("tool_calls", 50, 20)
            .reply(),
        OpenAiScript::new()
            .text("He falls into the dark.")
            .finish("stop", 80, 8)
            .reply(),
        OpenAiScript::new()
            .text("He wakes.")
            .finish("stop", 90, 3)
            .reply(),
    ])
    .await;
    let output = chat(
        &["narrator", "--backend", &server.base, "--model", "scripted"],
        "Cross the bridge\n/history\nAnd then?\n",
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.starts_with("The bridge gives way. He falls into the dark.\n"),
        "{stdout}"
    );
    assert!(stdout.contains("assistant -> log_story_event({\"event\":\"The hero fell\",\"importance\":\"high\"}) [call_1]"), "{stdout}");
    assert!(
        stdout.contains("tool [call_1]: Logged story event: The hero fell"),
        "{stdout}"
    );
    assert!(stdout.ends_with("He wakes.\n"), "{stdout}");
    assert!(
        stderr.contains("[NARRATOR EVENT] [HIGH] The hero fell"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[tool] log_story_event returned in"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\x1b') && !stdout.contains('\x1b'),
        "piped output is plain"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_backend_error_is_reported_and_the_chat_goes_on() {
    let server = ScriptedServer::start(vec![
        // 400 is never retried, so this reply is exactly what the first message gets.
        switchboard_testkit::Reply::json(
            400,
            &serde_json::json!({"error": {"message": "context too long"}}),
        ),
        OpenAiScript::new()
            .text("Back again.")
            .finish("stop", 1, 1)
            .reply(),
    ])
    .await;
    let output = chat(
        &["narrator", "--backend", &server.base, "--model", "scripted"],
        "one\ntwo\n",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|line| line.starts_with("error: the model's backend failed")
                && line.contains("context too long")),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "\nBack again.\n");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn no_backend_is_one_clear_line() {
    let output = chat(&["narrator", "--model", "m"], "hello\n").await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no backend: pass --backend URL"),
        "{stderr}"
    );
}
