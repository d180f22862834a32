//! `kimi_k3` (Kimi K3 "XTML"): elements `<|open|>TAG attrs<|sep|>…<|close|>TAG<|sep|>`, an
//! assistant message being `think`, then `response`, then optionally
//! `tools` holding `<|open|>call tool="NAME" index="N"<|sep|>` with one
//! `<|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>` per argument.
//!
//! The output starts inside `think` or `response`, whichever the generation prompt opened.
//! `type="string"` values are raw text and stream as JSON strings; other types are JSON
//! (typed by the tool's schema should they not parse). Attribute values unescape `&amp;` and
//! `&quot;`. A call cut off by the end of output is reported as [`crate::ParseEvent::Invalid`].
//! Known limit: marker text written inside a value (`<|close|>` as ordinary tokens) cannot be
//! told from the real marker in text; only token ids could.

use serde_json::Value;

use super::args::ArgsWriter;
use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"];
const OPEN: usize = 0;
const CLOSE: usize = 1;
const SEP: usize = 2;

#[derive(Debug)]
enum Place {
    Think,
    Response,
    /// Inside `tools` or `message`, between elements.
    Between,
    /// An argument: its key, and the text so far or `None` while streaming a string.
    Argument {
        key: String,
        buffer: Option<String>,
    },
}

#[derive(Debug)]
enum State {
    In(Place),
    /// Reading a tag up to `<|sep|>`; `open` tells `<|open|>` from `<|close|>`, and `place`
    /// is where the tag began (the argument a close tag ends).
    Tag {
        open: bool,
        text: String,
        place: Place,
    },
}

#[derive(Debug)]
pub(crate) struct KimiK3 {
    state: State,
    args: ArgsWriter,
}

impl KimiK3 {
    pub(crate) fn new(reasoning: bool) -> Self {
        let place = if reasoning {
            Place::Think
        } else {
            Place::Response
        };
        Self {
            state: State::In(place),
            args: ArgsWriter::default(),
        }
    }

    fn open_tag(&mut self, out: &mut Out, tag: &str) {
        let (name, attributes) = tag
            .trim()
            .split_once(char::is_whitespace)
            .unwrap_or((tag.trim(), ""));
        let place = match name {
            "think" => Place::Think,
            "response" => Place::Response,
            "call" => {
                let tool = attribute(attributes, "tool").unwrap_or_default();
                out.start(&tool);
                self.args = ArgsWriter::default();
                Place::Between
            }
            "argument" | "json" if out.in_call() => {
                let key = attribute(attributes, "key").unwrap_or_default();
                let kind = attribute(attributes, "type").unwrap_or_default();
                if name == "argument" && kind == "string" {
                    self.args.open_string(out, &key);
                    Place::Argument { key, buffer: None }
                } else {
                    Place::Argument {
                        key,
                        buffer: Some(String::new()),
                    }
                }
            }
            _ => Place::Between,
        };
        self.state = State::In(place);
    }

    fn close_tag(&mut self, out: &mut Out, tag: &str, place: Place) {
        self.state = State::In(Place::Between);
        match tag.trim() {
            "argument" | "json" => {
                if let Place::Argument { key, buffer } = place {
                    match buffer {
                        None => self.args.close_string(out),
                        Some(raw) => {
                            let value =
                                serde_json::from_str::<Value>(raw.trim()).unwrap_or_else(|_| {
                                    let tool = out.call_name().unwrap_or_default().to_owned();
                                    out.tools.typed_value(&tool, &key, &raw)
                                });
                            if tag.trim() == "json" {
                                // Arguments that were not an object, written whole.
                                out.arguments(&value.to_string());
                            } else {
                                self.args.value(out, &key, &value);
                            }
                        }
                    }
                }
            }
            "call" => {
                self.args.close(out);
                out.end();
            }
            _ => {}
        }
    }
}

/// The value of `name="…"` in a tag's attributes, unescaped.
fn attribute(attributes: &str, name: &str) -> Option<String> {
    let start = attributes.find(&format!("{name}=\""))? + name.len() + 2;
    let end = attributes[start..].find('"')? + start;
    Some(
        attributes[start..end]
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
}

impl Machine for KimiK3 {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Tag { text: tag, .. } => tag.push_str(text),
            State::In(Place::Think) => out.reasoning(text),
            State::In(Place::Response) => out.content(text),
            State::In(Place::Argument {
                buffer: Some(buffer),
                ..
            }) => buffer.push_str(text),
            State::In(Place::Argument { buffer: None, .. }) => self.args.string_text(out, text),
            State::In(Place::Between) => {}
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match (&mut self.state, marker) {
            (State::Tag { text, .. }, SEP) => {
                let text = std::mem::take(text);
                if let State::Tag { open, place, .. } =
                    std::mem::replace(&mut self.state, State::In(Place::Between))
                {
                    if open {
                        self.open_tag(out, &text)
                    } else {
                        self.close_tag(out, &text, place)
                    }
                }
            }
            (State::Tag { text, .. }, _) => text.push_str(literal),
            (State::In(Place::Argument { .. }), OPEN) => self.text(out, literal),
            (State::In(_), OPEN | CLOSE) => {
                if let State::In(place) =
                    std::mem::replace(&mut self.state, State::In(Place::Between))
                {
                    self.state = State::Tag {
                        open: marker == OPEN,
                        text: String::new(),
                        place,
                    };
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        if out.in_call() {
            out.fail("output ended inside the call", "");
        }
    }
}
