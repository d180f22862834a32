//! What the gateway adds to a call of an upstream MCP server's tool: `tools/call` of an
//! in-process echo server's tool straight to that server, and through the gateway's `/mcp`
//! (which checks the arguments, calls the server on its kept connection and relays the
//! result), alternately from one pooled client, so both see the same machine noise. Both in
//! the 2026-07-28 era, one JSON answer. Closed loop: each request is sent when the one
//! before it has answered. Prints median and p99 of each and what the gateway adds.
//!
//! `cargo bench -p switchboard-server --bench mcp_upstream -- [--samples N]`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

mod common;
#[path = "common/echo.rs"]
mod echo;

use echo::{tools_call, upstream};

use std::time::{Duration, Instant};

use switchboard_bench::{heading, report, report_added, summarize};
use switchboard_server::{Config, RunningGateway};

/// The allocator the `switchboard` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), common::Failure> {
    common::run(compare)
}

async fn compare(samples: usize) -> Result<(), common::Failure> {
    let url = upstream().await?;
    let text = format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nname = \"none\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:9\"\nmodel = \"none\"\n[[mcp_server]]\nname = \"fast\"\nurl = \"{url}\"\n"
    );
    let config = Config::from_toml(&text).map_err(|error| error.to_string())?;
    let gateway = RunningGateway::start(&config, &|_| None).await?;
    let client = reqwest::Client::new();
    let direct = tools_call(&client, &url, "echo");
    let through = tools_call(&client, &format!("{}/mcp", gateway.base_url()), "fast_echo");
    // The gateway connects to the server in the background: wait until it serves the tool.
    let deadline = Instant::now() + Duration::from_secs(30);
    let by_gateway = loop {
        match common::send(&through).await {
            Ok(answer) if answer.get("result").is_some() => break answer,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            other => return Err(format!("the gateway never served fast_echo: {other:?}")),
        }
    };
    let by_server = common::send(&direct).await?;
    // Both answer the same text, or the comparison means nothing.
    if by_server["result"]["content"] != by_gateway["result"]["content"] {
        return Err(format!("the answers differ: {by_server} / {by_gateway}"));
    }
    let mut times = common::alternate(samples, |which| {
        let request = [&direct, &through][which];
        async move { common::send(request).await.map(drop) }
    })
    .await?;
    let [direct_times, through_times] = &mut times;
    let (direct_summary, through_summary) = (summarize(direct_times), summarize(through_times));
    heading("tools/call of an in-process echo server's tool, one call at a time");
    report("straight to the server", &direct_summary);
    report("through the gateway's /mcp", &through_summary);
    report_added("added by the gateway", &direct_summary, &through_summary);
    gateway.stop().await.map_err(|error| error.to_string())
}
