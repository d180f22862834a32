//! Latency percentiles for benchmarks. divan reports medians but no tail; the project's
//! figures are median and p99 on a shared, noisy machine, so each bench also takes raw
//! samples here and prints both, side by side with whatever it is compared against.
//!
//! It must not know what is measured: benches bring their own paths and only report here.
#![allow(clippy::print_stdout)] // printing the table is this crate's job

use std::time::{Duration, Instant};

/// Percentiles of one measured operation.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub median: Duration,
    pub p99: Duration,
    pub samples: usize,
}

/// Times `samples` runs of `operation`, each run being `batch` calls (use a batch above 1
/// when one call is shorter than the timer's resolution); returns per-call figures.
pub fn measure(samples: usize, batch: u32, mut operation: impl FnMut()) -> Summary {
    let batch = batch.max(1);
    for _ in 0..samples.min(100) {
        operation();
    }
    let mut times: Vec<Duration> = (0..samples.max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                operation();
            }
            start.elapsed() / batch
        })
        .collect();
    summarize(&mut times)
}

/// Median and p99 of already collected durations (e.g. per-request latencies).
pub fn summarize(times: &mut [Duration]) -> Summary {
    times.sort_unstable();
    let at = |fraction: f64| {
        let index = ((times.len() as f64 - 1.0) * fraction).round() as usize;
        times.get(index).copied().unwrap_or_default()
    };
    Summary {
        median: at(0.5),
        p99: at(0.99),
        samples: times.len(),
    }
}

/// Prints a heading above a group of rows.
pub fn heading(title: &str) {
    println!("\n{title}:");
}

/// Prints one row of a percentile table.
pub fn report(name: &str, summary: &Summary) {
    println!(
        "{name:<48} median {:>12?}  p99 {:>12?}  ({} samples)",
        summary.median, summary.p99, summary.samples
    );
}

/// Prints what `through` adds to `direct`, at the median and at p99, in milliseconds (none
/// where it is faster).
pub fn report_added(name: &str, direct: &Summary, through: &Summary) {
    let added = |of: fn(&Summary) -> Duration| {
        of(through).saturating_sub(of(direct)).as_secs_f64() * 1000.0
    };
    println!(
        "{name:<48} median {:>9.3} ms  p99 {:>9.3} ms",
        added(|s| s.median),
        added(|s| s.p99)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let mut times: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        times.reverse();
        let summary = summarize(&mut times);
        assert_eq!(summary.median, Duration::from_micros(51));
        assert_eq!(summary.p99, Duration::from_micros(99));
        assert_eq!(summary.samples, 100);
    }
}
