//! Decoding behaviour on byte-exact streams of each format: identical events whatever the
//! chunking, equal to the non-streaming body, and a clear error for every cut or
//! malformed stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use switchboard_tools::ToolCall;
use switchboard_wire::ids::IdSource;
use switchboard_wire::{
    ChatResponse, DecodeError, DecodeErrorKind, FinishReason, Format, StreamEvent, Usage, collect,
    decode_body,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

fn decode_pieces(format: Format, pieces: &[&[u8]]) -> Result<Vec<StreamEvent>, DecodeError> {
    let mut decoder = format.stream_decoder(IdSource::seeded(1));
    let mut events = Vec::new();
    for piece in pieces {
        decoder.feed(piece, &mut events)?;
    }
    decoder.finish(&mut events)?;
    Ok(events)
}

/// Splits after every `separator`: one piece per SSE event or NDJSON line.
fn per_event<'a>(body: &'a [u8], separator: &[u8]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for end in 0..body.len() {
        if body[..=end].ends_with(separator) {
            pieces.push(&body[start..=end]);
            start = end + 1;
        }
    }
    if start < body.len() {
        pieces.push(&body[start..]);
    }
    pieces
}

/// Decodes `body` fed 1 byte at a time, one event at a time and whole; all three must agree.
fn decode_every_way(format: Format, body: &[u8]) -> Vec<StreamEvent> {
    let separator: &[u8] = if format == Format::Ollama {
        b"\n"
    } else {
        b"\n\n"
    };
    let whole = decode_pieces(format, &[body]).unwrap();
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(
        decode_pieces(format, &bytes).unwrap(),
        whole,
        "1-byte chunks"
    );
    let events = per_event(body, separator);
    assert!(events.len() > 3, "the fixture has several events");
    assert_eq!(
        decode_pieces(format, &events).unwrap(),
        whole,
        "per-event chunks"
    );
    whole
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[test]
fn openai_parallel_calls_decode_the_same_in_every_chunking_and_match_the_json_body() {
    let events = decode_every_way(Format::OpenAi, &fixture("openai_parallel.sse"));
    let expected = ChatResponse {
        content: Some("Checking both ☀️.".into()),
        reasoning_content: None,
        reasoning_signature: None,
        tool_calls: vec![
            call(
                "call_a",
                "get_weather",
                r#"{"city": "Zürich \"Altstadt\"", "note": "日本語 \n</tool_call>"}"#,
            ),
            call("call_b", "get_time", "{}"),
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage::new(20, 10)),
    };
    assert_eq!(collect(&events).unwrap(), expected);
    let body = decode_body(
        Format::OpenAi,
        &fixture("openai_parallel.json"),
        IdSource::seeded(1),
    )
    .unwrap();
    assert_eq!(body, expected);
    // Interleaved fragments keep their own call's index; the empty call gets `{}`.
    assert!(events.contains(&StreamEvent::ToolCallArguments {
        index: 1,
        delta: "{}".into()
    }));
    assert!(!events.iter().any(
        |event| matches!(event, StreamEvent::ToolCallArguments { delta, .. } if delta.is_empty())
    ));
}

#[test]
fn openai_server_quirks_normalise_to_distinct_complete_calls() {
    let events = decode_every_way(Format::OpenAi, &fixture("openai_quirks.sse"));
    let response = collect(&events).unwrap();
    assert_eq!(
        response.reasoning_content.as_deref(),
        Some("User wants a, b, c, d.")
    );
    // Text and a call in one delta: both kept, text first.
    assert_eq!(response.content.as_deref(), Some("Sure."));
    let ids: Vec<&str> = response
        .tool_calls
        .iter()
        .map(|call| call.id.as_str())
        .collect();
    assert_eq!(&ids[..3], ["dup", "dup_1", "other"]);
    assert!(
        ids[3].starts_with("call_") && ids[3].len() == 29,
        "generated id {}",
        ids[3]
    );
    let calls: Vec<(&str, &str)> = response
        .tool_calls
        .iter()
        .map(|call| (call.name.as_str(), call.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("a", r#"{"x":1}"#),
            ("b", r#"{"y":"\u00e9"}"#),
            ("c", "{}"),
            ("d", "{}")
        ]
    );
    // `stop` after calls (vLLM with a named tool_choice) reads as tool_calls.
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let text_at = events
        .iter()
        .position(|event| matches!(event, StreamEvent::TextDelta(_)))
        .unwrap();
    let call_at = events
        .iter()
        .position(|event| matches!(event, StreamEvent::ToolCallStart { .. }))
        .unwrap();
    assert!(text_at < call_at);
}

#[test]
fn anthropic_text_and_tool_use_blocks_decode_the_same_in_every_chunking_and_match_the_json_body() {
    let events = decode_every_way(Format::Anthropic, &fixture("anthropic_tools.sse"));
    let expected = ChatResponse {
        content: Some("Looking that up — one moment.".into()),
        reasoning_content: None,
        reasoning_signature: None,
        tool_calls: vec![
            call(
                "toolu_01A",
                "search",
                r#"{"query": "café \"au lait\"", "limit": 3}"#,
            ),
            call("toolu_01B", "clock", "{}"),
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage::new(42, 55)),
    };
    assert_eq!(collect(&events).unwrap(), expected);
    let mut body = decode_body(
        Format::Anthropic,
        &fixture("anthropic_tools.json"),
        IdSource::seeded(1),
    )
    .unwrap();
    // A JSON body carries `input` as an object: same call, compact text.
    assert_eq!(
        body.tool_calls[0].arguments,
        r#"{"query":"café \"au lait\"","limit":3}"#
    );
    body.tool_calls[0].arguments = expected.tool_calls[0].arguments.clone();
    assert_eq!(body, expected);
}

#[test]
fn ollama_whole_calls_get_ids_and_indices_in_order() {
    let events = decode_every_way(Format::Ollama, &fixture("ollama_tools.ndjson"));
    let response = collect(&events).unwrap();
    assert_eq!(response.content.as_deref(), Some("Let me check."));
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].name, "forecast");
    assert_eq!(
        response.tool_calls[0].arguments,
        r#"{"city":"São Paulo \"SP\"","days":2}"#
    );
    assert_eq!(response.tool_calls[1].arguments, "{}");
    assert_ne!(response.tool_calls[0].id, response.tool_calls[1].id);
    assert!(
        response
            .tool_calls
            .iter()
            .all(|call| call.id.starts_with("call_"))
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Some(Usage::new(122, 33)));
    let body = decode_body(
        Format::Ollama,
        &fixture("ollama_tools.json"),
        IdSource::seeded(1),
    )
    .unwrap();
    assert_eq!(body, response);
}

#[test]
fn events_are_emitted_as_soon_as_their_bytes_arrive() {
    let body = fixture("openai_parallel.sse");
    let pieces = per_event(&body, b"\n\n");
    let mut decoder = Format::OpenAi.stream_decoder(IdSource::seeded(1));
    let mut events = Vec::new();
    decoder.feed(pieces[0], &mut events).unwrap();
    assert_eq!(events, [StreamEvent::TextDelta("Checking ".into())]);
    decoder.feed(pieces[1], &mut events).unwrap();
    assert!(events.contains(&StreamEvent::ToolCallStart {
        index: 0,
        id: "call_a".into(),
        name: "get_weather".into()
    }));
}

/// Every prefix that stops before the terminator is a truncation error, never a shorter
/// answer: cuts mid-call, mid-event, mid-character.
fn every_cut_is_an_error(format: Format, body: &[u8], terminator_end: usize) {
    for cut in 0..terminator_end {
        match decode_pieces(format, &[&body[..cut]]) {
            Ok(events) => panic!("{format:?} cut at {cut} decoded to {events:?}"),
            Err(error) => assert!(error.is_truncation(), "{format:?} cut at {cut}: {error}"),
        }
    }
    assert!(decode_pieces(format, &[&body[..terminator_end]]).is_ok());
}

fn end_of(body: &[u8], needle: &str) -> usize {
    let text = std::str::from_utf8(body).unwrap();
    text.rfind(needle).unwrap() + needle.len()
}

#[test]
fn a_stream_cut_anywhere_is_an_error() {
    let openai = fixture("openai_parallel.sse");
    every_cut_is_an_error(Format::OpenAi, &openai, end_of(&openai, "data: [DONE]"));
    let anthropic = fixture("anthropic_tools.sse");
    every_cut_is_an_error(
        Format::Anthropic,
        &anthropic,
        end_of(&anthropic, r#"{"type":"message_stop"}"#),
    );
    let ollama = fixture("ollama_tools.ndjson");
    every_cut_is_an_error(Format::Ollama, &ollama, ollama.len() - 1);
}

#[test]
fn a_stream_cut_mid_call_names_the_terminator_and_offset() {
    let body = fixture("openai_parallel.sse");
    let cut = end_of(&body, "Zürich");
    let error = decode_pieces(Format::OpenAi, &[&body[..cut]]).unwrap_err();
    assert_eq!(error.kind, DecodeErrorKind::Truncated("data: [DONE]"));
    assert_eq!(error.offset, cut);
    assert!(
        error.to_string().contains(&format!("at byte {cut}")),
        "{error}"
    );
}

#[test]
fn malformed_json_names_the_byte_where_it_breaks() {
    let body = b"data: {\"choices\":[}]}\n\ndata: [DONE]\n\n";
    let error = decode_pieces(Format::OpenAi, &[body]).unwrap_err();
    assert!(matches!(error.kind, DecodeErrorKind::Json(_)), "{error}");
    assert_eq!(error.offset, 18, "{error}");
    assert_eq!(body[error.offset], b'}');
}

#[test]
fn backend_errors_inside_streams_are_reported() {
    let openai = b"data: {\"error\":{\"message\":\"upstream overloaded\",\"code\":502}}\n\n";
    let error = decode_pieces(Format::OpenAi, &[openai]).unwrap_err();
    assert_eq!(
        error.kind,
        DecodeErrorKind::Backend("upstream overloaded".into())
    );
    let anthropic = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let error = decode_pieces(Format::Anthropic, &[anthropic]).unwrap_err();
    assert_eq!(
        error.kind,
        DecodeErrorKind::Backend("overloaded_error: Overloaded".into())
    );
    let ollama = b"{\"error\":\"model 'x' not found\"}\n";
    let error = decode_pieces(Format::Ollama, &[ollama]).unwrap_err();
    assert_eq!(
        error.kind,
        DecodeErrorKind::Backend("model 'x' not found".into())
    );
}

#[test]
fn protocol_violations_are_errors_not_panics() {
    let stray = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n";
    let error = decode_pieces(Format::Anthropic, &[stray]).unwrap_err();
    assert!(error.to_string().contains("content block 4"), "{error}");
    let nameless = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let error = decode_pieces(Format::OpenAi, &[nameless]).unwrap_err();
    assert!(error.to_string().contains("no function name"), "{error}");
    let second_choice = b"data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"x\"}}]}\n\n";
    assert!(decode_pieces(Format::OpenAi, &[second_choice]).is_err());
}

#[test]
fn a_truncated_json_body_is_a_truncation() {
    let body = fixture("openai_parallel.json");
    let error =
        decode_body(Format::OpenAi, &body[..body.len() / 2], IdSource::seeded(1)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("ended without the end of the JSON body"),
        "{error}"
    );
}

/// One line or event from a backend is bounded: past `MAX_EVENT_BYTES` the decoder stops
/// with `TooLarge` at the event's offset rather than buffering whatever the backend sends.
#[test]
fn an_event_past_the_bound_is_an_error_in_every_format() {
    use switchboard_wire::MAX_EVENT_BYTES;
    let text = "x".repeat(MAX_EVENT_BYTES + 1);
    let openai = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"hi\"}}}}]}}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
    );
    // The same size as many `data:` lines of one event.
    let lines = format!("data: {}\n", "x".repeat(16)).repeat(MAX_EVENT_BYTES / 16 + 1);
    let multi_line = format!("event: message_start\n{lines}\n");
    let ollama = format!(
        "{{\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"done\":false}}\n"
    );
    for (format, body, offset) in [
        (
            Format::OpenAi,
            openai.as_bytes(),
            openai.find("\n\n").unwrap() + 2,
        ),
        (Format::Anthropic, multi_line.as_bytes(), 0),
        (Format::Ollama, ollama.as_bytes(), 0),
    ] {
        let pieces: Vec<&[u8]> = body.chunks(64 * 1024).collect();
        let error = decode_pieces(format, &pieces).unwrap_err();
        assert_eq!(
            error.kind,
            DecodeErrorKind::TooLarge {
                limit: MAX_EVENT_BYTES
            },
            "{format:?}: {error}"
        );
        assert_eq!(error.offset, offset, "{format:?}");
    }
}
