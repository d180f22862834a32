//! Parsing cost: throughput on a ~100 KB output holding 50 calls, parsed whole and fed one
//! character at a time, and the time for 1 KB, 10 KB and 100 KB outputs at 1-character
//! chunks, which must grow linearly (flat cost per byte). Run with
//! `cargo bench -p switchboard-parsers`; divan prints medians and MB/s, then a second table
//! gives median and p99 per output from raw samples.
#![allow(clippy::print_stdout)] // printing the figures is a bench's job

use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use switchboard_parsers::{Family, ParseEvent, parser};

fn main() {
    divan::main();
    percentiles();
}

/// A Hermes-style output of about `size` bytes with `calls` calls, prose between them and
/// long string arguments (escapes and non-ASCII included).
fn hermes(size: usize, calls: usize) -> String {
    let per_call = size / calls.max(1);
    let line = "Line with \\\"quotes\\\", café, 東京 and a </tool_call> inside a string.\\n";
    let mut out = String::with_capacity(size + 1024);
    for index in 0..calls {
        out.push_str("Let me write the next file now.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"f");
        out.push_str(&index.to_string());
        out.push_str(".txt\", \"content\": \"");
        let start = out.len();
        while out.len() - start + 200 < per_call {
            out.push_str(line);
        }
        out.push_str("\"}}\n</tool_call>\n");
    }
    out
}

/// Qwen3-Coder XML with the same shape, for a format whose values are typed and streamed.
fn qwen_xml(size: usize, calls: usize) -> String {
    let per_call = size / calls.max(1);
    let mut out = String::with_capacity(size + 1024);
    for index in 0..calls {
        out.push_str("Next file.\n<tool_call>\n<function=write_file>\n<parameter=path>\nf");
        out.push_str(&index.to_string());
        out.push_str(".txt\n</parameter>\n<parameter=content>\n");
        let start = out.len();
        while out.len() - start + 150 < per_call {
            out.push_str("fn main() { println!(\"café 東京 </function> {}\", 1); }\n");
        }
        out.push_str("\n</parameter>\n</function>\n</tool_call>\n");
    }
    out
}

/// Feeds `text` in chunks of `chars` characters; returns the number of events.
fn parse(family: Family, text: &str, chars: Option<usize>) -> usize {
    let mut parser = parser(family, &[]);
    let mut events: Vec<ParseEvent> = Vec::new();
    match chars {
        None => events.extend(parser.feed(text)),
        Some(size) => {
            let mut start = 0;
            for (count, (at, _)) in text.char_indices().enumerate().skip(1) {
                if count % size == 0 {
                    events.extend(parser.feed(&text[start..at]));
                    start = at;
                }
            }
            events.extend(parser.feed(&text[start..]));
        }
    }
    events.extend(parser.finish());
    events.len()
}

#[divan::bench(args = [Family::Hermes, Family::Qwen3Coder])]
fn whole_100kb_50_calls(bencher: Bencher, family: Family) {
    let text = if family == Family::Hermes {
        hermes(100_000, 50)
    } else {
        qwen_xml(100_000, 50)
    };
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| parse(family, black_box(&text), None));
}

#[divan::bench(args = [Family::Hermes, Family::Qwen3Coder])]
fn one_char_chunks_100kb_50_calls(bencher: Bencher, family: Family) {
    let text = if family == Family::Hermes {
        hermes(100_000, 50)
    } else {
        qwen_xml(100_000, 50)
    };
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| parse(family, black_box(&text), Some(1)));
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn one_char_chunks_by_size(bencher: Bencher, size: usize) {
    let text = hermes(size, (size / 2_000).max(1));
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| parse(Family::Hermes, black_box(&text), Some(1)));
}

/// Median and p99 per output from raw samples (divan reports no tail).
fn percentiles() {
    switchboard_bench::heading("hermes, per output (median, p99)");
    for (name, text, chars) in [
        ("100 KB, 50 calls, whole", hermes(100_000, 50), None),
        (
            "100 KB, 50 calls, 1-char chunks",
            hermes(100_000, 50),
            Some(1),
        ),
        ("1 KB, 1-char chunks", hermes(1_000, 1), Some(1)),
        ("10 KB, 1-char chunks", hermes(10_000, 5), Some(1)),
        ("100 KB, 1-char chunks", hermes(100_000, 50), Some(1)),
    ] {
        let samples = if text.len() > 50_000 { 200 } else { 2_000 };
        let summary = switchboard_bench::measure(samples, 1, || {
            black_box(parse(Family::Hermes, black_box(&text), chars));
        });
        let bytes = text.len() as f64;
        let label = format!("{name} ({} B)", text.len());
        switchboard_bench::report(&label, &summary);
        println!(
            "{:<48} {:.0} MB/s at the median, {:.1} ns/byte median, {:.1} ns/byte p99",
            "",
            bytes / summary.median.as_secs_f64() / 1e6,
            summary.median.as_nanos() as f64 / bytes,
            summary.p99.as_nanos() as f64 / bytes
        );
    }
}
