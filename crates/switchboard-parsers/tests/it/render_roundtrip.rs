//! The round-trip property of prompted tool calling: for every family, the markup
//! `render_tool_calls` writes parses back (whole and one character at a time) into exactly
//! the calls it was given, names and argument values, with no content, reasoning or issues.
//! Inputs cover Unicode, quotes, backslashes, control characters, nested objects and arrays,
//! and every family's marker text inside string values and nested keys. Values a family
//! documents it cannot carry are set aside by `carries`, which mirrors those doc comments.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use switchboard_parsers::{Family, collect, parse_whole, parser, render_tool_calls};
use switchboard_tools::{ToolCall, ToolDefinition};

/// Marker text of every family, and characters that need escaping somewhere.
const MARKUP: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<function=f>",
    "</function>",
    "<parameter=k>",
    "</parameter>",
    "{\"name\": \"f\", \"arguments\": {}}",
    "<|python_tag|>",
    "<|eom_id|>",
    "[f(a=1)]",
    "<|python_start|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "[/THINK]",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    "<｜end▁of▁sentence｜>",
    "```json",
    "```",
    "<｜DSML｜function_calls>",
    "<｜DSML｜invoke name=\"",
    "</｜DSML｜invoke>",
    "<｜DSML｜parameter name=\"",
    "</｜DSML｜parameter>",
    "</｜DSML｜ parameter>",
    "</｜DSML｜tool_calls>",
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|constrain|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "<|open|>",
    "<|close|>",
    "<|sep|>",
    "<|end_of_msg|>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "<|channel>",
    "<channel|>",
    "<turn|>",
    "\"",
    "'",
    "\\",
    "\\n",
    "\n",
    "\r\n",
    "\t",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "&quot;",
    "&amp;",
    " ",
];

fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => "\\PC{1,6}",
        1 => any::<char>().prop_map(String::from),
        3 => prop::sample::select(MARKUP).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

fn identifier() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,12}"
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        // Hundredths parse exactly, whatever the float parser.
        (-1_000_000i32..1_000_000).prop_map(|n| json!(f64::from(n) / 100.0)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![identifier(), text()], inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// One to three calls with distinct names (so each tool's schema can type its values) that
/// follow the API profile's name pattern.
fn calls() -> impl Strategy<Value = Vec<(String, Map<String, Value>)>> {
    // Top-level strings are where most markup meets its limits: favour them.
    let member = prop_oneof![2 => text().prop_map(Value::String), 1 => value()];
    let arguments = prop::collection::vec((identifier(), member), 0..5)
        .prop_map(|members| members.into_iter().collect::<Map<String, Value>>());
    (
        prop::collection::btree_set("[a-zA-Z0-9_-]{1,24}", 1..4),
        prop::collection::vec(arguments, 3),
    )
        .prop_map(|(names, arguments)| names.into_iter().zip(arguments).collect())
}

/// Each call's tool, with a schema giving every argument the type it has, as a request's
/// tools do.
fn tools(calls: &[(String, Map<String, Value>)]) -> Vec<ToolDefinition> {
    calls
        .iter()
        .map(|(name, arguments)| {
            let properties: Map<String, Value> = arguments
                .iter()
                .map(|(key, value)| {
                    let kind = match value {
                        Value::Null => "null",
                        Value::Bool(_) => "boolean",
                        Value::Number(number) if number.is_f64() => "number",
                        Value::Number(_) => "integer",
                        Value::String(_) => "string",
                        Value::Array(_) => "array",
                        Value::Object(_) => "object",
                    };
                    (key.clone(), json!({"type": kind}))
                })
                .collect();
            ToolDefinition::function(
                name.clone(),
                "test tool",
                json!({"type": "object", "properties": properties}),
            )
        })
        .collect()
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                out.push(key);
                strings(item, out);
            }
        }
        _ => {}
    }
}

/// Whether the family's markup can carry these calls, per the limits its renderer documents.
fn carries(family: Family, calls: &[(String, Map<String, Value>)]) -> bool {
    let top_strings = || {
        calls
            .iter()
            .flat_map(|(_, arguments)| arguments.values())
            .filter_map(Value::as_str)
    };
    match family {
        Family::Pythonic => calls
            .iter()
            .all(|(name, _)| !name.starts_with(|c: char| c.is_ascii_digit())),
        Family::Gemma4 => calls.iter().all(|(_, arguments)| {
            let object = Value::Object(arguments.clone());
            let mut all = Vec::new();
            strings(&object, &mut all);
            all.iter().all(|text| !text.contains("<|\"|>"))
        }),
        Family::Qwen3Coder => top_strings().all(|text| {
            let lines = format!("\n{text}");
            ["\n</parameter>", "\n<parameter=", "\n</function>"]
                .iter()
                .all(|marker| !lines.contains(marker))
        }),
        Family::Glm45 | Family::Glm47 => top_strings().all(|text| {
            !text.contains("</arg_value>")
                && text.match_indices("</tool_call>").all(|(at, marker)| {
                    !text[at + marker.len()..]
                        .trim_start()
                        .starts_with("<tool_call>")
                })
        }),
        _ => true,
    }
}

fn round_trip(family: Family, calls: &[(String, Map<String, Value>)]) -> Result<(), TestCaseError> {
    let given: Vec<ToolCall> = calls
        .iter()
        .enumerate()
        .map(|(index, (name, arguments))| ToolCall {
            id: format!("call_{index}"),
            name: name.clone(),
            arguments: serde_json::to_string(arguments).unwrap(),
        })
        .collect();
    let expected: Vec<(String, Value)> = given
        .iter()
        .map(|call| {
            (
                call.name.clone(),
                serde_json::from_str(&call.arguments).unwrap(),
            )
        })
        .collect();
    let tools = tools(calls);
    let text = render_tool_calls(family, &given);
    let whole = parse_whole(family, &tools, &text);
    prop_assert_eq!(&whole.content, &None, "markup: {}", text);
    prop_assert_eq!(&whole.reasoning_content, &None, "markup: {}", text);
    prop_assert!(
        whole.issues.is_empty(),
        "issues {:?} in {}",
        whole.issues,
        text
    );
    prop_assert!(whole.tool_calls.iter().all(|call| call.known));
    let got: Vec<(String, Value)> = whole
        .tool_calls
        .iter()
        .map(|call| (call.name.clone(), call.arguments.clone()))
        .collect();
    prop_assert_eq!(&got, &expected, "markup: {}", text);
    let mut streaming = parser(family, &tools);
    let mut events = Vec::new();
    for (at, ch) in text.char_indices() {
        events.extend(streaming.feed(&text[at..at + ch.len_utf8()]));
    }
    events.extend(streaming.finish());
    prop_assert_eq!(collect(events), whole);
    Ok(())
}

macro_rules! round_trips {
    ($($test:ident => $family:expr,)*) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: 192, max_global_rejects: 4096, ..ProptestConfig::default() })]
            $(
                #[test]
                fn $test(calls in calls()) {
                    prop_assume!(carries($family, &calls));
                    round_trip($family, &calls)?;
                }
            )*
        }
    };
}

round_trips! {
    hermes => Family::Hermes,
    qwen3_coder => Family::Qwen3Coder,
    llama3_json => Family::Llama3Json,
    pythonic => Family::Pythonic,
    mistral => Family::Mistral,
    deepseek_v3 => Family::DeepseekV3,
    deepseek_v31 => Family::DeepseekV31,
    deepseek_v32 => Family::DeepseekV32,
    deepseek_v4 => Family::DeepseekV4,
    deepseek_v41 => Family::DeepseekV41,
    gpt_oss => Family::GptOss,
    kimi_k2 => Family::KimiK2,
    kimi_k3 => Family::KimiK3,
    glm45 => Family::Glm45,
    glm47 => Family::Glm47,
    gemma4 => Family::Gemma4,
    json => Family::Json,
}

/// The families whose limits `carries` sets aside really do hit them, so the limits are
/// documented facts and not a filter hiding bugs.
#[test]
fn documented_limits_are_real() {
    let one = |name: &str, key: &str, value: Value| {
        vec![(
            name.to_owned(),
            [(key.to_owned(), value)]
                .into_iter()
                .collect::<Map<String, Value>>(),
        )]
    };
    let cases = [
        (Family::Pythonic, one("1st", "a", json!(1))),
        (Family::Gemma4, one("f", "a", json!("x<|\"|>y"))),
        (
            Family::Qwen3Coder,
            one("f", "a", json!("x\n</parameter>\ny")),
        ),
        (Family::Glm47, one("f", "a", json!("x</arg_value>y"))),
        (
            Family::Glm45,
            one("f", "a", json!("x</tool_call> <tool_call>y")),
        ),
    ];
    for (family, calls) in cases {
        assert!(!carries(family, &calls));
        assert!(
            round_trip(family, &calls).is_err(),
            "{family} carried {calls:?}"
        );
    }
}
