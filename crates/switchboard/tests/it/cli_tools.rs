//! `switchboard validate` and `switchboard check-args`, run as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn switchboard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .unwrap()
}

fn repo_file(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
        .display()
        .to_string()
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn validate_accepts_the_narrator_tool() {
    let output = switchboard(&["validate", &repo_file("examples/narrator-tools.json")]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "1 tool OK: log_story_event\n");
}

#[test]
fn validate_reports_all_six_mistakes_with_their_paths() {
    let output = switchboard(&["validate", &fixture("six-mistakes.json")]);
    assert_eq!(output.status.code(), Some(1));
    let lines: Vec<String> = stdout(&output).lines().map(str::to_owned).collect();
    let expected = [
        "/0/type: must be \"function\"",
        "/1/function/name: \"record score\" does not match",
        "/2/function/description: must not be empty",
        "/3/function/parameters/properties/level/type: \"strng\" is not a JSON Schema type",
        "/4/function/parameters/properties/choice/enum: 11 values, at most 10 allowed",
        "/5/function/parameters/properties/key/$ref: $ref is not allowed",
    ];
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    for (line, start) in lines.iter().zip(expected) {
        assert!(
            line.starts_with(start),
            "{line:?} should start with {start:?}"
        );
    }
}

#[test]
fn validate_api_profile_allows_refs_and_no_description() {
    let output = switchboard(&[
        "validate",
        "--profile",
        "api",
        &fixture("six-mistakes.json"),
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        !text.contains("$ref") && !text.contains("/2/function/description"),
        "{text}"
    );
    assert!(text.contains("/2/function/parameters: missing"), "{text}");
}

#[test]
fn check_args_names_the_bad_value_and_the_allowed_ones() {
    let narrator = repo_file("examples/narrator-tools.json");
    let output = switchboard(&[
        "check-args",
        &narrator,
        "log_story_event",
        r#"{"event": "x", "importance": "loud"}"#,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "Error: Invalid parameters - /importance: \"loud\" is not one of the allowed values: \"low\", \"medium\", \"high\"\n"
    );
}

#[test]
fn check_args_fills_defaults() {
    let narrator = repo_file("examples/narrator-tools.json");
    let output = switchboard(&[
        "check-args",
        &narrator,
        "log_story_event",
        r#"{"event": "x"}"#,
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "{\"event\":\"x\",\"importance\":\"medium\"}\n"
    );
}

#[test]
fn cli_errors_name_the_file_and_exit_2() {
    let output = switchboard(&["validate", "/nonexistent/tools.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/tools.json"));

    let not_json = fixture("not-json.txt");
    let output = switchboard(&["check-args", &not_json, "x", "{}"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not-json.txt is not valid JSON") && stderr.contains("line 1"),
        "{stderr}"
    );
}
