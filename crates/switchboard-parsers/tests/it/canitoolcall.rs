//! Replays the CanIToolCall corpus (raw outputs from real models and engine test suites, each
//! with the calls it means) through every parser, whole and at 1-character chunks, and prints
//! the pass rate per family. The corpus is not part of this repository: without
//! `../shared/oracles/canitoolcall` next to the checkout the test skips with a note.
//! Set `CANITOOLCALL_VERBOSE=1` to see every failing fixture.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard_parsers::{Family, ParseOptions, Parsed, collect, family_for_model, parser_with};
use switchboard_tools::ToolDefinition;

fn corpus() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracles/canitoolcall");
    dir.join("fixtures").is_dir().then_some(dir)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Pass,
    Soft,
    Fail,
}

struct Fixture {
    id: String,
    family: Family,
    options: ParseOptions,
    tools: Vec<ToolDefinition>,
    raw: String,
    expected: Value,
    expected_error: Option<Value>,
}

fn load(dir: &Path) -> Vec<Fixture> {
    let mut fixtures = Vec::new();
    let mut families: Vec<PathBuf> = std::fs::read_dir(dir.join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    families.sort();
    for family_dir in families.iter().filter(|path| path.is_dir()) {
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(family_dir.join("family.json")).unwrap())
                .unwrap();
        let mut files: Vec<PathBuf> = std::fs::read_dir(family_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        files.sort();
        for file in files {
            for line in std::fs::read_to_string(&file)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
            {
                let fixture: Value = serde_json::from_str(line).unwrap();
                let model = fixture["models"][0].as_str().unwrap();
                let family =
                    family_for_model(model).unwrap_or_else(|| panic!("no family for {model}"));
                let prompt = fixture["generation_prompt"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| {
                        let models = meta["reference_models"].as_array().unwrap();
                        let reference = models
                            .iter()
                            .find(|m| m["repo"] == model)
                            .unwrap_or(&models[0]);
                        reference["default_generation_prompt"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned()
                    });
                fixtures.push(Fixture {
                    id: fixture["id"].as_str().unwrap().to_owned(),
                    family,
                    options: ParseOptions::for_prompt(family, &prompt),
                    tools: serde_json::from_value(fixture["tools"].clone()).unwrap(),
                    raw: fixture["raw_output"].as_str().unwrap().to_owned(),
                    expected: fixture["expected"].clone(),
                    expected_error: fixture.get("expected_error").cloned(),
                });
            }
        }
    }
    fixtures
}

fn run(fixture: &Fixture, chunk_chars: Option<usize>) -> Parsed {
    let mut parser = parser_with(fixture.family, &fixture.tools, fixture.options);
    let mut events = Vec::new();
    match chunk_chars {
        None => events.extend(parser.feed(&fixture.raw)),
        Some(size) => {
            let chars: Vec<char> = fixture.raw.chars().collect();
            for piece in chars.chunks(size) {
                events.extend(parser.feed(&piece.iter().collect::<String>()));
            }
        }
    }
    events.extend(parser.finish());
    collect(events)
}

/// JSON equality where `1` and `1.0` are the same number, as the corpus specifies.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| same_json(value, other)))
        }
        _ => a == b,
    }
}

fn text_field(value: &Value) -> Option<String> {
    value
        .as_str()
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

fn soft(text: &Option<String>) -> Option<String> {
    text.as_deref()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

fn judge(fixture: &Fixture, parsed: &Parsed) -> Verdict {
    if let Some(error) = &fixture.expected_error {
        let accept: Vec<&str> = error["accept"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if !parsed.tool_calls.is_empty() {
            return Verdict::Fail;
        }
        if accept.contains(&"no_tool_calls") {
            return Verdict::Pass;
        }
        return match parsed.content.as_deref() {
            Some(content) if content == fixture.raw => Verdict::Pass,
            Some(content) if content.trim() == fixture.raw.trim() => Verdict::Soft,
            _ => Verdict::Fail,
        };
    }
    let expected = &fixture.expected;
    let calls = expected["tool_calls"].as_array().unwrap();
    let calls_ok = calls.len() == parsed.tool_calls.len()
        && calls.iter().zip(&parsed.tool_calls).all(|(want, got)| {
            want["name"] == got.name.as_str() && same_json(&want["arguments"], &got.arguments)
        });
    if !calls_ok {
        return Verdict::Fail;
    }
    let content = text_field(&expected["content"]);
    let reasoning = text_field(&expected["reasoning_content"]);
    if content == parsed.content && reasoning == parsed.reasoning_content {
        Verdict::Pass
    } else if soft(&content) == soft(&parsed.content)
        && soft(&reasoning) == soft(&parsed.reasoning_content)
    {
        Verdict::Soft
    } else {
        Verdict::Fail
    }
}

/// Fixtures known to fail, each for a reason outside a text parser's reach: the value holds
/// the literal marker text, which only token ids could tell from the real marker.
const KNOWN_FAILURES: &[&str] = &["kimi/k3-control-marker-text-in-value"];

#[test]
fn canitoolcall_corpus() {
    let Some(dir) = corpus() else {
        println!("note: ../shared/oracles/canitoolcall not found; CanIToolCall runner skipped");
        return;
    };
    let verbose = std::env::var_os("CANITOOLCALL_VERBOSE").is_some();
    let fixtures = load(&dir);
    // family -> [whole pass, whole soft, char pass, char soft, total]
    let mut table: BTreeMap<String, [usize; 5]> = BTreeMap::new();
    let mut split_differences = Vec::new();
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let whole = run(fixture, None);
        let chars = run(fixture, Some(1));
        let row = table
            .entry(fixture.id.split('/').next().unwrap().to_owned())
            .or_default();
        row[4] += 1;
        let verdicts = [judge(fixture, &whole), judge(fixture, &chars)];
        for (at, verdict) in verdicts.iter().enumerate() {
            match verdict {
                Verdict::Pass => row[at * 2] += 1,
                Verdict::Soft => row[at * 2 + 1] += 1,
                Verdict::Fail => {}
            }
        }
        if verdicts.contains(&Verdict::Fail) {
            failures.push(fixture.id.clone());
        }
        if whole != chars {
            split_differences.push(fixture.id.clone());
        }
        if verbose && (verdicts[0] != Verdict::Pass || whole != chars) {
            println!("--- {} [{:?}] {:?}", fixture.id, fixture.family, verdicts);
            println!("raw:      {:?}", fixture.raw);
            if let Some(error) = &fixture.expected_error {
                println!("expected error: {error}");
            } else {
                println!("expected: {}", fixture.expected);
            }
            println!("whole:    {}", serde_json::to_string(&whole).unwrap());
            if whole != chars {
                println!("chars:    {}", serde_json::to_string(&chars).unwrap());
            }
        }
    }
    println!(
        "{:<14} {:>6} {:>22} {:>22}",
        "family", "total", "whole pass (+soft)", "1-char pass (+soft)"
    );
    let mut totals = [0usize; 5];
    for (family, row) in &table {
        println!(
            "{family:<14} {:>6} {:>15} (+{:>3}) {:>15} (+{:>3})",
            row[4], row[0], row[1], row[2], row[3]
        );
        for (total, value) in totals.iter_mut().zip(row) {
            *total += value;
        }
    }
    println!(
        "{:<14} {:>6} {:>15} (+{:>3}) {:>15} (+{:>3})",
        "all", totals[4], totals[0], totals[1], totals[2], totals[3]
    );
    assert!(
        split_differences.is_empty(),
        "streamed at 1 char differs from whole for {split_differences:?}"
    );
    assert_eq!(
        failures, KNOWN_FAILURES,
        "fixtures failing, whole or at 1-char chunks (CANITOOLCALL_VERBOSE=1 shows why)"
    );
}
