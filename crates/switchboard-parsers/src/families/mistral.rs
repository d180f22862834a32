//! `mistral`: `[TOOL_CALLS][{"name":…,"arguments":…}, …]` (tokenizer v3/v7) and
//! `[TOOL_CALLS]NAME[ARGS]{…}` (v11+, optionally `[CALL_ID]id` before `[ARGS]`, one
//! `[TOOL_CALLS]` per call), with `[THINK]…[/THINK]` (v13+) or `<think>…</think>` (v11
//! Magistral) reasoning.
//!
//! Inside reasoning every marker but the closing one is text. `[ARGS]` arguments stream as
//! they arrive and end where the JSON object closes; text after it is content. A
//! `[TOOL_CALLS]` not followed by a JSON array or `NAME[ARGS]{…}`, or cut off by the end of
//! output, is reported as [`crate::ParseEvent::Invalid`].

use serde_json::Value;

use super::args::{Fed, RawJsonArgs};
use super::emit_json_call;
use crate::Machine;
use crate::json_scan::{JsonScan, Scan};
use crate::out::Out;

const MARKERS: &[&str] = &[
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "[/THINK]",
    "<think>",
    "</think>",
];
const TOOL_CALLS: usize = 0;
const ARGS: usize = 1;
const CALL_ID: usize = 2;
const THINK: usize = 3;
const END_THINK: usize = 4;
const THINK_TEXT: usize = 5;
const END_THINK_TEXT: usize = 6;

#[derive(Debug)]
enum State {
    Text,
    /// After `[TOOL_CALLS]`: a JSON array (v3) or a name (v11+).
    Head(String),
    Array {
        scan: JsonScan,
        text: String,
    },
    CallId(String),
    Args(RawJsonArgs),
    /// The rest of a call whose arguments were not JSON, skipped up to the next marker.
    Broken,
}

#[derive(Debug)]
pub(crate) struct Mistral {
    reasoning: bool,
    state: State,
}

impl Mistral {
    pub(crate) fn new(reasoning: bool) -> Self {
        Self {
            reasoning,
            state: State::Text,
        }
    }

    fn array_text(&mut self, out: &mut Out, text: &str) {
        let State::Array { scan, text: body } = &mut self.state else {
            return;
        };
        match scan.feed(text) {
            Scan::More => body.push_str(text),
            Scan::NotJson => unreachable_broken(out, body, text),
            Scan::Done(end) => {
                body.push_str(&text[..end]);
                let body = std::mem::take(body);
                self.state = State::Text;
                match serde_json::from_str::<Value>(&body) {
                    Ok(Value::Array(calls)) => {
                        for call in &calls {
                            if let Err(reason) = emit_json_call(out, call) {
                                out.fail(&reason, &call.to_string());
                            }
                        }
                    }
                    Ok(call @ Value::Object(_)) => {
                        if let Err(reason) = emit_json_call(out, &call) {
                            out.fail(&reason, &body);
                        }
                    }
                    _ => out.fail("[TOOL_CALLS] is not followed by valid JSON", &body),
                }
                out.content(&text[end..]);
            }
        }
    }
}

/// The array scanner only starts on `[` or `{`, so it cannot meet text that is not JSON;
/// should it ever, the text is reported rather than lost.
fn unreachable_broken(out: &mut Out, body: &mut String, text: &str) {
    body.push_str(text);
    out.fail("[TOOL_CALLS] is not followed by valid JSON", body);
    body.clear();
}

impl Machine for Mistral {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::Head(head) => {
                head.push_str(text);
                let trimmed = head.trim_start();
                if trimmed.starts_with('[') || trimmed.starts_with('{') {
                    let trimmed = trimmed.to_owned();
                    self.state = State::Array {
                        scan: JsonScan::default(),
                        text: String::new(),
                    };
                    self.array_text(out, &trimmed);
                }
            }
            State::Array { .. } => self.array_text(out, text),
            State::CallId(_) => {}
            State::Args(args) => match args.feed(out, text) {
                Fed::More => {}
                Fed::Done(end) => {
                    self.state = State::Text;
                    out.content(&text[end..]);
                }
                Fed::Broken => self.state = State::Broken,
            },
            State::Broken => {}
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        if self.reasoning && matches!(self.state, State::Text) {
            if marker == END_THINK || marker == END_THINK_TEXT {
                self.reasoning = false;
            } else {
                out.reasoning(literal);
            }
            return;
        }
        match &mut self.state {
            State::Array { .. } => return self.array_text(out, literal),
            State::Args(args) if args.started() => return self.text(out, literal),
            State::Head(name) | State::CallId(name) if marker == ARGS || marker == CALL_ID => {
                let name = name.trim().to_owned();
                if marker == CALL_ID {
                    if matches!(self.state, State::Head(_)) {
                        self.state = State::CallId(name);
                    }
                    return;
                }
                if name.is_empty() {
                    out.fail("[ARGS] without a tool name", "[TOOL_CALLS][ARGS]");
                    self.state = State::Text;
                    return;
                }
                out.start(&name);
                self.state = State::Args(RawJsonArgs::default());
                return;
            }
            State::Head(head) => out.fail(
                "[TOOL_CALLS] without [ARGS] or a JSON array",
                &format!("[TOOL_CALLS]{head}"),
            ),
            State::CallId(name) => out.fail("[CALL_ID] without [ARGS]", name),
            State::Args(_) => out.fail("the call has no arguments object", ""),
            State::Text | State::Broken => {}
        }
        self.state = State::Text;
        match marker {
            TOOL_CALLS => self.state = State::Head(String::new()),
            THINK | THINK_TEXT => self.reasoning = true,
            END_THINK | END_THINK_TEXT => self.reasoning = false,
            // A stray `[ARGS]`/`[CALL_ID]` in text is markup.
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        match &self.state {
            State::Head(head) if head.trim().is_empty() => {
                out.fail("output ended right after [TOOL_CALLS]", "[TOOL_CALLS]")
            }
            State::Head(head) => out.fail(
                "[TOOL_CALLS] without [ARGS] or a JSON array",
                &format!("[TOOL_CALLS]{head}"),
            ),
            State::Array { text, .. } => out.fail("output ended inside the call array", text),
            State::CallId(name) => out.fail("output ended before [ARGS]", name),
            State::Args(_) | State::Broken | State::Text => {}
        }
        self.state = State::Text;
    }
}
