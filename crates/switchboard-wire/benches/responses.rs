//! The Responses API's own cost beside Chat Completions' for the same answer: a streamed
//! tool call encoded as `chat.completion.chunk`s and as Responses events (the response
//! object echoed in `response.created`, `.in_progress` and `.completed`), and a request
//! converted to our request model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use divan::Bencher;
use serde_json::json;
use switchboard_wire::openai::ChunkEncoder;
use switchboard_wire::responses::{
    Encoder, Input, Response, ResponsesRequest, parse_input, sse, to_chat,
};
use switchboard_wire::{FinishReason, StreamEvent, Usage};

fn tools() -> serde_json::Value {
    let city = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]});
    json!([
        {"type": "function", "name": "get_weather", "description": "Current weather in a city", "parameters": city},
        {"type": "function", "name": "get_time", "description": "Local time in a city", "parameters": city}
    ])
}

fn events() -> Vec<StreamEvent> {
    vec![
        StreamEvent::ToolCallStart {
            index: 0,
            id: "call_Xq3R9s8T7u6V5w4Y3z2A1b0C".into(),
            name: "get_weather".into(),
        },
        StreamEvent::ToolCallArguments {
            index: 0,
            delta: "{\"city\": \"Paris\", ".into(),
        },
        StreamEvent::ToolCallArguments {
            index: 0,
            delta: "\"unit\": \"celsius\"}".into(),
        },
        StreamEvent::ToolCallEnd { index: 0 },
        StreamEvent::Finish(FinishReason::ToolCalls),
        StreamEvent::Usage(Usage::new(180, 24)),
    ]
}

fn skeleton() -> Response {
    serde_json::from_value(json!({
        "id": "resp_bench", "object": "response", "created_at": 1, "status": "in_progress",
        "error": null, "incomplete_details": null, "instructions": "You are a weather assistant.",
        "max_output_tokens": null, "model": "native", "output": [], "parallel_tool_calls": true,
        "previous_response_id": null, "reasoning": {"effort": null, "summary": null}, "store": false,
        "temperature": null, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": tools(),
        "top_p": null, "truncation": "disabled", "usage": null, "user": null, "metadata": {}
    }))
    .unwrap()
}

#[divan::bench]
fn chat_chunks(bencher: Bencher) {
    let events = events();
    bencher.bench(|| {
        let mut encoder = ChunkEncoder::new("chatcmpl-bench", "native", 1);
        let mut out = String::new();
        for event in &events {
            out.push_str(&encoder.sse(event).unwrap_or_default());
        }
        out
    });
}

#[divan::bench]
fn responses_events(bencher: Bencher) {
    let events = events();
    let (skeleton, kinds) = (skeleton(), std::collections::HashMap::new());
    bencher.bench(|| {
        let mut encoder = Encoder::new(skeleton.clone(), kinds.clone());
        // As the gateway does: the opening events are written before the first item.
        let mut out = sse(&encoder.start());
        for event in &events {
            out.push_str(&sse(&encoder.event(event)));
        }
        out.push_str(&sse(&encoder.finish()));
        out
    });
}

#[divan::bench]
fn responses_request(bencher: Bencher) {
    let body = json!({"model": "native", "stream": true, "store": false, "instructions": "You are a weather assistant.",
        "input": "What is the weather in Paris?", "tools": tools()});
    bencher.bench(|| {
        let mut request: ResponsesRequest = serde_json::from_value(body.clone()).unwrap();
        let input = parse_input(std::mem::replace(
            &mut request.input,
            Input::Items(Vec::new()),
        ))
        .unwrap();
        to_chat(request, std::iter::empty(), input).unwrap()
    });
}

fn main() {
    divan::main();
}
