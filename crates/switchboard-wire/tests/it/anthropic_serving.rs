//! Serving Anthropic clients: what Claude Code and the anthropic SDKs send becomes our
//! request field by field, a signed thinking block survives the trip to an Anthropic backend
//! and back, and a whole Messages body is exactly the stream's payloads folded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use switchboard_tools::{Content, Message};
use switchboard_wire::anthropic::{self, MessageBuilder, MessagesRequest, SseEncoder};
use switchboard_wire::ids::{IdMap, IdSource};
use switchboard_wire::{
    ChatRequest, ConvertError, FinishReason, Format, StreamEvent, ToolChoice, Usage,
};

fn parse(body: Value) -> ChatRequest {
    from_client(serde_json::from_value(body).unwrap(), &IdMap::new()).unwrap()
}

fn parse_error(body: Value) -> String {
    from_client(serde_json::from_value(body).unwrap(), &IdMap::new())
        .unwrap_err()
        .to_string()
}

/// A whole Anthropic client's request moved part by part, as the gateway's Messages
/// front-end moves it once each part is checked.
pub fn from_client(request: MessagesRequest, ids: &IdMap) -> Result<ChatRequest, ConvertError> {
    use anthropic::from_client::{
        push_message, reasoning_effort, response_format, system, tool, tool_choice,
    };
    let mut messages = request.system.map(system).unwrap_or_default();
    for (position, message) in request.messages.into_iter().enumerate() {
        let role = serde_json::from_value(Value::from(message.role)).unwrap();
        push_message(
            role,
            message.content,
            ids,
            &format!("messages.{position}"),
            &mut messages,
        )?;
    }
    let object = |field: &str| request.extra.get(field).and_then(Value::as_object);
    let (tool_choice, parallel_tool_calls) = request
        .tool_choice
        .map(tool_choice)
        .map_or((None, None), |(choice, parallel)| (Some(choice), parallel));
    Ok(ChatRequest {
        model: request.model,
        messages,
        tools: request
            .tools
            .unwrap_or_default()
            .into_iter()
            .filter(anthropic::AnthropicTool::is_custom)
            .map(tool)
            .collect(),
        tool_choice,
        parallel_tool_calls,
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: Some(request.max_tokens),
        stop: request.stop_sequences.unwrap_or_default(),
        stream: request.stream.unwrap_or(false),
        reasoning_effort: reasoning_effort(object("thinking"), object("output_config"))?,
        response_format: response_format(
            object("output_config"),
            request.extra.get("output_format"),
        )?,
        top_k: request
            .extra
            .get("top_k")
            .and_then(Value::as_u64)
            .and_then(|k| u32::try_from(k).ok()),
        ..ChatRequest::default()
    })
}

fn base(extra: Value) -> Value {
    let mut body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"}]});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

/// A Claude Code turn: system blocks with cache_control, a system message after the user's,
/// a signed thinking block before a tool_use, a tool result marked as an error, custom
/// tools beside a server tool.
fn claude_code_turn() -> Value {
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 64000,
        "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.0;"},
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "make a file"}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}}], "output_config": {"effort": "high"}},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I will touch it.", "signature": "EqQBCkYIARgCKkB"},
                {"type": "text", "text": "Creating it."},
                {"type": "tool_use", "id": "toolu_01A", "name": "Bash", "input": {"command": "touch a"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "permission denied", "is_error": true, "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [
            {"name": "Bash", "description": "Run a command", "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
        ],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "user_abc"},
        "context_management": {"edits": []}
    })
}

#[test]
fn a_claude_code_turn_becomes_our_request() {
    let request = parse(claude_code_turn());
    assert_eq!(request.max_tokens, Some(64000));
    assert!(request.stream);
    assert_eq!(request.reasoning_effort.as_deref(), Some("high"));
    let names: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.function.name.as_str())
        .collect();
    assert_eq!(names, ["Bash"], "the server tool is left out");
    let roles: Vec<&str> = request.messages.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        ["system", "system", "user", "system", "assistant", "tool"]
    );
    let Message::Assistant {
        content,
        reasoning_content,
        reasoning_signature,
        tool_calls,
        ..
    } = &request.messages[4]
    else {
        panic!()
    };
    assert_eq!(content.as_ref().unwrap().text(), "Creating it.");
    assert_eq!(reasoning_content.as_deref(), Some("I will touch it."));
    assert_eq!(reasoning_signature.as_deref(), Some("EqQBCkYIARgCKkB"));
    assert_eq!(tool_calls[0].id, "toolu_01A");
    assert_eq!(tool_calls[0].arguments, r#"{"command":"touch a"}"#);
    assert_eq!(
        request.messages[5],
        Message::tool("toolu_01A", "Error: permission denied")
    );
    let Message::System { content, .. } = &request.messages[3] else {
        panic!()
    };
    assert_eq!(content.text(), "# Environment");
}

#[test]
fn a_signed_thinking_block_reaches_an_anthropic_backend_first_and_unchanged() {
    let request = parse(claude_code_turn());
    let wire = anthropic::build_request(&request, &mut IdMap::new()).unwrap();
    let sent = serde_json::to_value(&wire).unwrap();
    let assistant = &sent["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"],
        json!([
            {"type": "thinking", "thinking": "I will touch it.", "signature": "EqQBCkYIARgCKkB"},
            {"type": "text", "text": "Creating it."},
            {"type": "tool_use", "id": "toolu_01A", "name": "Bash", "input": {"command": "touch a"}}
        ])
    );
    // Unsigned reasoning (from another backend) is never sent as a thinking block.
    let mut unsigned = request.clone();
    if let Message::Assistant {
        reasoning_signature,
        ..
    } = &mut unsigned.messages[4]
    {
        *reasoning_signature = None;
    }
    let sent =
        serde_json::to_value(anthropic::build_request(&unsigned, &mut IdMap::new()).unwrap())
            .unwrap();
    assert_eq!(sent["messages"][1]["content"][0]["type"], "text");
}

#[test]
fn several_thinking_blocks_keep_their_text_but_not_a_signature() {
    let request = parse(base(json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "one ", "signature": "s1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "thinking", "thinking": "two", "signature": "s2"},
            {"type": "text", "text": "ok"}
        ]}
    ]})));
    let Message::Assistant {
        reasoning_content,
        reasoning_signature,
        ..
    } = &request.messages[1]
    else {
        panic!()
    };
    assert_eq!(reasoning_content.as_deref(), Some("one two"));
    assert_eq!(*reasoning_signature, None);
}

#[test]
fn thinking_and_effort_map_to_a_reasoning_effort() {
    let effort = |extra: Value| parse(base(extra)).reasoning_effort;
    assert_eq!(effort(json!({})), None);
    assert_eq!(
        effort(json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})).as_deref(),
        Some("low")
    );
    assert_eq!(
        effort(json!({"thinking": {"type": "enabled", "budget_tokens": 10000}})).as_deref(),
        Some("medium")
    );
    assert_eq!(
        effort(json!({"thinking": {"type": "enabled", "budget_tokens": 31999}})).as_deref(),
        Some("high")
    );
    assert_eq!(effort(json!({"thinking": {"type": "adaptive"}})), None);
    assert_eq!(
        effort(json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}))
            .as_deref(),
        Some("xhigh")
    );
    assert_eq!(
        effort(json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "low"}})),
        None
    );
    assert!(
        parse_error(base(json!({"output_config": {"effort": "extreme"}})))
            .starts_with("output_config.effort: must be")
    );
    assert!(
        parse_error(base(json!({"thinking": {"type": "enabled"}})))
            .starts_with("thinking.budget_tokens:")
    );
}

#[test]
fn output_format_top_k_stops_and_tool_choice_map() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let request = parse(base(json!({
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
        "top_k": 40, "stop_sequences": ["END"], "temperature": 0.2,
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true}
    })));
    assert_eq!(
        request.response_format,
        Some(json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}))
    );
    assert_eq!(request.top_k, Some(40));
    assert_eq!(request.stop, ["END"]);
    assert_eq!(request.temperature, Some(0.2));
    assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert!(
        parse_error(base(
            json!({"output_config": {"format": {"type": "json_object"}}})
        ))
        .starts_with("output_config.format:")
    );
}

#[test]
fn images_in_a_tool_result_follow_it_as_a_user_turn() {
    let request = parse(base(json!({"messages": [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "a screenshot"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
            ]},
            {"type": "text", "text": "what is it?"}
        ]}
    ]})));
    assert_eq!(request.messages[2], Message::tool("t1", "a screenshot"));
    let Message::User {
        content: Content::Parts(parts),
        ..
    } = &request.messages[3]
    else {
        panic!("{:?}", request.messages[3])
    };
    assert_eq!(
        parts,
        &[
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}),
            json!({"type": "text", "text": "what is it?"})
        ]
    );
}

fn events() -> Vec<StreamEvent> {
    use StreamEvent::*;
    vec![
        ReasoningDelta("Need ".into()),
        ReasoningDelta("a file.".into()),
        ReasoningSignature("sig-1".into()),
        TextDelta(String::new()),
        TextDelta("On it.".into()),
        ToolCallStart {
            index: 0,
            id: "toolu_a".into(),
            name: "Bash".into(),
        },
        ToolCallArguments {
            index: 0,
            delta: r#"{"command":"#.into(),
        },
        ToolCallStart {
            index: 1,
            id: "toolu_b".into(),
            name: "Bash".into(),
        },
        ToolCallArguments {
            index: 1,
            delta: "{}".into(),
        },
        ToolCallArguments {
            index: 0,
            delta: r#" "ls"}"#.into(),
        },
        TextDelta(" Done.".into()),
        ToolCallEnd { index: 0 },
        ToolCallEnd { index: 1 },
        Finish(FinishReason::ToolCalls),
        Usage(switchboard_wire::Usage::new(120, 30)),
    ]
}

fn stream(events: &[StreamEvent]) -> Vec<anthropic::StreamPayload> {
    let mut encoder = SseEncoder::new("msg_1", "claude", IdMap::new()).with_input_estimate(99);
    let mut payloads = encoder.start();
    assert_eq!(encoder.start(), [], "message_start is sent once");
    for event in events {
        payloads.extend(encoder.event(event));
    }
    payloads.extend(encoder.finish());
    payloads
}

#[test]
fn the_whole_body_is_the_stream_folded() {
    let payloads = stream(&events());
    let mut builder = MessageBuilder::new();
    for payload in &payloads {
        builder.push(payload);
    }
    let body = serde_json::to_value(builder.finish()).unwrap();
    assert_eq!(
        body,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                {"type": "thinking", "thinking": "Need a file.", "signature": "sig-1"},
                {"type": "text", "text": "On it."},
                {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {}},
                {"type": "text", "text": " Done."}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 30}
        })
    );
    let sse = SseEncoder::sse(&payloads);
    assert!(sse.starts_with("event: message_start\ndata: "), "{sse}");
    assert!(
        sse.contains(r#""usage":{"input_tokens":99,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}"#),
        "message_start carries the estimate: {sse}"
    );
    assert!(
        sse.contains(r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-1"}}"#),
        "{sse}"
    );
    // The first call's arguments stream as they come; the second call's wait for it.
    let first_fragment = sse.find(r#""partial_json":"{\"command\":""#).unwrap();
    let second_start = sse.find(r#""id":"toolu_b""#).unwrap();
    assert!(first_fragment < second_start, "{sse}");
    assert!(sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
}

#[test]
fn a_signature_from_an_anthropic_backend_survives_decoding_and_encoding() {
    let payloads = stream(&events());
    let sse = SseEncoder::sse(&payloads);
    let decoded = Format::Anthropic
        .decode_events(sse.as_bytes(), IdSource::seeded(1))
        .unwrap();
    let response = switchboard_wire::collect(&decoded).unwrap();
    assert_eq!(response.reasoning_signature.as_deref(), Some("sig-1"));
    assert_eq!(response.reasoning_content.as_deref(), Some("Need a file."));
    let Message::Assistant {
        reasoning_signature,
        ..
    } = response.message()
    else {
        panic!()
    };
    assert_eq!(reasoning_signature.as_deref(), Some("sig-1"));
    let body = serde_json::to_vec(
        &anthropic::message(&response, "msg_2", "claude", &mut IdMap::new()).unwrap(),
    )
    .unwrap();
    let mut again =
        switchboard_wire::decode_body(Format::Anthropic, &body, IdSource::seeded(1)).unwrap();
    // A body's input is an object: the same call, as compact text.
    assert_eq!(again.tool_calls[0].arguments, r#"{"command":"ls"}"#);
    again.tool_calls[0].arguments = r#"{"command": "ls"}"#.into();
    assert_eq!(again, response);
}

#[test]
fn cached_prompt_tokens_count_as_prompt_tokens() {
    let body = json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000, "output_tokens": 7}});
    let response = switchboard_wire::decode_body(
        Format::Anthropic,
        body.to_string().as_bytes(),
        IdSource::seeded(0),
    )
    .unwrap();
    assert_eq!(response.usage, Some(Usage::new(2105, 7)));
    let stream = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
    let events = Format::Anthropic
        .decode_events(stream.as_bytes(), IdSource::seeded(0))
        .unwrap();
    assert!(
        events.contains(&StreamEvent::Usage(Usage::new(2005, 9))),
        "{events:?}"
    );
}
