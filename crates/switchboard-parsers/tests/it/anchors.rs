//! The bugs tool-calling servers keep shipping (see the project's anchor list), each pinned by
//! a test: markers inside JSON strings, `{}` for argument-less calls, parallel calls merged
//! when text and a marker share a delta, first arguments lost when streamed, unknown names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_parsers::{Family, ParseEvent, parse_whole, parser};
use switchboard_tools::ToolDefinition;

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::function(
            "echo",
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        ),
        ToolDefinition::function(
            "get_time",
            "time",
            json!({"type": "object", "properties": {}}),
        ),
        ToolDefinition::function(
            "add",
            "add",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
        ),
    ]
}

fn events(family: Family, chunks: &[&str]) -> Vec<ParseEvent> {
    let mut parser = parser(family, &tools());
    let mut events: Vec<ParseEvent> = chunks.iter().flat_map(|chunk| parser.feed(chunk)).collect();
    events.extend(parser.finish());
    events
}

fn char_chunks(text: &str) -> Vec<String> {
    text.chars().map(String::from).collect()
}

#[test]
fn a_closing_marker_inside_a_json_string_does_not_end_the_call() {
    let raw =
        r#"<tool_call>{"name": "echo", "arguments": {"text": "a </tool_call> b"}}</tool_call>"#;
    let parsed = parse_whole(Family::Hermes, &tools(), raw);
    assert_eq!(
        parsed.tool_calls[0].arguments,
        json!({"text": "a </tool_call> b"})
    );
    let raw = r#"[TOOL_CALLS]echo[ARGS]{"text": "[TOOL_CALLS]x[ARGS]{}"}"#;
    assert_eq!(
        parse_whole(Family::Mistral, &tools(), raw).tool_calls[0].arguments,
        json!({"text": "[TOOL_CALLS]x[ARGS]{}"})
    );
}

#[test]
fn a_call_without_arguments_streams_an_empty_object() {
    for (family, raw) in [
        (
            Family::Hermes,
            r#"<tool_call>{"name": "get_time"}</tool_call>"#,
        ),
        (
            Family::Qwen3Coder,
            "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        ),
        (Family::Glm47, "<tool_call>get_time</tool_call>"),
        (Family::Gemma4, "<|tool_call>call:get_time{}<tool_call|>"),
    ] {
        let deltas: String = events(family, &[raw])
            .into_iter()
            .filter_map(|event| match event {
                ParseEvent::ToolCallArguments { delta, .. } => Some(delta),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, "{}", "{family}");
    }
}

#[test]
fn content_and_two_calls_in_one_delta_stay_two_calls() {
    let raw = "Sure.<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call><tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 3, \"b\": 4}}</tool_call>";
    let starts: Vec<usize> = events(Family::Hermes, &[raw])
        .into_iter()
        .filter_map(|event| match event {
            ParseEvent::ToolCallStart { index, .. } => Some(index),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [0, 1]);
}

#[test]
fn streamed_argument_fragments_concatenate_to_the_arguments_at_one_character_chunks() {
    let raw = "[TOOL_CALLS]add[ARGS]{\"a\": 10, \"b\": 20}";
    let chunks = char_chunks(raw);
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let text: String = events(Family::Mistral, &chunks)
        .into_iter()
        .filter_map(|event| match event {
            ParseEvent::ToolCallArguments { index: 0, delta } => Some(delta),
            _ => None,
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"a": 10, "b": 20})
    );
}

#[test]
fn a_call_to_a_tool_not_offered_is_flagged_not_dropped() {
    let parsed = parse_whole(
        Family::Hermes,
        &tools(),
        r#"<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>"#,
    );
    assert_eq!(parsed.tool_calls.len(), 1);
    assert!(!parsed.tool_calls[0].known);
}

#[test]
fn content_is_held_back_only_while_it_could_start_a_marker() {
    let mut parser = parser(Family::Hermes, &tools());
    assert_eq!(
        parser.feed("Hello <tool"),
        [ParseEvent::Content {
            delta: "Hello ".to_owned()
        }]
    );
    assert_eq!(
        parser.feed("box>"),
        [ParseEvent::Content {
            delta: "<toolbox>".to_owned()
        }]
    );
}

#[test]
fn a_truncated_call_is_reported_and_never_returned() {
    let parsed = parse_whole(
        Family::Hermes,
        &tools(),
        r#"<tool_call>{"name": "echo", "arguments": {"text": "cut"#,
    );
    assert!(parsed.tool_calls.is_empty());
    assert_eq!(parsed.issues.len(), 1);
}
