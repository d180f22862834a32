//! `qwen3_coder` / `qwen3_xml` (Qwen3-Coder, Qwen3.5 and later):
//! `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
//!
//! Values are raw text typed by the tool's schema (`3` is a number only where the schema says
//! so; `True`/`None` from older templates become booleans and null where the schema asks);
//! exactly one wrapping newline on each side is markup. String parameters stream as they
//! arrive. Inside a value only a line-initial `</parameter>`, `<parameter=` or `</function>`
//! (or a `</parameter>` anywhere) ends it, so markup quoted mid-line stays in the value.
//! Tolerated: a missing `<tool_call>` (bare `<function=`), a missing `</parameter>`, and a
//! `<tool_call>` inside reasoning, which ends the reasoning. A call cut off before
//! `</function>` is reported as [`crate::ParseEvent::Invalid`] and never returned.

use serde_json::Value;

use super::args::ArgsWriter;
use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "\n</function>",
    "<parameter=",
    "\n<parameter=",
    "</parameter>",
    "\n</parameter>",
];
const THINK: usize = 0;
const END_THINK: usize = 1;
const CALL: usize = 2;
const END_CALL: usize = 3;
const FUNCTION: usize = 4;
const END_FUNCTION: usize = 5;
const NL_END_FUNCTION: usize = 6;
const PARAMETER: usize = 7;
const NL_PARAMETER: usize = 8;
const END_PARAMETER: usize = 9;
const NL_END_PARAMETER: usize = 10;

#[derive(Debug)]
enum State {
    Text,
    /// After `<tool_call>`, before `<function=`.
    Call,
    FunctionName(String),
    Function,
    ParameterName(String),
    /// A value: its key, whether its first byte is still to come, whether it began with the
    /// template's newline, and either the text so far or `None` while streaming a string.
    Value {
        key: String,
        fresh: bool,
        wrapped: bool,
        buffer: Option<String>,
    },
    /// After `</function>`, before `</tool_call>`, with the blank text seen there.
    AfterFunction(String),
}

#[derive(Debug)]
pub(crate) struct QwenXml {
    reasoning: bool,
    state: State,
    args: ArgsWriter,
}

impl QwenXml {
    pub(crate) fn new(reasoning: bool) -> Self {
        Self {
            reasoning,
            state: State::Text,
            args: ArgsWriter::default(),
        }
    }

    fn open_value(&mut self, out: &mut Out, key: String) {
        let tool = out.call_name().unwrap_or_default().to_owned();
        let streams = out.tools.is_string(&tool, &key);
        if streams {
            self.args.open_string(out, &key);
        }
        let buffer = (!streams).then(String::new);
        self.state = State::Value {
            key,
            fresh: true,
            wrapped: false,
            buffer,
        };
    }

    fn close_value(&mut self, out: &mut Out) {
        if let State::Value { key, buffer, .. } =
            std::mem::replace(&mut self.state, State::Function)
        {
            match buffer {
                None => self.args.close_string(out),
                Some(raw) => {
                    let tool = out.call_name().unwrap_or_default().to_owned();
                    let value: Value = out.tools.typed_value(&tool, &key, &raw);
                    self.args.value(out, &key, &value);
                }
            }
        }
    }

    fn end_function(&mut self, out: &mut Out) {
        self.args.close(out);
        out.end();
        self.state = State::AfterFunction(String::new());
    }

    fn value_text(&mut self, out: &mut Out, text: &str) {
        let State::Value {
            fresh,
            wrapped,
            buffer,
            ..
        } = &mut self.state
        else {
            return;
        };
        if text.is_empty() {
            return;
        }
        let text = if *fresh {
            *fresh = false;
            *wrapped = text.starts_with('\n');
            text.strip_prefix('\n').unwrap_or(text)
        } else {
            text
        };
        match buffer {
            Some(buffer) => buffer.push_str(text),
            None => self.args.string_text(out, text),
        }
    }

    fn start_function(&mut self) {
        self.reasoning = false;
        self.state = State::FunctionName(String::new());
    }
}

impl Machine for QwenXml {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::FunctionName(name) | State::ParameterName(name) => {
                let Some(end) = text.find('>') else {
                    name.push_str(text);
                    return;
                };
                name.push_str(&text[..end]);
                let name = name.trim().to_owned();
                let rest = &text[end + 1..];
                if matches!(self.state, State::FunctionName(_)) {
                    out.start(&name);
                    self.args = ArgsWriter::default();
                    self.state = State::Function;
                } else {
                    self.open_value(out, name);
                }
                self.text(out, rest);
            }
            State::Value { .. } => self.value_text(out, text),
            State::AfterFunction(blank) => {
                if text.trim().is_empty() {
                    blank.push_str(text);
                } else {
                    let mut content = std::mem::take(blank);
                    content.push_str(text);
                    self.state = State::Text;
                    out.content(&content);
                }
            }
            State::Call | State::Function => {}
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match (&self.state, marker) {
            // In the template's layout a value ends at a line-initial `</parameter>`; a mid-line
            // one closes only a value written without the wrapping newline.
            (State::Value { wrapped: true, .. }, END_PARAMETER) => self.value_text(out, literal),
            (State::Value { .. }, END_PARAMETER | NL_END_PARAMETER) => self.close_value(out),
            (State::Value { .. }, NL_PARAMETER) => {
                self.close_value(out);
                self.state = State::ParameterName(String::new());
            }
            (State::Value { .. }, NL_END_FUNCTION) => {
                self.close_value(out);
                self.end_function(out);
            }
            (State::Value { .. }, _) => self.value_text(out, literal),
            (State::FunctionName(_) | State::ParameterName(_), _) => {
                out.fail(
                    "a function or parameter name was not closed with '>'",
                    literal,
                );
                self.state = State::Text;
            }
            (State::Function, PARAMETER | NL_PARAMETER) => {
                self.state = State::ParameterName(String::new())
            }
            (State::Function, END_FUNCTION | NL_END_FUNCTION) => self.end_function(out),
            (State::Function, END_PARAMETER | NL_END_PARAMETER) => {}
            (State::Function, _) => {
                out.fail("the call ended without </function>", literal);
                self.state = State::Text;
                self.marker(out, marker, literal);
            }
            (State::Call | State::AfterFunction(_), FUNCTION) => self.start_function(),
            (State::Call | State::AfterFunction(_), END_CALL) => self.state = State::Text,
            (State::Call | State::AfterFunction(_), CALL) => self.state = State::Call,
            (State::Call | State::AfterFunction(_), _) => {
                self.state = State::Text;
                self.marker(out, marker, literal);
            }
            (State::Text, THINK) => self.reasoning = true,
            (State::Text, END_THINK) => self.reasoning = false,
            (State::Text, CALL) => {
                self.reasoning = false;
                self.state = State::Call;
            }
            (State::Text, FUNCTION) => self.start_function(),
            // Other markup outside a call (a stray `</tool_call>`) is dropped, never content.
            (State::Text, _) => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        match self.state {
            State::Text | State::AfterFunction(_) => {}
            State::Call => out.fail("output ended right after <tool_call>", "<tool_call>"),
            _ => out.fail("output ended inside the call", ""),
        }
        self.state = State::Text;
    }
}
