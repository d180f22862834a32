//! `llama3_json` (Llama 3.1/3.2/3.3): the whole reply is one JSON object
//! `{"name": …, "parameters"|"arguments": {…}}`, optionally after `<|python_tag|>`, several
//! separated by `;`.
//!
//! A JSON object at the start of the output (or after `<|python_tag|>` or `;` between calls)
//! is held until it closes, then becomes a call if it has a `name` and arguments, and is
//! returned unchanged as content otherwise, so a JSON answer is never mistaken for a call.
//! An object cut off by the end of output is content, unless `<|python_tag|>` announced a
//! call: then it is reported as [`crate::ParseEvent::Invalid`].

use serde_json::Value;

use super::emit_json_call;
use crate::Machine;
use crate::json_scan::{JsonScan, Scan};
use crate::out::Out;

const MARKERS: &[&str] = &["<|python_tag|>", "<|eom_id|>", "<|eot_id|>"];
const PYTHON_TAG: usize = 0;

#[derive(Debug)]
enum State {
    /// Before anything but blanks; a `{` here may open a call.
    Start {
        blank: String,
        tagged: bool,
    },
    Object {
        scan: JsonScan,
        text: String,
        tagged: bool,
    },
    /// After a call: blanks and `;` then `{` lead to another call, anything else is content.
    AfterCall {
        gap: String,
    },
    Content,
}

#[derive(Debug)]
pub(crate) struct LlamaJson {
    state: State,
}

impl LlamaJson {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Start {
                blank: String::new(),
                tagged: false,
            },
        }
    }

    fn object_done(&mut self, out: &mut Out, text: String, tagged: bool) {
        let call = serde_json::from_str::<Value>(&text).ok().filter(|value| {
            value.get("name").is_some_and(Value::is_string)
                && (value.get("parameters").is_some() || value.get("arguments").is_some())
        });
        match call {
            Some(call) => match emit_json_call(out, &call) {
                Ok(()) => self.state = State::AfterCall { gap: String::new() },
                Err(reason) => {
                    out.fail(&reason, &text);
                    self.state = State::Content;
                }
            },
            None if tagged => {
                out.fail("<|python_tag|> was not followed by a call object", &text);
                self.state = State::Content;
            }
            None => {
                out.content(&text);
                self.state = State::Content;
            }
        }
    }
}

impl Machine for LlamaJson {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Content => out.content(text),
            State::Start { blank, tagged } => {
                let trimmed = text.trim_start();
                if trimmed.is_empty() {
                    blank.push_str(text);
                } else if trimmed.starts_with('{') {
                    let tagged = *tagged;
                    self.state = State::Object {
                        scan: JsonScan::default(),
                        text: String::new(),
                        tagged,
                    };
                    self.text(out, trimmed);
                } else {
                    let mut content = std::mem::take(blank);
                    content.push_str(text);
                    self.state = State::Content;
                    out.content(&content);
                }
            }
            State::AfterCall { gap } => {
                let rest = text.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
                if rest.is_empty() {
                    gap.push_str(text);
                } else if rest.starts_with('{') {
                    self.state = State::Object {
                        scan: JsonScan::default(),
                        text: String::new(),
                        tagged: false,
                    };
                    self.text(out, rest);
                } else {
                    let mut content = std::mem::take(gap);
                    content.push_str(text);
                    self.state = State::Content;
                    out.content(&content);
                }
            }
            State::Object {
                scan,
                text: body,
                tagged,
            } => match scan.feed(text) {
                Scan::More => body.push_str(text),
                Scan::NotJson => {
                    body.push_str(text);
                    let body = std::mem::take(body);
                    self.state = State::Content;
                    out.content(&body);
                }
                Scan::Done(end) => {
                    body.push_str(&text[..end]);
                    let (body, tagged) = (std::mem::take(body), *tagged);
                    self.object_done(out, body, tagged);
                    self.text(out, &text[end..]);
                }
            },
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Object { .. } => self.text(out, literal),
            _ if marker == PYTHON_TAG => {
                self.state = State::Start {
                    blank: String::new(),
                    tagged: true,
                }
            }
            // End-of-message tokens are markup.
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        if let State::Object { text, tagged, .. } = &self.state {
            if *tagged || text.trim_start().starts_with("{\"name\"") {
                out.fail("output ended inside the call object", text);
            } else {
                let text = text.clone();
                out.content(&text);
            }
        }
        self.state = State::Content;
    }
}
