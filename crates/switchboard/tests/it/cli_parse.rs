//! `switchboard parse`, run as a user runs it: the final line is the same whole and at
//! 1-character chunks (for every family's markup), `--events` prints each parser event as a
//! JSON line before it, `--model` picks the family from a model name, `--tools` types bare
//! values, and an unknown format or model is a clear error with exit status 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use switchboard_parsers::{ALL_FAMILIES, render_tool_calls};
use switchboard_tools::ToolCall;

/// Runs `switchboard parse ARGS -` with `input` on standard input.
fn parse(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("parse")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails on its flags exits before reading: the pipe may already be closed.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last line of a successful run, as JSON.
fn result(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    let text = stdout(output);
    serde_json::from_str(text.lines().last().expect("a result line")).unwrap()
}

const HERMES: &str = "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"café \\\"best\\\" </tool_call>\"}}\n</tool_call>";

fn hermes_expected() -> Value {
    json!({
        "content": "Let me check.",
        "reasoning_content": "The user wants weather.",
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}},
            {"name": "search", "arguments": {"query": "café \"best\" </tool_call>"}}
        ]
    })
}

#[test]
fn whole_and_one_character_chunks_print_the_same_result() {
    let whole = parse(&["--format", "hermes"], HERMES);
    let chunked = parse(&["--format", "hermes", "--chunk", "1"], HERMES);
    assert_eq!(result(&whole), hermes_expected());
    assert_eq!(stdout(&whole), stdout(&chunked));
}

#[test]
fn every_family_gives_the_same_result_whole_and_chunked() {
    let calls = [
        ToolCall {
            id: "call_a".to_owned(),
            name: "get_weather".to_owned(),
            arguments: r#"{"city": "Zürich", "days": 3, "detail": {"hourly": true}}"#.to_owned(),
        },
        ToolCall {
            id: "call_b".to_owned(),
            name: "get_time".to_owned(),
            arguments: "{}".to_owned(),
        },
    ];
    for family in ALL_FAMILIES {
        let markup = render_tool_calls(*family, &calls);
        let whole = parse(&["--format", family.name()], &markup);
        let chunked = parse(&["--format", family.name(), "--chunk", "1"], &markup);
        let parsed = result(&whole);
        assert_eq!(stdout(&whole), stdout(&chunked), "{family}");
        let names: Vec<&str> = parsed["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| call["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_weather", "get_time"], "{family}: {parsed}");
        assert_eq!(
            parsed["tool_calls"][0]["arguments"]["detail"],
            json!({"hourly": true})
        );
    }
}

#[test]
fn events_are_json_lines_before_the_result() {
    for chunk in [None, Some("1"), Some("7")] {
        let mut args = vec!["--format", "hermes", "--events"];
        if let Some(size) = chunk {
            args.extend(["--chunk", size]);
        }
        let output = parse(&args, HERMES);
        assert_eq!(result(&output), hermes_expected());
        let text = stdout(&output);
        let lines: Vec<&str> = text.lines().collect();
        let events: Vec<Value> = lines[..lines.len() - 1]
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let kinds = |kind: &str| events.iter().filter(|event| event["event"] == kind).count();
        assert_eq!(kinds("tool_call_start"), 2, "{text}");
        assert_eq!(kinds("tool_call_end"), 2, "{text}");
        assert!(kinds("content") >= 1 && kinds("reasoning") >= 1, "{text}");
        assert_eq!(
            kinds("content") + kinds("reasoning") + 2 * 2 + kinds("tool_call_arguments"),
            events.len(),
            "only known events: {text}"
        );
        let arguments: String = events
            .iter()
            .filter(|event| event["event"] == "tool_call_arguments" && event["index"] == 1)
            .map(|event| event["delta"].as_str().unwrap())
            .collect();
        let arguments: Value = serde_json::from_str(&arguments).unwrap();
        assert_eq!(arguments, json!({"query": "café \"best\" </tool_call>"}));
        let content: String = events
            .iter()
            .filter(|event| event["event"] == "content")
            .map(|event| event["delta"].as_str().unwrap())
            .collect();
        assert_eq!(content, "Let me check.");
    }
}

const QWEN_XML: &str = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";

#[test]
fn a_model_name_picks_its_family() {
    let qwen35 = result(&parse(&["--model", "Qwen/Qwen3.5-9B"], QWEN_XML));
    assert_eq!(
        qwen35["tool_calls"],
        json!([{"name": "get_weather", "arguments": {"city": "Paris"}}])
    );
    // Qwen2.5 speaks hermes, so the same XML is a malformed call there, not a call.
    let qwen25 = parse(&["--model", "Qwen/Qwen2.5-7B-Instruct"], QWEN_XML);
    assert_eq!(result(&qwen25)["tool_calls"], json!([]));
    assert!(
        stderr(&qwen25).contains("not returned as a call"),
        "{}",
        stderr(&qwen25)
    );
    let harmony = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>";
    let gpt_oss = result(&parse(&["--model", "openai/gpt-oss-120b"], harmony));
    assert_eq!(gpt_oss["reasoning_content"], "Need weather.");
    assert_eq!(
        gpt_oss["tool_calls"],
        json!([{"name": "get_weather", "arguments": {"city": "Oslo"}}])
    );
}

#[test]
fn tools_type_bare_values_and_flag_unknown_names() {
    let path =
        std::env::temp_dir().join(format!("switchboard-cli-parse-{}.json", std::process::id()));
    let tools = json!([{"type": "function", "function": {"name": "set", "parameters": {
        "type": "object",
        "properties": {"code": {"type": "string"}, "count": {"type": "integer"}}
    }}}]);
    std::fs::write(&path, tools.to_string()).unwrap();
    let markup = "<tool_call>\n<function=set>\n<parameter=code>\n3\n</parameter>\n<parameter=count>\n3\n</parameter>\n</function>\n</tool_call><tool_call>\n<function=other>\n</function>\n</tool_call>";
    let output = parse(
        &["--format", "qwen3_coder", "--tools", path.to_str().unwrap()],
        markup,
    );
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        result(&output)["tool_calls"][0]["arguments"],
        json!({"code": "3", "count": 3})
    );
    assert!(
        stderr(&output).contains("call to other, which is not among the tools offered"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unknown_format_or_model_is_a_clear_error() {
    let output = parse(&["--format", "nope"], HERMES);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).is_empty());
    let message = stderr(&output);
    assert!(message.contains("unknown format \"nope\""), "{message}");
    assert!(
        message.contains("hermes") && message.contains("gemma4"),
        "{message}"
    );
    let output = parse(&["--model", "acme/unknown-7b"], HERMES);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message
            .contains("no tool-call format is known for model \"acme/unknown-7b\"; pass --format"),
        "{message}"
    );
    let output = parse(&[], HERMES);
    assert_eq!(output.status.code(), Some(2), "a family is required");
    assert!(stderr(&output).contains("--format"), "{}", stderr(&output));
}
