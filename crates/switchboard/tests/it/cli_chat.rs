//! `switchboard chat` as a character developer runs it, with standard input piped and a
//! scripted OpenAI-compatible backend on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use switchboard_testkit::{OpenAiScript, ScriptedServer};

pub(crate) fn characters() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../characters")
        .display()
        .to_string()
}

pub(crate) async fn chat(args: &[&str], input: &str) -> Output {
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
async fn a_chat_whose_every_reply_failed_exits_1() {
    let refused = || {
        switchboard_testkit::Reply::json(
            400,
            &serde_json::json!({"error": {"message": "context too long"}}),
        )
    };
    let server = ScriptedServer::start(vec![refused(), refused()]).await;
    let output = chat(
        &["narrator", "--backend", &server.base, "--model", "scripted"],
        "one\ntwo\n",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.matches("context too long").count(),
        2,
        "both errors are shown: {stderr}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_chat_with_nothing_sent_exits_0() {
    let server = ScriptedServer::start(Vec::new()).await;
    let output = chat(
        &["narrator", "--backend", &server.base, "--model", "scripted"],
        "/history\n",
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// llama.cpp's server closes its connection after each streamed answer while announcing
/// keep-alive: the second line goes out on that connection and must still get its reply.
#[tokio::test]
async fn a_server_that_closes_kept_connections_still_answers_every_line() {
    let answer = |text: &str| {
        OpenAiScript::new()
            .text(text)
            .finish("stop", 5, 2)
            .reply()
            .then_close_when_reused()
    };
    let server = ScriptedServer::start(vec![answer("First."), answer("Second.")]).await;
    let output = chat(
        &["narrator", "--backend", &server.base, "--model", "scripted"],
        "one\ntwo\n",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "First.\nSecond.\n");
    assert_eq!(
        server.requests().len(),
        3,
        "the second message, dropped on the kept connection, then again"
    );
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

/// Ctrl-C while a reply streams stops that reply, and the chat goes on with the next line.
#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_stops_the_reply_not_the_chat() {
    use std::io::{BufRead, BufReader};
    use std::sync::Arc;

    let gate = Arc::new(tokio::sync::Notify::new());
    let mut held = OpenAiScript::new()
        .text("Once upon")
        .text(" a time, forever.")
        .finish("stop", 1, 1)
        .reply();
    held.gate = Some((1, Arc::clone(&gate)));
    let server = ScriptedServer::start(vec![
        held,
        OpenAiScript::new()
            .text("Second answer.")
            .finish("stop", 1, 1)
            .reply(),
    ])
    .await;
    let base = server.base.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args([
                "chat",
                "narrator",
                "--backend",
                &base,
                "--model",
                "scripted",
                "--characters",
                &characters(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Tell me a long story\n").unwrap();
        // Wait for the first words: the rest of the reply is held back by the gate.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("Once upon") {
            let available = stdout.fill_buf().unwrap();
            assert!(
                !available.is_empty(),
                "the chat ended before its first words"
            );
            seen.extend_from_slice(available);
            let used = available.len();
            stdout.consume(used);
        }
        let interrupted = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(interrupted.success());
        std::thread::sleep(std::time::Duration::from_millis(300));
        stdin.write_all(b"And now?\n").unwrap();
        drop(stdin);
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
        seen.extend_from_slice(&rest);
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status, String::from_utf8_lossy(&seen).into_owned(), stderr)
    })
    .await
    .unwrap();
    gate.notify_one();
    let (status, stdout, stderr) = output;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(reply stopped)"), "{stderr}");
    assert!(
        !stdout.contains("forever"),
        "the stopped reply did not go on: {stdout}"
    );
    assert!(stdout.ends_with("Second answer.\n"), "{stdout}");
    assert_eq!(server.requests().len(), 2);
}
