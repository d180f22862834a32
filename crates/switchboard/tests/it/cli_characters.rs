//! `switchboard check`, `call` and `prompt`, run as a character developer runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo_path(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// Runs the binary from the repository root, where `characters/` is the default directory.
fn switchboard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(repo_path(""))
        .env_remove("SWITCHBOARD_CHARACTERS")
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn check_lists_the_five_demonstration_characters() {
    let output = switchboard(&["check", "characters/"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    for row in [
        "Companion     companion.js     -",
        "Game Master   game-master.js   roll_dice, record_score, get_scoreboard",
        "Narrator      narrator.js      log_story_event",
        "Quiz Show     quiz-show.js     reveal_answer",
    ] {
        assert!(stdout.contains(row), "{row}\n{stdout}");
    }
    assert!(
        stdout.ends_with("characters/: 5 loaded, 0 rejected\n"),
        "{stdout}"
    );
}

#[test]
fn check_rejects_broken_files_one_by_one_with_every_reason() {
    let dir = repo_path("crates/switchboard-characters/tests/fixtures/broken");
    let output = switchboard(&["check", "--characters", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for expected in [
        "bad_schema.js\n  - TOOLS/0/function/name: \"bad-name\" does not match",
        "  - TOOLS/0/function/parameters/properties/level/type: \"strng\" is not a JSON Schema type",
        "duplicate_b.js\n  - CHARACTER_NAME: \"twin\" is also declared by duplicate_a.js",
        "missing_handler.js\n  - PromptGenerator: TOOLS declares log_story_event but PromptGenerator has no handleToolCall",
        "syntax_error.js\n  - syntax error at line 3, column ",
        "tools_not_array.js\n  - TOOLS: expected an array of tool definitions, got object",
        ": 2 loaded, 12 rejected",
    ] {
        assert!(stdout.contains(expected), "{expected}\n{stdout}");
    }
}

#[test]
fn call_prints_the_narrator_line_and_the_result() {
    let output = switchboard(&[
        "call",
        "narrator",
        "log_story_event",
        r#"{"event":"The hero fell","importance":"high"}"#,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Logged story event: The hero fell\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Narrator: [NARRATOR EVENT] [HIGH] The hero fell"),
        "{stderr}"
    );
}

#[test]
fn call_reports_errors_as_the_model_reads_them() {
    let output = switchboard(&["call", "Game Master", "roll_dice", r#"{"sides":7}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stdout).starts_with("Error: Invalid parameters - /sides"),
        "{}",
        text(&output.stdout)
    );
    let output = switchboard(&["call", "nobody", "anything"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("no character named \"nobody\""),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn call_stops_an_endless_tool_at_its_timeout() {
    let dir = repo_path("crates/switchboard-characters/tests/fixtures/runtime");
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .env("SWITCHBOARD_CHARACTERS", &dir)
        .args(["call", "toolbox", "spin"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stdout),
        "Error: Tool execution timed out (exceeded 100ms)\n"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn prompt_prints_a_new_conversations_system_prompt() {
    let output = switchboard(&["prompt", "quiz-show"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("Tonight's questions, in order:\n1. "),
        "{stdout}"
    );
    assert!(stdout.contains("\n5. "), "{stdout}");
}

#[test]
fn the_characters_flag_works_before_the_subcommand_too() {
    let dir = repo_path("crates/switchboard-characters/tests/fixtures/runtime");
    let dir = dir.to_str().unwrap();
    // `toolbox` exists only there, so each command proves it read the flag.
    for args in [
        ["--characters", dir, "call", "toolbox", "spin"],
        ["call", "--characters", dir, "toolbox", "spin"],
        ["call", "toolbox", "spin", "--characters", dir],
    ] {
        let output = switchboard(&args);
        assert_eq!(
            text(&output.stdout),
            "Error: Tool execution timed out (exceeded 100ms)\n",
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
    let output = switchboard(&["--characters", dir, "check"]);
    assert!(
        text(&output.stdout).contains(&format!("{dir}: ")),
        "{}",
        text(&output.stdout)
    );
    let output = switchboard(&["--characters", dir, "prompt", "toolbox"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}
