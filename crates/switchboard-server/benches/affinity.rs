//! What `prefix_affinity` saves: the prompt tokens two real `llama-server` replicas evaluate
//! for the same multi-turn conversations, sent through a route over both, once balanced by
//! `least_busy` and once by `prefix_affinity`.
//!
//! Each server keeps its prompt cache (two slots, so it can hold two conversations at
//! once); the figure is the servers' own count of prompt tokens they evaluated (the sum of
//! `timings.prompt_n`, from `llamacpp:prompt_tokens_total` on their `/metrics`), before and
//! after each policy's run. Four conversations share a system prompt and differ from their
//! first user message on; their turns are interleaved, one request at a time, each turn
//! carrying the whole conversation so far, as chat clients send it. Answers are greedy and
//! short, so both runs send the same conversations.
//!
//! Needs issue 8's server: `eval "$(scripts/llama-server setup)"` and its three variables
//! exported, then `cargo bench -p switchboard-server --bench affinity -- [--turns N]`.
#![allow(clippy::print_stdout)] // printing the figures is what a benchmark is for

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::LlamaServer;

type Failure = String;

const CONVERSATIONS: usize = 4;
const SYSTEM: &str = "You are a patient assistant for a small bakery. Answer in one short sentence. \
The bakery opens at seven, closes at six, sells bread, pastries and cakes, takes orders by \
phone, and delivers within the town on weekdays. Prices: a loaf costs three euros, a \
croissant one euro fifty, a cake from twenty euros. Never invent other facts.";
const OPENINGS: [&str; CONVERSATIONS] = [
    "I would like to order a birthday cake for Saturday.",
    "Do you deliver bread to the office on Mondays?",
    "What time do you open tomorrow morning?",
    "How much are croissants if I buy a dozen?",
];
const FOLLOW_UPS: [&str; 5] = [
    "Can you tell me more?",
    "And what does it cost?",
    "Is that possible this week?",
    "Thanks. Anything else I should know?",
    "Please sum it up.",
];

fn main() -> Result<(), Failure> {
    let turns = std::env::args()
        .skip_while(|arg| arg != "--turns")
        .nth(1)
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(4)
        .clamp(2, FOLLOW_UPS.len() + 1);
    let (Some(first), Some(second)) =
        (LlamaServer::start_caching(2), LlamaServer::start_caching(2))
    else {
        println!(
            "affinity: no llama-server (LLAMA_SERVER_BIN, LLAMA_MODEL, LLAMA_TEMPLATE unset); nothing measured"
        );
        return Ok(());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let servers = [first.base_url().to_owned(), second.base_url().to_owned()];
    println!(
        "prompt tokens the servers evaluated: {CONVERSATIONS} conversations x {turns} turns, interleaved, through a route over 2 llama-server replicas (2 slots each, prompt cache on)"
    );
    println!(
        "{:<18} {:>14} {:>22} {:>10} {:>10}",
        "balance", "prompt tokens", "per replica", "requests", "seconds"
    );
    for balance in ["least_busy", "prefix_affinity"] {
        let run = runtime.block_on(measure(&servers, balance, turns))?;
        println!(
            "{balance:<18} {:>14} {:>22} {:>10} {:>10.1}",
            run.evaluated.iter().sum::<u64>(),
            format!("{:?}", run.evaluated),
            run.requests,
            run.elapsed.as_secs_f64()
        );
    }
    Ok(())
}

struct Run {
    evaluated: Vec<u64>,
    requests: usize,
    elapsed: Duration,
}

async fn measure(servers: &[String], balance: &str, turns: usize) -> Result<Run, Failure> {
    let urls: Vec<String> = servers
        .iter()
        .map(|server| format!("\"{server}/v1\""))
        .collect();
    let text = format!(
        "listen = \"127.0.0.1:0\"\n[[route]]\nname = \"local\"\nprovider = \"openai\"\nurls = [{}]\nmodel = \"{}\"\nbalance = \"{balance}\"\n",
        urls.join(", "),
        LlamaServer::MODEL
    );
    let config = Config::from_toml(&text).map_err(|error| error.to_string())?;
    let gateway = RunningGateway::start(&config, &|_| None).await?;
    let client = reqwest::Client::new();
    // Each run starts from servers that know none of these conversations: a marker opening
    // the system prompt keeps the two runs' caches apart.
    let system = format!("Session {balance}. {SYSTEM}");
    let mut conversations: Vec<Vec<Value>> = OPENINGS
        .iter()
        .map(|opening| {
            vec![
                json!({"role": "system", "content": system}),
                json!({"role": "user", "content": opening}),
            ]
        })
        .collect();
    let before = evaluated(&client, servers).await?;
    let started = Instant::now();
    let mut requests = 0;
    for turn in 0..turns {
        for conversation in &mut conversations {
            if turn > 0 {
                conversation.push(json!({"role": "user", "content": FOLLOW_UPS[turn - 1]}));
            }
            let answer: Value = client
                .post(format!("{}/v1/chat/completions", gateway.base_url()))
                .json(&json!({"model": "local", "messages": conversation, "max_tokens": 24, "temperature": 0}))
                .send()
                .await
                .map_err(|error| error.to_string())?
                .json()
                .await
                .map_err(|error| error.to_string())?;
            let reply = answer["choices"][0]["message"]["content"]
                .as_str()
                .ok_or_else(|| format!("no reply: {answer}"))?;
            conversation.push(json!({"role": "assistant", "content": reply}));
            requests += 1;
        }
    }
    let elapsed = started.elapsed();
    let after = evaluated(&client, servers).await?;
    gateway.stop().await.map_err(|error| error.to_string())?;
    Ok(Run {
        evaluated: after
            .iter()
            .zip(&before)
            .map(|(after, before)| after - before)
            .collect(),
        requests,
        elapsed,
    })
}

/// Each server's count of prompt tokens evaluated so far.
async fn evaluated(client: &reqwest::Client, servers: &[String]) -> Result<Vec<u64>, Failure> {
    let mut counts = Vec::new();
    for server in servers {
        let text = client
            .get(format!("{server}/metrics"))
            .send()
            .await
            .map_err(|error| error.to_string())?
            .text()
            .await
            .map_err(|error| error.to_string())?;
        let count = text
            .lines()
            .find_map(|line| line.strip_prefix("llamacpp:prompt_tokens_total "))
            .and_then(|value| value.trim().parse::<f64>().ok())
            .ok_or_else(|| format!("no llamacpp:prompt_tokens_total in {server}/metrics"))?;
        counts.push(count as u64);
    }
    Ok(counts)
}
