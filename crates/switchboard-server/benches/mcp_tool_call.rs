//! What serving a character's tool over MCP costs: the narrator's `log_story_event` called
//! through `/mcp` (the 2026-07-28 era, one JSON answer) and through `POST
//! /v1/characters/narrator/tools/log_story_event`, alternately on one gateway and one pooled
//! client, so both see the same machine noise. Closed loop: each request is sent when the
//! one before it has answered. Prints median and p99 of each and their ratios.
//!
//! `cargo bench -p switchboard-server --bench mcp_tool_call -- [--samples N]`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

mod common;

use std::time::Duration;

use serde_json::json;
use switchboard_bench::{Summary, heading, report, summarize};
use switchboard_server::{Config, RunningGateway};

/// The allocator the `switchboard` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHARACTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../characters");
const MODERN: &str = "2026-07-28";

fn main() -> Result<(), common::Failure> {
    common::run(compare)
}

async fn compare(samples: usize) -> Result<(), common::Failure> {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{CHARACTERS}\"\n[[route]]\nname = \"none\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:9\"\nmodel = \"none\"\n"
    );
    let config = Config::from_toml(&text).map_err(|error| error.to_string())?;
    let gateway = RunningGateway::start(&config, &|_| None).await?;
    let client = reqwest::Client::new();
    let api = client
        .post(format!(
            "{}/v1/characters/narrator/tools/log_story_event",
            gateway.base_url()
        ))
        .json(&json!({"arguments": {"event": "benchmarked"}}));
    let mcp = client
        .post(format!("{}/mcp", gateway.base_url()))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "narrator_log_story_event")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "narrator_log_story_event", "arguments": {"event": "benchmarked"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        );
    // Both answer the same text, or the comparison means nothing.
    let by_api = common::send(&api).await?;
    let by_mcp = common::send(&mcp).await?;
    if by_api["content"] != by_mcp["result"]["content"][0]["text"] {
        return Err(format!("the answers differ: {by_api} / {by_mcp}"));
    }
    let mut times = common::alternate(samples, |which| {
        let request = [&api, &mcp][which];
        async move { common::send(request).await.map(drop) }
    })
    .await?;
    let [api_times, mcp_times] = &mut times;
    let (api_summary, mcp_summary) = (summarize(api_times), summarize(mcp_times));
    heading("the narrator's log_story_event, one call at a time");
    report("POST /v1/characters/narrator/tools/…", &api_summary);
    report("tools/call over /mcp (2026-07-28, JSON)", &mcp_summary);
    println!(
        "{:<48} median {:>11.2}x  p99 {:>11.2}x",
        "/mcp relative to the characters API",
        ratio(&mcp_summary, &api_summary, |s| s.median),
        ratio(&mcp_summary, &api_summary, |s| s.p99)
    );
    gateway.stop().await.map_err(|error| error.to_string())
}

fn ratio(a: &Summary, b: &Summary, of: impl Fn(&Summary) -> Duration) -> f64 {
    of(a).as_secs_f64() / of(b).as_secs_f64().max(f64::MIN_POSITIVE)
}
