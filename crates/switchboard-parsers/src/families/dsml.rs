//! DeepSeek's DSML markup: `deepseek_v32` (`<｜DSML｜function_calls>`), `deepseek_v4`
//! (`<｜DSML｜tool_calls>`) and `deepseek_v41` (`<｜DSML｜ calls>`, every tag name with a
//! leading space). Inside: `<｜DSML｜invoke name="NAME">` and
//! `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>`, with
//! `<think>…</think>` reasoning.
//!
//! `string="true"` values are raw text and stream as JSON strings; `string="false"` values
//! are JSON (typed by the tool's schema when they are not). A missing `</｜DSML｜parameter>`
//! is tolerated where the next parameter or `</｜DSML｜invoke>` follows; an invoke may be
//! self-closing (`<｜DSML｜invoke name="x"/>`) or appear without its section. An invoke cut
//! off by the end of output is reported as [`crate::ParseEvent::Invalid`].

use super::args::ArgsWriter;
use crate::Machine;
use crate::out::Out;

const V32: &[&str] = &[
    "<think>",
    "</think>",
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    "<｜DSML｜invoke name=\"",
    "</｜DSML｜invoke>",
    "<｜DSML｜parameter name=\"",
    "</｜DSML｜parameter>",
    "<｜end▁of▁sentence｜>",
];
const V4: &[&str] = &[
    "<think>",
    "</think>",
    "<｜DSML｜tool_calls>",
    "</｜DSML｜tool_calls>",
    "<｜DSML｜invoke name=\"",
    "</｜DSML｜invoke>",
    "<｜DSML｜parameter name=\"",
    "</｜DSML｜parameter>",
    "<｜end▁of▁sentence｜>",
];
const V41: &[&str] = &[
    "<think>",
    "</think>",
    "<｜DSML｜ calls>",
    "</｜DSML｜ calls>",
    "<｜DSML｜ invoke name=\"",
    "</｜DSML｜ invoke>",
    "<｜DSML｜ parameter name=\"",
    "</｜DSML｜ parameter>",
    "<｜end▁of▁sentence｜>",
];
const THINK: usize = 0;
const END_THINK: usize = 1;
const SECTION: usize = 2;
const END_SECTION: usize = 3;
const INVOKE: usize = 4;
const END_INVOKE: usize = 5;
const PARAMETER: usize = 6;
const END_PARAMETER: usize = 7;

/// Which DSML generation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dsml {
    V32,
    V4,
    V41,
}

#[derive(Debug)]
enum State {
    Text,
    Section,
    /// The invoke's open tag after `name="`, up to `>`.
    InvokeTag(String),
    Invoke,
    /// The parameter's open tag after `name="`, up to `>`.
    ParameterTag(String),
    /// A value: its key, and the text so far, or `None` while streaming a string.
    Value {
        key: String,
        buffer: Option<String>,
    },
}

#[derive(Debug)]
pub(crate) struct DsmlParser {
    markers: &'static [&'static str],
    reasoning: bool,
    state: State,
    args: ArgsWriter,
}

impl DsmlParser {
    pub(crate) fn new(version: Dsml, reasoning: bool) -> Self {
        let markers = match version {
            Dsml::V32 => V32,
            Dsml::V4 => V4,
            Dsml::V41 => V41,
        };
        Self {
            markers,
            reasoning,
            state: State::Text,
            args: ArgsWriter::default(),
        }
    }

    fn close_value(&mut self, out: &mut Out) {
        if let State::Value { key, buffer } = std::mem::replace(&mut self.state, State::Invoke) {
            match buffer {
                None => self.args.close_string(out),
                Some(raw) => {
                    let value = match serde_json::from_str(raw.trim()) {
                        Ok(value) => value,
                        Err(_) => {
                            let tool = out.call_name().unwrap_or_default().to_owned();
                            out.tools.typed_value(&tool, &key, &raw)
                        }
                    };
                    self.args.value(out, &key, &value);
                }
            }
        }
    }

    fn end_invoke(&mut self, out: &mut Out) {
        self.args.close(out);
        out.end();
        self.state = State::Section;
    }
}

impl Machine for DsmlParser {
    fn markers(&self) -> &'static [&'static str] {
        self.markers
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::Section | State::Invoke => {}
            State::InvokeTag(tag) | State::ParameterTag(tag) => {
                // The rest of `NAME">`, `KEY" string="true">` or `NAME"/>`.
                let Some(end) = text.find('>') else {
                    tag.push_str(text);
                    return;
                };
                tag.push_str(&text[..end]);
                let tag = std::mem::take(tag);
                let (name, attributes) = tag.split_once('"').unwrap_or((tag.as_str(), ""));
                if matches!(self.state, State::InvokeTag(_)) {
                    out.start(name);
                    self.args = ArgsWriter::default();
                    self.state = State::Invoke;
                    if attributes.trim_end().ends_with('/') {
                        self.end_invoke(out);
                    }
                } else {
                    let raw = attributes.contains("string=\"false\"");
                    if raw {
                        self.state = State::Value {
                            key: name.to_owned(),
                            buffer: Some(String::new()),
                        };
                    } else {
                        self.args.open_string(out, name);
                        self.state = State::Value {
                            key: name.to_owned(),
                            buffer: None,
                        };
                    }
                }
                self.text(out, &text[end + 1..]);
            }
            State::Value {
                buffer: Some(buffer),
                ..
            } => buffer.push_str(text),
            State::Value { buffer: None, .. } => self.args.string_text(out, text),
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &self.state {
            State::Value { .. } => match marker {
                END_PARAMETER => self.close_value(out),
                PARAMETER => {
                    self.close_value(out);
                    self.state = State::ParameterTag(String::new());
                }
                END_INVOKE => {
                    self.close_value(out);
                    self.end_invoke(out);
                }
                _ => self.text(out, literal),
            },
            State::InvokeTag(tag) | State::ParameterTag(tag) => {
                out.fail("a DSML tag was not closed with '>'", tag);
                self.state = State::Section;
            }
            State::Invoke => match marker {
                PARAMETER => self.state = State::ParameterTag(String::new()),
                END_INVOKE => self.end_invoke(out),
                END_PARAMETER => {}
                _ => {
                    out.fail("the invoke was not closed", literal);
                    self.state = State::Section;
                    self.marker(out, marker, literal);
                }
            },
            State::Section => match marker {
                INVOKE => self.state = State::InvokeTag(String::new()),
                END_SECTION => self.state = State::Text,
                _ => {}
            },
            State::Text => match marker {
                THINK => self.reasoning = true,
                END_THINK => self.reasoning = false,
                SECTION => {
                    self.reasoning = false;
                    self.state = State::Section;
                }
                INVOKE => {
                    self.reasoning = false;
                    self.state = State::InvokeTag(String::new());
                }
                _ => {}
            },
        }
    }

    fn end(&mut self, out: &mut Out) {
        match &self.state {
            State::InvokeTag(tag) => out.fail("output ended inside an invoke tag", tag),
            State::Text | State::Section => {}
            _ => out.fail("output ended inside the invoke", ""),
        }
        self.state = State::Text;
    }
}
