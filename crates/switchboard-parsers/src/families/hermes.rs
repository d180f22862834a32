//! `hermes` (Qwen 2.5/3, Hermes, many fine-tunes): `<tool_call>{"name":…,"arguments":…}</tool_call>`,
//! several in a row, with `<think>…</think>` reasoning.
//!
//! Malformed calls: a body that is not a JSON object with a `name`, or a call cut off before
//! its JSON closes, is not a call; it is reported as [`crate::ParseEvent::Invalid`] with its
//! raw text and is not repeated as content. A complete JSON object whose `</tool_call>` never
//! came is accepted (the model stopped right after the call). `<tool_call>` inside reasoning
//! ends the reasoning, as models that forget `</think>` expect.

use serde_json::Value;

use super::emit_json_call;
use crate::Machine;
use crate::json_scan::{JsonScan, Scan};
use crate::out::Out;

const MARKERS: &[&str] = &["<think>", "</think>", "<tool_call>", "</tool_call>"];
const THINK: usize = 0;
const END_THINK: usize = 1;
const CALL: usize = 2;
const END_CALL: usize = 3;

#[derive(Debug)]
enum State {
    Text,
    /// Inside `<tool_call>`: the JSON so far, and whether it is complete or broken.
    Call {
        scan: JsonScan,
        body: String,
        closed: bool,
        broken: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Hermes {
    reasoning: bool,
    state: State,
}

impl Hermes {
    pub(crate) fn new(reasoning: bool) -> Self {
        Self {
            reasoning,
            state: State::Text,
        }
    }

    fn call_text(out: &mut Out, state: &mut State, text: &str) {
        let State::Call {
            scan,
            body,
            closed,
            broken,
        } = state
        else {
            return;
        };
        if *closed {
            return;
        }
        if *broken {
            body.push_str(text);
            return;
        }
        match scan.feed(text) {
            Scan::More => body.push_str(text),
            Scan::NotJson => {
                *broken = true;
                body.push_str(text);
            }
            Scan::Done(end) => {
                body.push_str(&text[..end]);
                *closed = true;
                match serde_json::from_str::<Value>(body) {
                    Ok(call) => {
                        if let Err(reason) = emit_json_call(out, &call) {
                            out.fail(&reason, &format!("<tool_call>{body}"));
                        }
                    }
                    Err(error) => out.fail(
                        &format!("the call is not valid JSON: {error}"),
                        &format!("<tool_call>{body}"),
                    ),
                }
            }
        }
    }
}

impl Machine for Hermes {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::Call { .. } => Self::call_text(out, &mut self.state, text),
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        if let State::Call {
            scan,
            closed,
            broken,
            body,
        } = &mut self.state
        {
            let inside_json = !*closed && !*broken && scan.started();
            if inside_json {
                Self::call_text(out, &mut self.state, literal);
                return;
            }
            if !*closed {
                let reason = if *broken {
                    "the call is not a JSON object"
                } else {
                    "the call is empty"
                };
                out.fail(reason, &format!("<tool_call>{body}"));
            }
            self.state = State::Text;
            if marker == END_CALL {
                return;
            }
        }
        match marker {
            THINK => self.reasoning = true,
            END_THINK => self.reasoning = false,
            CALL => {
                self.reasoning = false;
                self.state = State::Call {
                    scan: JsonScan::default(),
                    body: String::new(),
                    closed: false,
                    broken: false,
                };
            }
            // A stray `</tool_call>` outside a call is markup, never content.
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        if let State::Call {
            closed: false,
            body,
            ..
        } = &self.state
        {
            out.fail(
                "output ended inside the call",
                &format!("<tool_call>{body}"),
            );
        }
        self.state = State::Text;
    }
}
