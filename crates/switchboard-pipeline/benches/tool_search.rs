//! One tool search over 1,000 deferred tools, as the gateway runs it inside a request: the
//! index (each tool's searchable text and words) built for a new list of tools and kept
//! for the same list sent again, one regex search, one BM25 search, and the whole of a
//! search round's own work (index, search, the result the model reads), new and kept.
//! Prints median and p99 of each.
//!
//! `cargo bench -p switchboard-pipeline --bench tool_search`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

use serde_json::json;
use switchboard_bench::{heading, measure, report};
use switchboard_pipeline::tool_search::{SearchMode, ToolSearch, result_text};
use switchboard_tools::ToolDefinition;

const TOOLS: usize = 1000;
const SAMPLES: usize = 2000;

/// 1,000 tools in the shape MCP servers give them: a verb and a subject in the name, a
/// sentence of description, two described parameters.
fn tools() -> Vec<ToolDefinition> {
    let verbs = [
        "list", "get", "create", "update", "delete", "search", "archive", "count",
    ];
    let subjects = [
        "issue",
        "invoice",
        "customer",
        "weather",
        "calendar_event",
        "file",
        "message",
        "repository",
        "deployment",
        "ticket",
    ];
    (0..TOOLS)
        .map(|n| {
            let verb = verbs[n % verbs.len()];
            let subject = subjects[(n / verbs.len()) % subjects.len()];
            ToolDefinition::function(
                format!("{verb}_{subject}_{n}"),
                format!("{verb} a {subject} in workspace {n}, with its owner and labels"),
                json!({"type": "object", "properties": {
                    "id": {"type": "string", "description": format!("The {subject}'s id")},
                    "limit": {"type": "integer", "description": "How many to return at most"}
                }, "required": ["id"]}),
            )
        })
        .collect()
}

fn main() {
    let tools = tools();
    let regex = ToolSearch::new("search", SearchMode::Regex, None, tools.clone());
    let bm25 = ToolSearch::new("search", SearchMode::Bm25, None, tools.clone());
    // Each search must find something, or it measures nothing.
    assert!(
        regex
            .run(r#"{"pattern": "weather_\\d+7$"}"#)
            .is_ok_and(|found| !found.is_empty())
    );
    assert!(
        bm25.run(r#"{"query": "archive the weather"}"#)
            .is_ok_and(|found| !found.is_empty())
    );
    // A list the gateway has not seen: one description changed on every run.
    let mut changed = tools.clone();
    let mut runs = 0_u64;
    let mut new_list = move || {
        runs += 1;
        changed[0].function.description = Some(format!("list an issue, run {runs}"));
        changed.clone()
    };
    heading(&format!("tool search over {TOOLS} deferred tools"));
    report(
        "index (a new list: built)",
        &measure(200, 1, || {
            std::hint::black_box(ToolSearch::new(
                "search",
                SearchMode::Bm25,
                None,
                new_list(),
            ));
        }),
    );
    report(
        "index (the same list again: kept)",
        &measure(SAMPLES, 1, || {
            std::hint::black_box(ToolSearch::new(
                "search",
                SearchMode::Bm25,
                None,
                tools.clone(),
            ));
        }),
    );
    report(
        "regex search",
        &measure(SAMPLES, 1, || {
            let _ = std::hint::black_box(regex.run(r#"{"pattern": "weather_\\d+7$"}"#));
        }),
    );
    report(
        "bm25 search",
        &measure(SAMPLES, 1, || {
            let _ = std::hint::black_box(bm25.run(r#"{"query": "archive the weather"}"#));
        }),
    );
    let round = |tools: Vec<ToolDefinition>| {
        let search = ToolSearch::new("search", SearchMode::Bm25, None, tools);
        let found = search.run(r#"{"query": "archive the weather"}"#);
        std::hint::black_box(result_text(&found));
    };
    report(
        "search round, new list (index, bm25, result)",
        &measure(200, 1, || round(new_list())),
    );
    report(
        "search round, kept list (index, bm25, result)",
        &measure(SAMPLES, 1, || round(tools.clone())),
    );
}
