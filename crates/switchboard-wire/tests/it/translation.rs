//! Translation both ways: our model → each format → our model is identity for requests
//! and conversations with tool calls and results, and every answer survives being encoded
//! into each format's stream or body and decoded again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_tools::{Content, Message, ToolCall, ToolDefinition};
use switchboard_wire::ids::{IdMap, IdSource, is_anthropic_safe};
use switchboard_wire::{
    ChatRequest, ChatResponse, ConvertError, FinishReason, Format, StreamEvent, ToolChoice, Usage,
    anthropic, collect, ollama, openai,
};

fn conversation() -> ChatRequest {
    let calls = vec![
        ToolCall {
            id: "call.1:weather".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Zürich \"ZH\""}"#.into(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "get_time".into(),
            arguments: "{}".into(),
        },
    ];
    ChatRequest {
        model: "model-x".into(),
        messages: vec![
            Message::system("You are terse."),
            Message::user("Weather and time in Zürich?"),
            Message::Assistant {
                content: Some(Content::Text("Checking both.".into())),
                reasoning_content: None,
                reasoning_signature: None,
                tool_calls: calls,
                name: None,
            },
            Message::tool("call.1:weather", "12°C, \"cloudy\""),
            Message::tool("call_2", "14:05"),
            Message::user("Thanks. And tomorrow?"),
            Message::assistant("Tomorrow: sunny.", Vec::new()),
        ],
        tools: vec![
            ToolDefinition::function(
                "get_weather",
                "Weather for a city",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            ToolDefinition::function(
                "get_time",
                "Current time",
                json!({"type": "object", "properties": {}}),
            ),
        ]
        .into(),
        tool_choice: Some(ToolChoice::Required),
        parallel_tool_calls: Some(false),
        temperature: Some(0.5),
        top_p: Some(0.9),
        max_tokens: Some(256),
        stop: vec!["END".into()],
        stream: true,
        ..ChatRequest::default()
    }
}

#[test]
fn openai_request_round_trip_is_identity() {
    let mut request = conversation();
    request.seed = Some(42);
    request.reasoning_effort = Some("low".into());
    request.extra.insert("user".into(), json!("u-1"));
    let wire = serde_json::to_value(openai::build_request(&request)).unwrap();
    assert_eq!(wire["tool_choice"], "required");
    assert_eq!(wire["seed"], 42);
    let back = openai::parse_request(serde_json::from_value(wire).unwrap()).unwrap();
    assert_eq!(back, request);
}

#[test]
fn anthropic_request_round_trip_is_identity_with_ids_rewritten_and_back() {
    let request = conversation();
    let mut ids = IdMap::new();
    let wire = serde_json::to_value(anthropic::build_request(&request, &mut ids).unwrap()).unwrap();
    assert_eq!(
        wire["system"],
        json!([{"type": "text", "text": "You are terse."}])
    );
    assert_eq!(
        wire["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert_eq!(wire["stop_sequences"], json!(["END"]));
    let messages = wire["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        5,
        "system moved out, two results merged into one user message"
    );
    let tool_use = &messages[1]["content"][1];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["input"], json!({"city": "Zürich \"ZH\""}));
    let rewritten = tool_use["id"].as_str().unwrap();
    assert!(is_anthropic_safe(rewritten), "{rewritten}");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_use_id"], rewritten);
    assert_eq!(results[1]["tool_use_id"], "call_2");
    let back =
        crate::anthropic_serving::from_client(serde_json::from_value(wire).unwrap(), &ids).unwrap();
    assert_eq!(back, request);
}

#[test]
fn ollama_request_round_trip_is_identity() {
    let mut request = conversation();
    request.tool_choice = None;
    request.parallel_tool_calls = None;
    let wire = serde_json::to_value(ollama::build_request(&request).unwrap()).unwrap();
    assert_eq!(
        wire["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Zürich \"ZH\""})
    );
    assert_eq!(wire["messages"][3]["tool_name"], "get_weather");
    assert_eq!(wire["options"]["num_predict"], 256);
    let back = ollama::parse_request(
        serde_json::from_value(wire).unwrap(),
        &mut IdSource::seeded(0),
    )
    .unwrap();
    assert_eq!(back, request);
}

#[test]
fn ollama_refuses_tool_choice_it_cannot_honour() {
    let mut request = conversation();
    let error = ollama::build_request(&request).unwrap_err();
    assert!(
        matches!(
            error,
            ConvertError::Unsupported {
                format: "Ollama",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("required"), "{error}");
    request.tool_choice = Some(ToolChoice::Function("get_time".into()));
    assert!(
        ollama::build_request(&request)
            .unwrap_err()
            .to_string()
            .contains("get_time")
    );
    // `none` is honoured by not offering the tools at all.
    request.tool_choice = Some(ToolChoice::None);
    let wire = serde_json::to_value(ollama::build_request(&request).unwrap()).unwrap();
    assert!(wire.get("tools").is_none());
}

#[test]
fn ollama_history_without_ids_gets_consistent_ones() {
    let wire = json!({"model": "m", "messages": [
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "a", "arguments": {}}}, {"function": {"name": "b", "arguments": {"k": 1}}}]},
        {"role": "tool", "tool_name": "b", "content": "B"},
        {"role": "tool", "tool_name": "a", "content": "A"}
    ]});
    let request = ollama::parse_request(
        serde_json::from_value(wire).unwrap(),
        &mut IdSource::seeded(3),
    )
    .unwrap();
    let Message::Assistant { tool_calls, .. } = &request.messages[0] else {
        panic!()
    };
    assert_eq!(
        request.messages[1],
        Message::tool(tool_calls[1].id.clone(), "B")
    );
    assert_eq!(
        request.messages[2],
        Message::tool(tool_calls[0].id.clone(), "A")
    );
}

#[test]
fn malformed_history_arguments_are_an_error_naming_where() {
    let mut request = conversation();
    if let Message::Assistant { tool_calls, .. } = &mut request.messages[2] {
        tool_calls[1].arguments = "{not json".into();
    }
    let error = anthropic::build_request(&request, &mut IdMap::new()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("messages[2].tool_calls[1].function.arguments: "),
        "{error}"
    );
}

#[test]
fn tool_choice_and_parallel_calls_map_to_anthropic() {
    let mut request = conversation();
    for (choice, expected) in [
        (
            ToolChoice::Auto,
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Function("get_time".into()),
            json!({"type": "tool", "name": "get_time", "disable_parallel_tool_use": true}),
        ),
    ] {
        request.tool_choice = Some(choice);
        let wire =
            serde_json::to_value(anthropic::build_request(&request, &mut IdMap::new()).unwrap())
                .unwrap();
        assert_eq!(wire["tool_choice"], expected);
    }
}

#[test]
fn finish_reasons_map_between_formats() {
    for (ours, anthropic_name, ollama_name) in [
        (FinishReason::ToolCalls, "tool_use", "stop"),
        (FinishReason::Stop, "end_turn", "stop"),
        (FinishReason::Length, "max_tokens", "length"),
    ] {
        assert_eq!(anthropic::stop_reason(&ours), anthropic_name);
        assert_eq!(anthropic::finish_reason(anthropic_name), ours);
        assert_eq!(ollama::done_reason(&ours), ollama_name);
    }
    assert_eq!(
        anthropic::finish_reason("stop_sequence"),
        FinishReason::Stop
    );
}

fn answer() -> ChatResponse {
    ChatResponse {
        content: Some("Both: ".into()),
        reasoning_content: Some("two lookups".into()),
        reasoning_signature: None,
        tool_calls: vec![
            ToolCall {
                id: "call_a".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"Zürich \"ZH\""}"#.into(),
            },
            ToolCall {
                id: "call_b".into(),
                name: "get_time".into(),
                arguments: "{}".into(),
            },
        ],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage::new(30, 12)),
    }
}

/// Parallel calls as an OpenAI backend may stream them: interleaved, split, text after.
fn interleaved() -> Vec<StreamEvent> {
    use StreamEvent::*;
    vec![
        ReasoningDelta("two lookups".into()),
        TextDelta("Both".into()),
        ToolCallStart {
            index: 0,
            id: "call_a".into(),
            name: "get_weather".into(),
        },
        ToolCallArguments {
            index: 0,
            delta: r#"{"city":"Zür"#.into(),
        },
        ToolCallStart {
            index: 1,
            id: "call_b".into(),
            name: "get_time".into(),
        },
        ToolCallArguments {
            index: 1,
            delta: "{}".into(),
        },
        TextDelta(": ".into()),
        ToolCallArguments {
            index: 0,
            delta: r#"ich \"ZH\""}"#.into(),
        },
        ToolCallEnd { index: 0 },
        ToolCallEnd { index: 1 },
        Finish(FinishReason::ToolCalls),
        Usage(switchboard_wire::Usage::new(30, 12)),
    ]
}

fn encode(format: Format, events: &[StreamEvent]) -> String {
    match format {
        Format::OpenAi => {
            let mut encoder = openai::ChunkEncoder::new("chatcmpl-x", "m", 1);
            let mut out: String = events
                .iter()
                .filter_map(|event| encoder.sse(event))
                .collect();
            out.push_str(openai::DONE);
            out
        }
        Format::Anthropic => {
            let mut encoder = anthropic::SseEncoder::new("msg_x", "m", IdMap::new());
            let mut payloads: Vec<_> = events
                .iter()
                .flat_map(|event| encoder.event(event))
                .collect();
            payloads.extend(encoder.finish());
            anthropic::SseEncoder::sse(&payloads)
        }
        Format::Ollama => {
            let mut encoder = ollama::NdjsonEncoder::new("m", "2024-01-01T00:00:00Z");
            let mut out = String::new();
            for event in events {
                if let Some(chunk) = encoder.event(event).unwrap() {
                    out.push_str(&ollama::NdjsonEncoder::line(&chunk));
                }
            }
            out.push_str(&ollama::NdjsonEncoder::line(&encoder.finish()));
            out
        }
    }
}

#[test]
fn streams_survive_encoding_and_decoding_in_every_format() {
    let expected = answer();
    assert_eq!(collect(&interleaved()).unwrap(), expected);
    for format in [Format::OpenAi, Format::Anthropic, Format::Ollama] {
        let bytes = encode(format, &interleaved());
        let decoded = format
            .decode_events(bytes.as_bytes(), IdSource::seeded(0))
            .unwrap();
        let mut collected = collect(&decoded).unwrap();
        if format == Format::Ollama {
            // Ollama calls are objects on the wire: the same call, compact text.
            assert_eq!(
                collected.tool_calls[0].arguments,
                r#"{"city":"Zürich \"ZH\""}"#
            );
        }
        collected
            .tool_calls
            .iter_mut()
            .zip(&expected.tool_calls)
            .for_each(|(got, want)| {
                assert_eq!(
                    serde_json::from_str::<Value>(&got.arguments).unwrap(),
                    serde_json::from_str::<Value>(&want.arguments).unwrap()
                );
                got.arguments.clone_from(&want.arguments);
            });
        assert_eq!(collected, expected, "{format:?}:\n{bytes}");
    }
}

#[test]
fn anthropic_stream_has_no_empty_blocks_and_stops_for_tool_use() {
    let bytes = encode(Format::Anthropic, &interleaved());
    assert!(bytes.contains(r#""stop_reason":"tool_use""#), "{bytes}");
    assert!(!bytes.contains(r#""text_delta","text":"""#), "{bytes}");
    let starts = bytes.matches("event: content_block_start").count();
    assert_eq!(
        starts, 5,
        "thinking, text, two tool_use blocks, then the text that came between calls:\n{bytes}"
    );
    // The second call's block opens only after the first closes, carrying what it held.
    let first_stop = bytes
        .find(r#"{"type":"content_block_stop","index":2}"#)
        .unwrap();
    let second_start = bytes.find(r#""name":"get_time""#).unwrap();
    assert!(first_stop < second_start);
}

#[test]
fn non_streaming_bodies_survive_encoding_and_decoding_in_every_format() {
    let expected = answer();
    let bodies = [
        (
            Format::OpenAi,
            serde_json::to_vec(&openai::completion(&expected, "chatcmpl-x", "m", 1)).unwrap(),
        ),
        (
            Format::Anthropic,
            serde_json::to_vec(
                &anthropic::message(&expected, "msg_x", "m", &mut IdMap::new()).unwrap(),
            )
            .unwrap(),
        ),
        (
            Format::Ollama,
            serde_json::to_vec(&ollama::response(&expected, "m", "2024-01-01T00:00:00Z").unwrap())
                .unwrap(),
        ),
    ];
    for (format, body) in bodies {
        let collected = switchboard_wire::decode_body(format, &body, IdSource::seeded(0)).unwrap();
        assert_eq!(collected, expected, "{format:?}");
    }
}

#[test]
fn anthropic_encoders_rewrite_unsafe_ids() {
    let mut response = answer();
    response.tool_calls[0].id = "functions.get_weather:0".into();
    let mut ids = IdMap::new();
    let body =
        serde_json::to_value(anthropic::message(&response, "msg", "m", &mut ids).unwrap()).unwrap();
    let id = body["content"][2]["id"].as_str().unwrap();
    assert!(is_anthropic_safe(id), "{id}");
    assert_eq!(ids.from_anthropic(id), "functions.get_weather:0");
}

/// A request with every OpenAI field beyond the messages and tools.
fn with_standard_fields() -> ChatRequest {
    let mut request = conversation();
    request.messages.truncate(2);
    request.tool_choice = None;
    request.parallel_tool_calls = None;
    request.max_tokens = None;
    request.top_k = Some(40);
    request.seed = Some(7);
    request.reasoning_effort = Some("high".into());
    request.response_format = Some(json!({"type": "json_schema", "json_schema": {
        "name": "weather", "schema": {"type": "object", "properties": {"c": {"type": "number"}}}}}));
    for (field, value) in [
        ("user", json!("user-7")),
        ("frequency_penalty", json!(0.5)),
        ("presence_penalty", json!(-0.5)),
        ("logit_bias", json!({"50256": -100})),
        ("logprobs", json!(true)),
        ("top_logprobs", json!(2)),
        ("metadata", json!({"team": "a"})),
        ("service_tier", json!("default")),
    ] {
        request.extra.insert(field.into(), value);
    }
    request
}

#[test]
fn standard_fields_translate_to_anthropic_or_are_dropped() {
    let request = with_standard_fields();
    let wire = serde_json::to_value(anthropic::build_request(&request, &mut IdMap::new()).unwrap())
        .unwrap();
    assert_eq!(
        wire["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    assert_eq!(
        wire["max_tokens"],
        16384 + 4096,
        "the answer keeps its room beside the thinking"
    );
    assert_eq!(
        wire["output_config"],
        json!({"format": {"type": "json_schema", "schema": {"type": "object", "properties": {"c": {"type": "number"}}}}})
    );
    assert_eq!(wire["metadata"], json!({"user_id": "user-7"}));
    assert_eq!(wire["service_tier"], "standard_only");
    for absent in [
        "seed",
        "temperature",
        "top_k",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "reasoning_effort",
        "response_format",
    ] {
        assert!(wire.get(absent).is_none(), "{absent}: {wire}");
    }
    assert_eq!(
        wire["top_p"],
        json!(null),
        "top_p 0.9 is below what thinking allows"
    );

    // Without thinking, sampling is sent as asked.
    let mut plain = with_standard_fields();
    plain.reasoning_effort = Some("none".into());
    let wire =
        serde_json::to_value(anthropic::build_request(&plain, &mut IdMap::new()).unwrap()).unwrap();
    assert!(wire.get("thinking").is_none(), "{wire}");
    assert_eq!(
        (wire["top_k"].clone(), wire["temperature"].clone()),
        (json!(40), json!(0.5))
    );
    // In a tool loop Anthropic would want the thinking block the history cannot carry.
    let mut looping = with_standard_fields();
    looping.messages = conversation().messages[..5].to_vec();
    let wire = serde_json::to_value(anthropic::build_request(&looping, &mut IdMap::new()).unwrap())
        .unwrap();
    assert!(wire.get("thinking").is_none(), "{wire}");
    // A client's limit bounds thinking too; too small a limit or a forced call means none.
    for (max_tokens, choice, thinking) in [
        (
            Some(5000),
            None,
            json!({"type": "enabled", "budget_tokens": 2500}),
        ),
        (Some(1500), None, Value::Null),
        (None, Some(ToolChoice::Required), Value::Null),
    ] {
        let mut limited = with_standard_fields();
        limited.max_tokens = max_tokens;
        limited.tool_choice = choice;
        let wire =
            serde_json::to_value(anthropic::build_request(&limited, &mut IdMap::new()).unwrap())
                .unwrap();
        assert_eq!(wire["thinking"], thinking, "{max_tokens:?}");
        if let Some(max_tokens) = max_tokens {
            assert_eq!(wire["max_tokens"], max_tokens);
        }
    }
}

#[test]
fn standard_fields_translate_to_ollama_or_are_dropped() {
    let request = with_standard_fields();
    let wire = serde_json::to_value(ollama::build_request(&request).unwrap()).unwrap();
    let options = &wire["options"];
    assert_eq!(
        (
            options["top_k"].clone(),
            options["seed"].clone(),
            options["frequency_penalty"].clone(),
            options["presence_penalty"].clone()
        ),
        (json!(40), json!(7), json!(0.5), json!(-0.5))
    );
    assert_eq!(
        wire["format"],
        json!({"type": "object", "properties": {"c": {"type": "number"}}})
    );
    assert_eq!(wire["think"], true);
    for absent in [
        "user",
        "metadata",
        "service_tier",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "seed",
        "reasoning_effort",
        "response_format",
    ] {
        assert!(wire.get(absent).is_none(), "{absent}: {wire}");
    }
    let mut gpt_oss = with_standard_fields();
    gpt_oss.model = "gpt-oss:20b".into();
    gpt_oss.response_format = Some(json!({"type": "json_object"}));
    gpt_oss.reasoning_effort = Some("xhigh".into());
    let wire = serde_json::to_value(ollama::build_request(&gpt_oss).unwrap()).unwrap();
    assert_eq!(
        (wire["think"].clone(), wire["format"].clone()),
        (json!("high"), json!("json"))
    );
    gpt_oss.reasoning_effort = Some("none".into());
    let wire = serde_json::to_value(ollama::build_request(&gpt_oss).unwrap()).unwrap();
    assert_eq!(wire["think"], false);
    // What Ollama reads back is the same request, minus the fields it has no place for.
    let back = ollama::parse_request(
        serde_json::from_value(wire).unwrap(),
        &mut IdSource::seeded(0),
    )
    .unwrap();
    assert_eq!((back.seed, back.top_k), (Some(7), Some(40)));
}
