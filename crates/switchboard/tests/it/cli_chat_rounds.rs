//! `switchboard chat` runs the gateway's tool loop for a character: as many tool rounds as
//! the route allows (`max_tool_rounds`: the gateway's 10 by default, or
//! `--max-tool-rounds`), then one request without tools so that the model answers in
//! words. The terminal's own loop stopped at 4.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use switchboard_testkit::{OpenAiScript, Reply, ScriptedServer};

use crate::cli_chat::chat;

/// An answer that logs story event `n`.
fn calling(n: usize) -> Reply {
    OpenAiScript::new()
        .tool_call(
            &format!("call_{n}"),
            "log_story_event",
            &[&format!("{{\"event\":\"step {n}\"}}")],
        )
        .finish("tool_calls", 10, 5)
        .reply()
}

/// Runs one message and `/history` through a model that calls the tool `rounds` times and
/// then answers; checks every round ran and was kept, and returns whether each request
/// offered the model tools.
async fn chat_through_rounds(flags: &[&str], rounds: usize) -> Vec<bool> {
    let mut replies: Vec<Reply> = (1..=rounds).map(calling).collect();
    replies.push(
        OpenAiScript::new()
            .text("The end.")
            .finish("stop", 10, 2)
            .reply(),
    );
    let server = ScriptedServer::start(replies).await;
    let mut args = vec!["narrator", "--backend", &server.base, "--model", "scripted"];
    args.extend_from_slice(flags);
    let output = chat(&args, "Walk on\n/history\n").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.starts_with("The end.\n"), "{stdout}");
    assert_eq!(
        stderr.matches("[tool] log_story_event returned").count(),
        rounds,
        "{stderr}"
    );
    // The history keeps each round whole: the call, then its result.
    for n in 1..=rounds {
        let call = format!(
            "assistant -> log_story_event({{\"event\":\"step {n}\"}}) [call_{n}]\ntool [call_{n}]: Logged story event: step {n}\n"
        );
        assert!(stdout.contains(&call), "{stdout}");
    }
    assert!(stdout.ends_with("assistant: The end.\n"), "{stdout}");
    server
        .requests()
        .iter()
        .map(|request| {
            request
                .body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|tools| !tools.is_empty())
        })
        .collect()
}

#[tokio::test]
async fn a_character_gets_the_routes_ten_tool_rounds_in_the_terminal() {
    let offered = chat_through_rounds(&[], 10).await;
    let mut expected = vec![true; 10];
    expected.push(false);
    assert_eq!(offered, expected);
}

#[tokio::test]
async fn max_tool_rounds_sets_the_routes_bound() {
    let offered = chat_through_rounds(&["--max-tool-rounds", "6"], 6).await;
    let mut expected = vec![true; 6];
    expected.push(false);
    assert_eq!(offered, expected);
}

#[tokio::test]
async fn max_tool_rounds_out_of_bounds_is_refused() {
    let output = chat(
        &[
            "narrator",
            "--backend",
            "http://127.0.0.1:1/v1",
            "--model",
            "m",
            "--max-tool-rounds",
            "0",
        ],
        "",
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--max-tool-rounds"), "{stderr}");
}
