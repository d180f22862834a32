//! Cost of the prompted-tool-calling render direction, which the gateway pays on every
//! prompted request: the two-call history turn in each family's markup, the results turn,
//! the system-prompt text for ten tools, and a call with a 100 KB string argument (per-byte
//! cost). Run with `cargo bench -p switchboard-parsers --bench render`; divan prints medians,
//! then a second table gives median and p99 per operation from raw samples.
#![allow(clippy::print_stdout)] // printing the figures is a bench's job

use divan::{Bencher, black_box};
use serde_json::json;
use switchboard_parsers::{
    ALL_FAMILIES, Family, ToolRequirement, render_tool_calls, render_tool_results, tool_prompt,
};
use switchboard_tools::{ToolCall, ToolDefinition};

fn main() {
    divan::main();
    percentiles();
}

fn turn() -> Vec<ToolCall> {
    vec![
        ToolCall {
            id: "call_a".to_owned(),
            name: "get_weather".to_owned(),
            arguments: r#"{"city": "Zürich", "unit": "c"}"#.to_owned(),
        },
        ToolCall {
            id: "call_b".to_owned(),
            name: "search".to_owned(),
            arguments: r#"{"query": "café \"best\"", "filters": {"tags": ["a", "b"], "max": 3}}"#
                .to_owned(),
        },
    ]
}

fn results() -> Vec<(ToolCall, String)> {
    turn()
        .into_iter()
        .zip([r#"{"temp": 20, "sky": "clear"}"#, "no results"])
        .map(|(call, result)| (call, result.to_owned()))
        .collect()
}

fn tools() -> Vec<ToolDefinition> {
    (0..10)
        .map(|index| {
            ToolDefinition::function(
                format!("tool_{index}"),
                "Does one thing well, described in a sentence of ordinary length.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "Where"},
                    "count": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["fast", "safe"]}
                }, "required": ["path"]}),
            )
        })
        .collect()
}

/// One call writing a ~100 KB file with quotes, escapes and non-ASCII text.
fn large_call() -> Vec<ToolCall> {
    let content = "Line with \"quotes\", café, 東京 and a </tool_call> inside.\n".repeat(1_700);
    vec![ToolCall {
        id: "call_w".to_owned(),
        name: "write_file".to_owned(),
        arguments: json!({"path": "notes.txt", "content": content}).to_string(),
    }]
}

#[divan::bench(args = ALL_FAMILIES)]
fn calls_two(bencher: Bencher, family: &Family) {
    let calls = turn();
    bencher.bench(|| render_tool_calls(*family, black_box(&calls)));
}

#[divan::bench(args = ALL_FAMILIES)]
fn results_two(bencher: Bencher, family: &Family) {
    let results = results();
    bencher.bench(|| render_tool_results(*family, black_box(&results)));
}

#[divan::bench(args = [Family::Hermes, Family::Qwen3Coder, Family::Json])]
fn prompt_ten_tools(bencher: Bencher, family: Family) {
    let tools = tools();
    bencher.bench(|| tool_prompt(family, black_box(&tools), &ToolRequirement::Auto, true));
}

#[divan::bench(args = [Family::Hermes, Family::Qwen3Coder])]
fn calls_100kb_argument(bencher: Bencher, family: Family) {
    let calls = large_call();
    bencher.bench(|| render_tool_calls(family, black_box(&calls)));
}

/// Median and p99 per operation from raw samples (divan reports no tail).
fn percentiles() {
    switchboard_bench::heading("render, per operation (median, p99)");
    let calls = turn();
    let results = results();
    let tools = tools();
    let large = large_call();
    for family in [
        Family::Hermes,
        Family::Qwen3Coder,
        Family::Gemma4,
        Family::KimiK3,
    ] {
        let summary = switchboard_bench::measure(5_000, 10, || {
            black_box(render_tool_calls(family, black_box(&calls)));
        });
        switchboard_bench::report(&format!("{family}: two calls"), &summary);
        let summary = switchboard_bench::measure(5_000, 10, || {
            black_box(render_tool_results(family, black_box(&results)));
        });
        switchboard_bench::report(&format!("{family}: two results"), &summary);
    }
    let summary = switchboard_bench::measure(2_000, 4, || {
        black_box(tool_prompt(
            Family::Hermes,
            black_box(&tools),
            &ToolRequirement::Auto,
            true,
        ));
    });
    switchboard_bench::report("hermes: prompt for ten tools", &summary);
    for family in [Family::Hermes, Family::Qwen3Coder] {
        let bytes = large[0].arguments.len() as f64;
        let summary = switchboard_bench::measure(500, 1, || {
            black_box(render_tool_calls(family, black_box(&large)));
        });
        switchboard_bench::report(&format!("{family}: one call, {bytes} B argument"), &summary);
        println!(
            "{:<48} {:.2} ns/byte median, {:.2} ns/byte p99",
            "",
            summary.median.as_nanos() as f64 / bytes,
            summary.p99.as_nanos() as f64 / bytes
        );
    }
}
