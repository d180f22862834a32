//! The crate's own fixtures (tests/fixtures/own.jsonl): every family, with single, parallel,
//! no-argument, text-around, escaped/Unicode, nested, typed, reasoning, truncated and
//! malformed outputs. Each is parsed whole, at 1-character chunks, and (property test) at
//! random chunk boundaries; all must give the same, expected result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::Value;
use switchboard_parsers::{Family, ParseOptions, Parsed, collect, parser_with};
use switchboard_tools::ToolDefinition;

struct Case {
    id: String,
    family: Family,
    options: ParseOptions,
    raw: String,
    expected: Value,
    invalid: bool,
}

fn load() -> (Vec<ToolDefinition>, Vec<Case>) {
    let text = include_str!("../fixtures/own.jsonl");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let tools = serde_json::from_value(header["tools"].clone()).unwrap();
    let cases = lines
        .map(|line| {
            let case: Value = serde_json::from_str(line).unwrap();
            Case {
                id: case["id"].as_str().unwrap().to_owned(),
                family: Family::from_name(case["family"].as_str().unwrap()).unwrap(),
                options: ParseOptions {
                    starts_in_reasoning: case["starts_in_reasoning"].as_bool().unwrap(),
                },
                raw: case["raw"].as_str().unwrap().to_owned(),
                expected: case["expected"].clone(),
                invalid: case["invalid"].as_bool().unwrap_or(false),
            }
        })
        .collect();
    (tools, cases)
}

/// Parses `raw` cut at the given character offsets.
fn parse_split(case: &Case, tools: &[ToolDefinition], cuts: &[usize]) -> Parsed {
    let chars: Vec<(usize, char)> = case.raw.char_indices().collect();
    let mut bounds: Vec<usize> = cuts
        .iter()
        .filter_map(|cut| chars.get(*cut).map(|(at, _)| *at))
        .collect();
    bounds.push(case.raw.len());
    bounds.sort_unstable();
    bounds.dedup();
    let mut parser = parser_with(case.family, tools, case.options);
    let mut events = Vec::new();
    let mut start = 0;
    for end in bounds {
        events.extend(parser.feed(&case.raw[start..end]));
        start = end;
    }
    events.extend(parser.finish());
    collect(events)
}

fn check(case: &Case, parsed: &Parsed) {
    let calls: Vec<Value> = parsed
        .tool_calls
        .iter()
        .map(|call| serde_json::json!({"name": call.name, "arguments": call.arguments}))
        .collect();
    assert_eq!(
        Value::Array(calls),
        case.expected["tool_calls"],
        "{}: tool calls",
        case.id
    );
    assert!(
        parsed.tool_calls.iter().all(|call| call.known),
        "{}: offered tools flagged unknown",
        case.id
    );
    if case.invalid {
        assert!(
            !parsed.issues.is_empty(),
            "{}: the broken call was not reported",
            case.id
        );
        return;
    }
    assert_eq!(
        parsed.content.as_deref(),
        case.expected["content"].as_str(),
        "{}: content",
        case.id
    );
    assert_eq!(
        parsed.reasoning_content.as_deref(),
        case.expected["reasoning_content"].as_str(),
        "{}: reasoning",
        case.id
    );
    assert!(
        parsed.issues.is_empty(),
        "{}: unexpected issues {:?}",
        case.id,
        parsed.issues
    );
}

#[test]
fn every_family_has_every_kind_of_fixture() {
    let (_, cases) = load();
    for family in switchboard_parsers::ALL_FAMILIES {
        for kind in [
            "single",
            "parallel",
            "no-arguments",
            "text-before-call",
            "escapes-unicode",
            "nested",
            "truncated",
            "malformed",
        ] {
            let id = format!("{}/{kind}", family.name());
            assert!(
                cases.iter().any(|case| case.id == id),
                "missing fixture {id}"
            );
        }
    }
}

#[test]
fn whole_and_one_character_chunks_give_the_expected_result() {
    let (tools, cases) = load();
    for case in &cases {
        let whole = parse_split(case, &tools, &[]);
        check(case, &whole);
        let every: Vec<usize> = (1..case.raw.chars().count()).collect();
        assert_eq!(
            parse_split(case, &tools, &every),
            whole,
            "{}: 1-char chunks differ",
            case.id
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_chunk_boundaries_never_change_the_result(cuts in proptest::collection::vec(0usize..400, 0..40)) {
        let (tools, cases) = load();
        for case in &cases {
            let whole = parse_split(case, &tools, &[]);
            let split = parse_split(case, &tools, &cuts);
            prop_assert_eq!(&split, &whole, "{}", case.id);
        }
    }
}
