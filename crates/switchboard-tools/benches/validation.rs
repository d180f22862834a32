//! Cost of validation: one narrator call's arguments (valid and invalid), and a whole
//! 10-tool list. Run with `cargo bench -p switchboard-tools`.

use divan::{Bencher, black_box};
use serde_json::{Value, json};
use switchboard_tools::{Profile, Toolset, validate_tools};

fn main() {
    divan::main();
    percentiles();
}

/// The same operations, sampled one by one for the median and p99 divan does not give.
fn percentiles() {
    let tools = toolset();
    let valid = r#"{"event":"The hero fell","importance":"high"}"#;
    let invalid = r#"{"event":"The hero fell","importance":"loud"}"#;
    switchboard_bench::heading("per call (median, p99)");
    let summary = switchboard_bench::measure(20_000, 10, || {
        black_box(
            tools
                .check_call("log_story_event", black_box(valid))
                .is_ok(),
        );
    });
    switchboard_bench::report("narrator call, valid", &summary);
    let summary = switchboard_bench::measure(20_000, 10, || {
        black_box(
            tools
                .check_call("log_story_event", black_box(invalid))
                .map_err(|error| error.to_string())
                .is_err(),
        );
    });
    switchboard_bench::report("narrator call, invalid (with message)", &summary);
    let list = ten_tools();
    let summary = switchboard_bench::measure(2_000, 1, || {
        black_box(validate_tools(black_box(&list), &Profile::character()).is_ok());
    });
    switchboard_bench::report("10-tool list, validated and compiled", &summary);
}

fn narrator() -> Value {
    json!({"type": "function", "function": {"name": "log_story_event",
        "description": "Log an important narrative event to the terminal for the developer to see",
        "parameters": {"type": "object", "properties": {
            "event": {"type": "string", "description": "The story event to log"},
            "importance": {"type": "string", "enum": ["low", "medium", "high"], "default": "medium",
                           "description": "Importance level of this event"}},
          "required": ["event"]}}})
}

fn toolset() -> Toolset {
    match Toolset::from_json(&json!([narrator()]), &Profile::character()) {
        Ok(toolset) => toolset,
        Err(problems) => unreachable!("the narrator tool is valid: {problems}"),
    }
}

#[divan::bench]
fn narrator_call_valid(bencher: Bencher) {
    let tools = toolset();
    bencher.bench(|| {
        tools
            .check_call(
                "log_story_event",
                black_box(r#"{"event":"The hero fell","importance":"high"}"#),
            )
            .is_ok()
    });
}

#[divan::bench]
fn narrator_call_valid_with_default(bencher: Bencher) {
    let tools = toolset();
    bencher.bench(|| {
        tools
            .check_call("log_story_event", black_box(r#"{"event":"The hero fell"}"#))
            .is_ok()
    });
}

#[divan::bench]
fn narrator_call_invalid(bencher: Bencher) {
    let tools = toolset();
    bencher.bench(|| {
        tools
            .check_call(
                "log_story_event",
                black_box(r#"{"event":"The hero fell","importance":"loud"}"#),
            )
            .map_err(|error| error.to_string())
    });
}

#[divan::bench]
fn ten_tool_definitions(bencher: Bencher) {
    let list = ten_tools();
    bencher
        .bench(|| validate_tools(black_box(&list), &Profile::character()).map(|tools| tools.len()));
}

fn ten_tools() -> Value {
    let list: Vec<Value> = (0..10)
        .map(|index| {
            let mut tool = narrator();
            tool["function"]["name"] = json!(format!("log_story_event_{index}"));
            tool
        })
        .collect();
    Value::Array(list)
}
