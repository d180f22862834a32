//! Optional check against real captures from the providers' own SDK test suites, kept in
//! `../shared/oracles/wire` beside the repository. Skips (and says so) when that folder is
//! absent, as in a user's clone; the project's own fixtures cover the same ground.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::PathBuf;

use switchboard_wire::ids::IdSource;
use switchboard_wire::{FinishReason, Format, decode_body};

fn oracles() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracles/wire");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: {} is absent", dir.display());
        None
    }
}

fn decode_in_every_chunking(format: Format, body: &[u8]) -> switchboard_wire::ChatResponse {
    let whole = decode_body(format, body, IdSource::seeded(0)).unwrap();
    let mut decoder = format.stream_decoder(IdSource::seeded(0));
    let mut events = Vec::new();
    for byte in body.chunks(1) {
        decoder.feed(byte, &mut events).unwrap();
    }
    decoder.finish(&mut events).unwrap();
    assert_eq!(switchboard_wire::collect(&events).unwrap(), whole);
    whole
}

#[test]
fn recorded_openai_stream_decodes_to_its_call() {
    let Some(dir) = oracles() else { return };
    let body = std::fs::read(dir.join("openai_chat_stream_tool_call.sse.txt")).unwrap();
    let response = decode_in_every_chunking(Format::OpenAi, &body);
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(call.id, "call_Vz6ZXciy6Y0PYfT4d9W7fYB4");
    assert_eq!(call.name, "GetWeatherArgs");
    let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(
        arguments,
        serde_json::json!({"city": "Edinburgh", "country": "UK", "units": "c"})
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.map(|usage| usage.total_tokens), Some(100));
}

#[test]
fn recorded_anthropic_stream_decodes_to_its_call() {
    let Some(dir) = oracles() else { return };
    let body = std::fs::read(dir.join("anthropic_tool_use_response.sse.txt")).unwrap();
    let response = decode_in_every_chunking(Format::Anthropic, &body);
    assert_eq!(
        response.content.as_deref(),
        Some("I'll check the current weather in Paris for you.")
    );
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")
    );
    assert_eq!(call.arguments, r#"{"location": "Paris"}"#);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response
            .usage
            .map(|usage| (usage.prompt_tokens, usage.completion_tokens)),
        Some((377, 65))
    );
}

#[test]
fn documented_ollama_answer_decodes_to_its_call() {
    let Some(dir) = oracles() else { return };
    let example: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("ollama_api_chat_tools_example.json")).unwrap(),
    )
    .unwrap();
    let body = serde_json::to_vec(&example["response"]).unwrap();
    let response = decode_body(Format::Ollama, &body, IdSource::seeded(0)).unwrap();
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].name, "get_current_weather");
    assert_eq!(
        response.tool_calls[0].arguments,
        r#"{"format":"celsius","location":"Paris, FR"}"#
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}
