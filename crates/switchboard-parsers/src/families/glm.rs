//! `glm45` (GLM-4.5/4.6, newline-separated) and `glm47` (GLM-4.7, 5.x, compact):
//! `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>` with
//! `<think>…</think>` reasoning. One machine reads both: blanks between elements are glue.
//!
//! Values are raw text, whitespace included, typed by the tool's schema (`3` is a number only
//! where the schema says so); string parameters stream as they arrive. Inside a value only
//! `</arg_value>` ends it, except that a value left open by `</tool_call>` at the very end
//! of the output (or before the next call) is closed there; a `</tool_call>` followed by more
//! text is part of the value. A call is complete only at `</tool_call>`; one cut off earlier
//! is reported as [`crate::ParseEvent::Invalid`].

use super::args::ArgsWriter;
use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
];
const THINK: usize = 0;
const END_THINK: usize = 1;
const CALL: usize = 2;
const END_CALL: usize = 3;
const KEY: usize = 4;
const END_KEY: usize = 5;
const VALUE: usize = 6;
const END_VALUE: usize = 7;

#[derive(Debug)]
enum State {
    Text,
    Name(String),
    /// Inside the call, between elements; the last key read.
    Call(Option<String>),
    Key(String),
    /// A value: its key, the text so far (or `None` while streaming a string), and a
    /// `</tool_call>` seen inside it whose meaning the next input decides.
    Value {
        key: String,
        buffer: Option<String>,
        pending: Option<String>,
    },
}

#[derive(Debug)]
pub(crate) struct Glm {
    reasoning: bool,
    state: State,
    args: ArgsWriter,
}

impl Glm {
    pub(crate) fn new(reasoning: bool) -> Self {
        Self {
            reasoning,
            state: State::Text,
            args: ArgsWriter::default(),
        }
    }

    fn value_text(&mut self, out: &mut Out, text: &str) {
        let State::Value { buffer, .. } = &mut self.state else {
            return;
        };
        match buffer {
            Some(buffer) => buffer.push_str(text),
            None => self.args.string_text(out, text),
        }
    }

    /// Anything after a `</tool_call>` inside a value shows it was text.
    fn resolve_pending(&mut self, out: &mut Out) {
        if let State::Value { pending, .. } = &mut self.state
            && let Some(literal) = pending.take()
        {
            self.value_text(out, &literal);
        }
    }

    fn close_value(&mut self, out: &mut Out) {
        if let State::Value { key, buffer, .. } =
            std::mem::replace(&mut self.state, State::Call(None))
        {
            match buffer {
                None => self.args.close_string(out),
                Some(raw) => {
                    let tool = out.call_name().unwrap_or_default().to_owned();
                    let value = out.tools.typed_value(&tool, &key, &raw);
                    self.args.value(out, &key, &value);
                }
            }
        }
    }

    fn end_call(&mut self, out: &mut Out) {
        if let State::Name(name) = &self.state {
            let name = name.trim().to_owned();
            out.start(&name);
            self.args = ArgsWriter::default();
        }
        self.args.close(out);
        out.end();
        self.state = State::Text;
    }

    fn start_name(&mut self, out: &mut Out) {
        if let State::Name(name) = &self.state {
            let name = name.trim().to_owned();
            out.start(&name);
            self.args = ArgsWriter::default();
            self.state = State::Call(None);
        }
    }
}

impl Machine for Glm {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::Name(name) => {
                // The name ends at the first newline after it began: blank lines before it
                // are glue, whichever piece of the stream they arrive in.
                let blank = name.trim().is_empty();
                let end = text
                    .match_indices('\n')
                    .map(|(at, _)| at)
                    .find(|&at| !blank || !text[..at].trim().is_empty());
                match end {
                    Some(end) => {
                        name.push_str(&text[..end]);
                        self.start_name(out);
                    }
                    None => name.push_str(text),
                }
            }
            State::Call(_) => {}
            State::Key(key) => key.push_str(text),
            State::Value {
                pending: Some(pending),
                ..
            } if text.trim().is_empty() => pending.push_str(text),
            State::Value { .. } => {
                self.resolve_pending(out);
                self.value_text(out, text);
            }
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Value { pending, .. } => match marker {
                CALL if pending.is_some() => {
                    self.close_value(out);
                    self.end_call(out);
                    self.marker(out, marker, literal);
                }
                END_VALUE => {
                    self.resolve_pending(out);
                    self.close_value(out);
                }
                END_CALL if pending.is_none() => *pending = Some(literal.to_owned()),
                _ => {
                    self.resolve_pending(out);
                    self.value_text(out, literal);
                }
            },
            State::Name(_) => {
                self.start_name(out);
                match marker {
                    KEY => self.state = State::Key(String::new()),
                    END_CALL => self.end_call(out),
                    _ => {}
                }
            }
            State::Key(key) => {
                if marker == END_KEY {
                    let key = key.trim().to_owned();
                    self.state = State::Call(Some(key));
                }
            }
            State::Call(key) => match marker {
                KEY => self.state = State::Key(String::new()),
                VALUE => {
                    let key = key.take().unwrap_or_default();
                    let tool = out.call_name().unwrap_or_default().to_owned();
                    let buffer = if out.tools.is_string(&tool, &key) {
                        self.args.open_string(out, &key);
                        None
                    } else {
                        Some(String::new())
                    };
                    self.state = State::Value {
                        key,
                        buffer,
                        pending: None,
                    };
                }
                END_CALL => self.end_call(out),
                CALL => {
                    out.fail("a new call began before </tool_call>", "");
                    self.state = State::Name(String::new());
                }
                _ => {}
            },
            State::Text => match marker {
                THINK => self.reasoning = true,
                END_THINK => self.reasoning = false,
                CALL => {
                    self.reasoning = false;
                    self.state = State::Name(String::new());
                }
                _ => {}
            },
        }
    }

    fn end(&mut self, out: &mut Out) {
        match &self.state {
            State::Value {
                pending: Some(_), ..
            } => {
                self.close_value(out);
                self.end_call(out);
            }
            State::Text => {}
            _ => out.fail("output ended inside the call", ""),
        }
        self.state = State::Text;
    }
}
