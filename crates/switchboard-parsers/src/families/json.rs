//! `json`: the generic format Switchboard asks for when it prompts a model that has no native
//! tool-call markup: `{"tool_calls": [{"name": …, "arguments": {…}}, …]}`, bare or in a
//! ```` ```json ```` block (a single `{"name": …, "arguments": …}` object is accepted too).
//!
//! A JSON object at the start of the output, or a ```` ```json ```` block anywhere, is held
//! until it closes; it becomes calls if it has that shape and is returned unchanged as
//! content otherwise. One cut off by the end of output is reported as
//! [`crate::ParseEvent::Invalid`] if it mentions `"tool_calls"`, and is content otherwise.

use serde_json::Value;

use super::emit_json_call;
use crate::Machine;
use crate::json_scan::{JsonScan, Scan};
use crate::out::Out;

const MARKERS: &[&str] = &["```json", "```"];
const FENCE: usize = 0;
const FENCE_END: usize = 1;

#[derive(Debug)]
enum State {
    Start(String),
    /// A JSON value being held; `fenced` when it sits in a ```json block.
    Object {
        scan: JsonScan,
        text: String,
        fenced: bool,
    },
    /// A fenced value is complete; the closing fence is awaited.
    AfterFence {
        text: String,
        calls: Option<Value>,
    },
    Content,
}

#[derive(Debug)]
pub(crate) struct Json {
    state: State,
}

impl Json {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Start(String::new()),
        }
    }
}

/// The calls in a value of the expected shape.
fn calls_of(value: &Value) -> Option<Vec<Value>> {
    match value.get("tool_calls") {
        Some(Value::Array(calls)) => Some(calls.clone()),
        Some(_) => None,
        None => (value.get("name").is_some_and(Value::is_string)).then(|| vec![value.clone()]),
    }
}

fn emit_calls(out: &mut Out, calls: &[Value]) {
    for call in calls {
        if let Err(reason) = emit_json_call(out, call) {
            out.fail(&reason, &call.to_string());
        }
    }
}

impl Machine for Json {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Content => out.content(text),
            State::Start(blank) => {
                let trimmed = text.trim_start();
                if trimmed.is_empty() {
                    blank.push_str(text);
                } else if trimmed.starts_with('{') {
                    self.state = State::Object {
                        scan: JsonScan::default(),
                        text: String::new(),
                        fenced: false,
                    };
                    self.text(out, trimmed);
                } else {
                    let mut content = std::mem::take(blank);
                    content.push_str(text);
                    self.state = State::Content;
                    out.content(&content);
                }
            }
            State::AfterFence { text: held, .. } => held.push_str(text),
            State::Object {
                scan,
                text: body,
                fenced,
            } => match scan.feed(text) {
                Scan::More => body.push_str(text),
                Scan::NotJson => {
                    body.push_str(text);
                    let content = if *fenced {
                        format!("```json{body}")
                    } else {
                        std::mem::take(body)
                    };
                    self.state = State::Content;
                    out.content(&content);
                }
                Scan::Done(end) => {
                    body.push_str(&text[..end]);
                    let body = std::mem::take(body);
                    let calls = serde_json::from_str::<Value>(&body)
                        .ok()
                        .as_ref()
                        .and_then(calls_of);
                    if *fenced {
                        let calls = calls.map(Value::Array);
                        self.state = State::AfterFence { text: body, calls };
                        return self.text(out, &text[end..]);
                    }
                    self.state = State::Content;
                    match calls {
                        Some(calls) => emit_calls(out, &calls),
                        None => out.content(&body),
                    }
                    out.content(&text[end..]);
                }
            },
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Object { scan, .. } if scan.started() => self.text(out, literal),
            State::AfterFence { text, calls } if marker == FENCE_END => {
                match calls.take() {
                    Some(Value::Array(calls)) => emit_calls(out, &calls),
                    _ => out.content(&format!("```json{text}```")),
                }
                self.state = State::Content;
            }
            State::AfterFence { text, .. } => text.push_str(literal),
            State::Start(_) | State::Content if marker == FENCE => {
                self.state = State::Object {
                    scan: JsonScan::default(),
                    text: String::new(),
                    fenced: true,
                };
            }
            State::Object {
                fenced: true, text, ..
            } => {
                let content = format!("```json{text}{literal}");
                self.state = State::Content;
                out.content(&content);
            }
            _ => {
                if let State::Start(blank) = &mut self.state {
                    let blank = std::mem::take(blank);
                    out.content(&blank);
                }
                self.state = State::Content;
                out.content(literal);
            }
        }
    }

    fn end(&mut self, out: &mut Out) {
        let held = match &mut self.state {
            // A complete block whose closing fence never came still holds complete calls.
            State::AfterFence {
                calls: Some(Value::Array(calls)),
                ..
            } => {
                let calls = std::mem::take(calls);
                emit_calls(out, &calls);
                None
            }
            State::AfterFence { text, .. } => Some(format!("```json{text}")),
            State::Object {
                text, fenced: true, ..
            } => Some(format!("```json{text}")),
            State::Object { text, .. } => Some(text.clone()),
            _ => None,
        };
        if let Some(held) = held {
            if held.contains("\"tool_calls\"") {
                out.fail("output ended inside the tool_calls object", &held);
            } else {
                out.content(&held);
            }
        }
        self.state = State::Content;
    }
}
