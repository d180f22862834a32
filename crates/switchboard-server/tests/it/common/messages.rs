//! A Messages API client for the gateway tests: requests with Anthropic's headers, and a
//! reader that checks a streamed answer event by event against Anthropic's protocol (named
//! events in order, one open block at a time, a stop for every block, `message_stop` last)
//! while folding it into the message a whole answer must equal.

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use switchboard_server::RunningGateway;

use super::{Answer, post_with};

/// `POST` a JSON body to `path` as Anthropic's SDKs send it.
pub async fn post_anthropic(gateway: &RunningGateway, path: &str, body: &Value) -> Answer {
    post_with(
        gateway,
        path,
        body,
        &[
            ("anthropic-version", "2023-06-01"),
            ("x-api-key", "sk-ant-unused"),
        ],
    )
    .await
}

/// `POST /v1/messages`
pub async fn post_messages(gateway: &RunningGateway, body: &Value) -> Answer {
    post_anthropic(gateway, "/v1/messages", body).await
}

/// A Messages request for `model` with one user message and room for 1024 tokens.
pub fn message_request(model: &str, text: &str) -> Value {
    json!({"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": text}]})
}

/// The weather and clock tools in Anthropic's shape (the clock takes no arguments).
pub fn message_tools() -> Value {
    json!([
        {"name": "get_weather", "description": "Current weather in a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"]}},
        {"name": "get_time", "description": "The current time", "input_schema": {"type": "object", "properties": {}}}
    ])
}

/// A request offering the weather and clock tools.
pub fn message_with_tools(model: &str, text: &str) -> Value {
    let mut body = message_request(model, text);
    body["tools"] = message_tools();
    body
}

impl Answer {
    /// Asserts an error in Anthropic's shape with this status and type; returns its message.
    pub fn anthropic_error(&self, status: u16, kind: &str) -> String {
        assert_eq!(self.status, status, "{}", self.text);
        let body = self.json();
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], kind, "{body}");
        let keys: Vec<&str> = body["error"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["type", "message"], "{body}");
        body["error"]["message"].as_str().unwrap().to_owned()
    }
}

/// `toolu_` and 24 letters and digits, as Anthropic's ids are.
pub fn is_tool_use_id(id: &str) -> bool {
    id.strip_prefix("toolu_").is_some_and(|rest| {
        rest.len() >= 24 && rest.bytes().all(|byte| byte.is_ascii_alphanumeric())
    })
}

/// A streamed Messages answer: its events (name and data) and what they fold into.
#[derive(Debug)]
pub struct Events {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub events: Vec<(String, Value)>,
    /// The message the events fold into, `tool_call_errors` from `message_delta` included.
    pub message: Value,
}

/// `POST /v1/messages` with `stream: true`, checked and folded.
pub async fn post_messages_stream(gateway: &RunningGateway, body: &Value) -> Events {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let answer = post_messages(gateway, &body).await;
    let (events, message) = if answer.status == 200 {
        let events = parse_events(&answer.text);
        let message = fold(&events);
        (events, message)
    } else {
        (Vec::new(), Value::Null)
    };
    Events {
        status: answer.status,
        headers: answer.headers,
        text: answer.text,
        events,
        message,
    }
}

/// `event: NAME` / `data: JSON` pairs; each event's name is its data's type.
pub fn parse_events(text: &str) -> Vec<(String, Value)> {
    assert!(
        text.ends_with("\n\n"),
        "the stream ends mid-event: {text:?}"
    );
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let (name, data) = event
                .strip_prefix("event: ")
                .and_then(|rest| rest.split_once("\ndata: "))
                .unwrap_or_else(|| panic!("not a named SSE event: {event:?}"));
            let data: Value =
                serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}: {data}"));
            assert_eq!(data["type"], name, "{event}");
            (name.to_owned(), data)
        })
        .collect()
}

/// The events folded as Anthropic's SDKs fold them, checking the protocol on the way.
pub fn fold(events: &[(String, Value)]) -> Value {
    let names: Vec<&str> = events
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| *name != "ping")
        .collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.last(), Some(&"message_stop"), "{names:?}");
    assert_eq!(
        names[names.len() - 2],
        "message_delta",
        "message_delta comes just before message_stop: {names:?}"
    );
    let mut message = events[0].1["message"].clone();
    assert_eq!(message["content"], json!([]), "{message}");
    let mut open: Option<usize> = None;
    let mut inputs: Vec<String> = Vec::new();
    for (name, data) in &events[1..] {
        match name.as_str() {
            "content_block_start" => {
                assert!(
                    open.is_none(),
                    "a block starts while another is open: {data}"
                );
                let index = data["index"].as_u64().unwrap() as usize;
                let blocks = message["content"].as_array_mut().unwrap();
                assert_eq!(index, blocks.len(), "blocks are numbered in order: {data}");
                blocks.push(data["content_block"].clone());
                inputs.push(String::new());
                open = Some(index);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(
                    open,
                    Some(index),
                    "a delta for a block that is not open: {data}"
                );
                let block = &mut message["content"][index];
                let delta = &data["delta"];
                match (
                    delta["type"].as_str().unwrap(),
                    block["type"].as_str().unwrap(),
                ) {
                    ("text_delta", "text") => {
                        let text = format!(
                            "{}{}",
                            block["text"].as_str().unwrap(),
                            delta["text"].as_str().unwrap()
                        );
                        block["text"] = json!(text);
                    }
                    ("thinking_delta", "thinking") => {
                        let text = format!(
                            "{}{}",
                            block["thinking"].as_str().unwrap(),
                            delta["thinking"].as_str().unwrap()
                        );
                        block["thinking"] = json!(text);
                    }
                    ("signature_delta", "thinking") => {
                        block["signature"] = delta["signature"].clone()
                    }
                    ("input_json_delta", "tool_use" | "server_tool_use") => {
                        inputs[index].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    other => panic!("delta {other:?} does not fit its block: {data}"),
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(
                    open,
                    Some(index),
                    "a stop for a block that is not open: {data}"
                );
                open = None;
                let block = &mut message["content"][index];
                match block["type"].as_str().unwrap() {
                    "tool_use" | "server_tool_use" => {
                        // Input cut short (by the length limit) is `{}` in a whole body.
                        block["input"] = serde_json::from_str(&inputs[index])
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or_else(|| json!({}));
                    }
                    "text" => assert_ne!(block["text"], "", "an empty text block"),
                    _ => {}
                }
            }
            "message_delta" => {
                assert!(open.is_none(), "message_delta while a block is open");
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["stop_sequence"] = data["delta"]["stop_sequence"].clone();
                for (key, value) in data["usage"].as_object().unwrap() {
                    message["usage"][key] = value.clone();
                }
                if let Some(errors) = data.get("tool_call_errors") {
                    message["tool_call_errors"] = errors.clone();
                }
            }
            "message_stop" | "ping" => {}
            other => panic!("unexpected event {other}: {data}"),
        }
    }
    message
}

/// A message with its ids (`msg_…`, and `toolu_…` ones the gateway minted) replaced by
/// placeholders, after checking their shape, so answers to separate requests compare.
pub fn without_message_ids(mut message: Value) -> Value {
    assert!(
        message["id"]
            .as_str()
            .and_then(|id| id.strip_prefix("msg_"))
            .is_some_and(|rest| rest.len() == 24),
        "{message}"
    );
    message["id"] = json!("msg_<id>");
    for (position, block) in message["content"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        if block["type"] == "tool_use" {
            let id = block["id"].as_str().unwrap();
            assert!(is_tool_use_id(id), "{id}");
            block["id"] = json!(format!("toolu_<{position}>"));
        }
    }
    message
}
