//! What the closed-loop benches of two paths share: one JSON request sent and its answer
//! read, and the alternation that gives both paths the same machine noise.

use std::time::{Duration, Instant};

use serde_json::Value;

pub type Failure = String;

/// Sends a copy of `request` and reads its JSON answer; a failure status is an error.
pub async fn send(request: &reqwest::RequestBuilder) -> Result<Value, Failure> {
    let response = request
        .try_clone()
        .ok_or("the request cannot be sent twice")?
        .send()
        .await
        .map_err(|error| error.to_string())?;
    if !response.status().is_success() {
        return Err(format!(
            "{}: {}",
            response.status(),
            response.text().await.unwrap_or_default()
        ));
    }
    response.json().await.map_err(|error| error.to_string())
}

/// `samples` timings of each of two pieces of work, `work(0)` and `work(1)`, done one at a
/// time and alternately (each goes first every other round), after a tenth as many rounds
/// of warm-up.
pub async fn alternate<F: Future<Output = Result<(), Failure>>>(
    samples: usize,
    mut work: impl FnMut(usize) -> F,
) -> Result<[Vec<Duration>; 2], Failure> {
    let mut times = [Vec::with_capacity(samples), Vec::with_capacity(samples)];
    for round in 0..samples + samples / 10 {
        for which in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            work(which).await?;
            if round >= samples / 10 {
                times[which].push(started.elapsed());
            }
        }
    }
    Ok(times)
}

/// Runs `compare` with `--samples N` from the command line (3000 when absent) on two
/// worker threads.
pub fn run<F: std::future::Future<Output = Result<(), Failure>>>(
    compare: impl FnOnce(usize) -> F,
) -> Result<(), Failure> {
    let samples = samples(3000)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(compare(samples))
}

/// `--samples N` from the command line, else `default`.
fn samples(default: usize) -> Result<usize, Failure> {
    let mut args = std::env::args().skip(1);
    let mut samples = default;
    while let Some(arg) = args.next() {
        if arg == "--samples" {
            samples = args
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or("--samples takes a number")?;
        }
    }
    Ok(samples)
}
