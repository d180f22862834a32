//! Stream decoding cost: SSE/NDJSON bytes with tool-call deltas → events. Divan reports the
//! median time and throughput per whole stream; before it runs, this binary also times
//! every chunk fed separately and prints the median and p99 per chunk and per stream,
//! which divan does not report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};
use switchboard_wire::ids::IdSource;
use switchboard_wire::{Format, StreamEvent};

/// Chunks per synthetic stream: a text preamble, then two parallel calls whose arguments
/// arrive a few characters per chunk, interleaved, as vLLM and OpenAI send them.
const FRAGMENTS: usize = 400;

fn openai_stream() -> Vec<Vec<u8>> {
    let head = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":"#;
    let tail = r#","logprobs":null,"finish_reason":null}]}"#;
    let mut chunks = vec![format!(
        "data: {head}{{\"role\":\"assistant\",\"content\":\"Let me check.\"}}{tail}\n\n"
    )];
    for index in 0..2 {
        chunks.push(format!(
            "data: {head}{{\"tool_calls\":[{{\"index\":{index},\"id\":\"call_{index}\",\"type\":\"function\",\"function\":{{\"name\":\"search\",\"arguments\":\"\"}}}}]}}{tail}\n\n"
        ));
    }
    for fragment in 0..FRAGMENTS {
        let index = fragment % 2;
        let text = if fragment < 2 {
            r#"{\"q\": \""#.to_owned()
        } else {
            format!("wörd{fragment} ")
        };
        chunks.push(format!(
            "data: {head}{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"{text}\"}}}}]}}{tail}\n\n"
        ));
    }
    for index in 0..2 {
        chunks.push(format!("data: {head}{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"\\\"}}\"}}}}]}}{tail}\n\n"));
    }
    chunks.push(
        format!("data: {head}{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\n").replace(tail, ""),
    );
    chunks.push("data: [DONE]\n\n".to_owned());
    chunks.into_iter().map(String::into_bytes).collect()
}

fn anthropic_stream() -> Vec<Vec<u8>> {
    let mut chunks = vec![
        r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}

"#
        .to_owned(),
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"search\",\"input\":{}}}\n\n".to_owned(),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \\\"\"}}\n\n".to_owned(),
    ];
    for fragment in 0..FRAGMENTS {
        chunks.push(format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"wörd{fragment} \"}}}}\n\n"
        ));
    }
    chunks.push("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n".to_owned());
    chunks.push(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            .to_owned(),
    );
    chunks.push("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":400}}\n\n".to_owned());
    chunks.push("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned());
    chunks.into_iter().map(String::into_bytes).collect()
}

fn decode(format: Format, chunks: &[Vec<u8>]) -> Vec<StreamEvent> {
    let mut decoder = format.stream_decoder(IdSource::seeded(0));
    let mut events = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        decoder.feed(chunk, &mut events).unwrap();
    }
    decoder.finish(&mut events).unwrap();
    events
}

fn stream(format: Format) -> Vec<Vec<u8>> {
    match format {
        Format::OpenAi => openai_stream(),
        Format::Anthropic => anthropic_stream(),
        Format::Ollama => unreachable!("not benchmarked"),
    }
}

#[divan::bench(args = [Format::OpenAi, Format::Anthropic])]
fn per_event_chunks(bencher: Bencher, format: Format) {
    let chunks = stream(format);
    let bytes: usize = chunks.iter().map(Vec::len).sum();
    bencher
        .counter(BytesCount::new(bytes))
        .counter(ItemsCount::new(chunks.len()))
        .bench(|| decode(format, divan::black_box(&chunks)));
}

#[divan::bench(args = [Format::OpenAi, Format::Anthropic])]
fn one_byte_chunks(bencher: Bencher, format: Format) {
    let chunks: Vec<Vec<u8>> = stream(format)
        .concat()
        .chunks(1)
        .map(<[u8]>::to_vec)
        .collect();
    bencher
        .counter(BytesCount::new(chunks.len()))
        .bench(|| decode(format, divan::black_box(&chunks)));
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[rank]
}

/// Per-chunk and per-stream timings with their median and p99 (the timer's own cost,
/// tens of nanoseconds, is included in the per-chunk figures).
fn percentiles() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let chunks = stream(format);
        let bytes: usize = chunks.iter().map(Vec::len).sum();
        let mut per_chunk = Vec::new();
        let mut per_stream = Vec::new();
        for _ in 0..200 {
            let started = Instant::now();
            let mut decoder = format.stream_decoder(IdSource::seeded(0));
            let mut events = Vec::new();
            for chunk in &chunks {
                let fed = Instant::now();
                decoder.feed(chunk, &mut events).unwrap();
                per_chunk.push(fed.elapsed().as_nanos() as f64);
            }
            decoder.finish(&mut events).unwrap();
            per_stream.push(bytes as f64 / started.elapsed().as_secs_f64() / 1e6);
            divan::black_box(events);
        }
        per_chunk.sort_by(f64::total_cmp);
        per_stream.sort_by(f64::total_cmp);
        println!(
            "{format:?}: {} chunks, {bytes} bytes per stream; per chunk median {:.0} ns, p99 {:.0} ns; \
             throughput median {:.1} MB/s, p99 (slowest 1%) {:.1} MB/s",
            chunks.len(),
            percentile(&per_chunk, 0.5),
            percentile(&per_chunk, 0.99),
            percentile(&per_stream, 0.5),
            percentile(&per_stream, 0.01),
        );
    }
}

fn main() {
    let sanity = decode(Format::OpenAi, &openai_stream());
    assert!(
        sanity
            .iter()
            .any(|event| matches!(event, StreamEvent::ToolCallEnd { index: 1 }))
    );
    percentiles();
    divan::main();
}
