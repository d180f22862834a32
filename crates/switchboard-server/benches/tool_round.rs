//! The gateway's own time for one round of a tool it runs inside a request: the model
//! calls a tool, the gateway runs it on an MCP server, the model answers with the result.
//! Against instant in-process peers (a scripted OpenAI-format model and an MCP echo
//! server), the same work done by a client itself (the model, the MCP call, the model
//! again) alternates with one request through the gateway, so both see the same machine
//! noise. Prints median and p99 of each and what the gateway adds.
//!
//! `cargo bench -p switchboard-server --bench tool_round -- [--samples N]`
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

mod common;
#[path = "common/echo.rs"]
mod echo;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_bench::{heading, report, report_added, summarize};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer};

/// The allocator the `switchboard` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), common::Failure> {
    common::run(compare)
}

/// A model that calls `echo` until it has read a result, then says it.
async fn model() -> ScriptedServer {
    ScriptedServer::responding(|request: &Captured| {
        let last = request.body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .cloned()
            .unwrap_or(Value::Null);
        if last["role"] == "tool" {
            OpenAiScript::new()
                .text("It said: benchmarked")
                .finish("stop", 30, 4)
                .reply()
        } else {
            OpenAiScript::new()
                .tool_call("call_bench_1", "echo", &[r#"{"text": "benchmarked"}"#])
                .finish("tool_calls", 20, 6)
                .reply()
        }
    })
    .await
}

/// The body of a streamed answer, read whole.
async fn text(request: reqwest::RequestBuilder) -> Result<String, common::Failure> {
    let response = request.send().await.map_err(|error| error.to_string())?;
    response.text().await.map_err(|error| error.to_string())
}

/// The round done by a client itself: ask the model, call the tool, ask again.
async fn by_hand(client: &reqwest::Client, model: &str, mcp: &str) -> Result<(), common::Failure> {
    let ask = |messages: Value| {
        client
            .post(format!("{model}/v1/chat/completions"))
            .json(&json!({"model": "m", "stream": true, "messages": messages,
                "tools": [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]}))
    };
    let user = json!({"role": "user", "content": "echo it"});
    let first = text(ask(json!([user]))).await?;
    if !first.contains("call_bench_1") {
        return Err(format!("the model did not call: {first}"));
    }
    let call = common::send(&echo::tools_call(client, mcp, "echo")).await?;
    let result = call["result"]["content"][0]["text"].clone();
    let second = text(ask(json!([user,
        {"role": "assistant", "tool_calls": [{"id": "call_bench_1", "type": "function",
            "function": {"name": "echo", "arguments": "{\"text\": \"benchmarked\"}"}}]},
        {"role": "tool", "tool_call_id": "call_bench_1", "content": result}])))
    .await?;
    if !second.contains("It said") {
        return Err(format!("the model did not answer: {second}"));
    }
    Ok(())
}

async fn compare(samples: usize) -> Result<(), common::Failure> {
    let mcp = echo::upstream().await?;
    let backend = model().await;
    let text = format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nname = \"local\"\nprovider = \"openai\"\nurl = \"{}/v1\"\nmodel = \"m\"\n[[mcp_server]]\nname = \"fast\"\nurl = \"{mcp}\"\n",
        backend.base
    );
    let config = Config::from_toml(&text).map_err(|error| error.to_string())?;
    let gateway = RunningGateway::start(&config, &|_| None).await?;
    let client = reqwest::Client::new();
    let through = client
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .json(
            &json!({"model": "local", "messages": [{"role": "user", "content": "echo it"}],
            "tools": [{"type": "mcp", "server_label": "fast", "require_approval": "never"}]}),
        );
    // The gateway connects to the server in the background: wait until it runs the tool.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match common::send(&through).await {
            Ok(answer) if answer["choices"][0]["message"]["content"] == "It said: benchmarked" => {
                break;
            }
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            other => return Err(format!("the gateway never ran the round: {other:?}")),
        }
    }
    let mut times = common::alternate(samples, |which| {
        let (client, backend, mcp, through) = (&client, &backend.base, &mcp, &through);
        async move {
            if which == 0 {
                by_hand(client, backend, mcp).await
            } else {
                common::send(through).await.map(drop)
            }
        }
    })
    .await?;
    let [direct, gatewayed] = &mut times;
    let (direct_summary, through_summary) = (summarize(direct), summarize(gatewayed));
    heading("one gateway-run tool round (model, MCP call, model) against instant peers");
    report("done by the client itself", &direct_summary);
    report("one request through the gateway", &through_summary);
    report_added("added by the gateway", &direct_summary, &through_summary);
    gateway.stop().await.map_err(|error| error.to_string())
}
