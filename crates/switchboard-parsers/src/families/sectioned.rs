//! Formats that wrap JSON-argument calls in a section of special tokens, with
//! `<think>…</think>` reasoning (often only the closing tag, the prompt having opened it):
//! - `deepseek_v3` (V3, R1): `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`;
//! - `deepseek_v31`: the same with `NAME<｜tool▁sep｜>{…}`, no type word and no fence;
//! - `kimi_k2`: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>`,
//!   the name read from the call id (a bare `NAME:IDX` is accepted too).
//!
//! Arguments stream as they arrive and end where the JSON object closes; markup inside its
//! strings is text. A call whose JSON never closes, or whose name or arguments are missing,
//! is reported as [`crate::ParseEvent::Invalid`]; stray text between calls is reported the
//! same way and parsing goes on.

use super::args::{Fed, RawJsonArgs};
use crate::Machine;
use crate::out::Out;

const DEEPSEEK: &[&str] = &[
    "<think>",
    "</think>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
    "```json",
    "```",
    "<｜end▁of▁sentence｜>",
];
/// Kimi's markers in the same roles; it has no fences.
const KIMI: &[&str] = &[
    "<think>",
    "</think>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call_argument_begin|>",
];
const THINK: usize = 0;
const END_THINK: usize = 1;
const SECTION: usize = 2;
const END_SECTION: usize = 3;
const CALL: usize = 4;
const END_CALL: usize = 5;
const SEP: usize = 6;
const FENCE: usize = 7;
const FENCE_END: usize = 8;

#[derive(Debug)]
enum State {
    Text,
    /// Inside the calls section, between calls; the text seen there.
    Section(String),
    /// After `<｜tool▁call▁begin｜>`, before `<｜tool▁sep｜>`.
    Head(String),
    /// V3: after `<｜tool▁sep｜>`, the name up to the code fence.
    Name(String),
    Args(RawJsonArgs),
    /// The arguments are complete (or broken, and the rest of the call is skipped); the
    /// closing fence and call end follow.
    AfterArgs,
}

/// Which family's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    DeepseekV3,
    DeepseekV31,
    KimiK2,
}

#[derive(Debug)]
pub(crate) struct Sectioned {
    layout: Layout,
    reasoning: bool,
    state: State,
}

impl Sectioned {
    pub(crate) fn new(layout: Layout, reasoning: bool) -> Self {
        Self {
            layout,
            reasoning,
            state: State::Text,
        }
    }

    fn start(&mut self, out: &mut Out, name: &str) {
        let mut name = name.trim();
        if self.layout == Layout::KimiK2 {
            // `functions.NAME:IDX`: the id carries the name.
            name = name.strip_prefix("functions.").unwrap_or(name);
            if let Some((base, index)) = name.rsplit_once(':')
                && index.bytes().all(|b| b.is_ascii_digit())
            {
                name = base;
            }
        }
        if name.is_empty() {
            out.fail("a call without a name", "");
            self.state = State::Section(String::new());
        } else {
            out.start(name);
            self.state = State::Args(RawJsonArgs::default());
        }
    }
}

impl Machine for Sectioned {
    fn markers(&self) -> &'static [&'static str] {
        match self.layout {
            Layout::KimiK2 => KIMI,
            _ => DEEPSEEK,
        }
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::Section(junk) | State::Head(junk) | State::Name(junk) => junk.push_str(text),
            State::Args(args) => match args.feed(out, text) {
                Fed::More => {}
                Fed::Done(_) => self.state = State::AfterArgs,
                // The rest of a broken call is skipped up to its end, in this piece of text
                // or a later one.
                Fed::Broken => self.state = State::AfterArgs,
            },
            State::AfterArgs => {}
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Args(args) if args.started() => self.text(out, literal),
            State::Text => match marker {
                THINK => self.reasoning = true,
                END_THINK => self.reasoning = false,
                SECTION => {
                    self.reasoning = false;
                    self.state = State::Section(String::new());
                }
                // A bare call without its section opener.
                CALL => self.state = State::Head(String::new()),
                // Code fences outside a call are the user's text.
                FENCE | FENCE_END => self.text(out, literal),
                _ => {}
            },
            State::Section(junk) => match marker {
                CALL | END_SECTION => {
                    if !junk.trim().is_empty() {
                        out.fail("text inside the calls section that is not a call", junk);
                    }
                    self.state = if marker == CALL {
                        State::Head(String::new())
                    } else {
                        State::Text
                    };
                }
                _ => junk.push_str(literal),
            },
            State::Head(head) => match marker {
                SEP if self.layout == Layout::DeepseekV3 => self.state = State::Name(String::new()),
                SEP => {
                    let name = std::mem::take(head);
                    self.start(out, &name);
                }
                _ => {
                    out.fail("a call without <｜tool▁sep｜>", head);
                    self.state = State::Section(String::new());
                }
            },
            State::Name(name) => match marker {
                FENCE => {
                    let name = std::mem::take(name);
                    self.start(out, &name);
                }
                _ => {
                    out.fail("a call without its ```json arguments", name);
                    self.state = State::Section(String::new());
                }
            },
            State::Args(_) => {
                out.fail("the call has no arguments object", literal);
                self.state = if marker == END_SECTION {
                    State::Text
                } else {
                    State::Section(String::new())
                };
            }
            State::AfterArgs => match marker {
                END_CALL => self.state = State::Section(String::new()),
                END_SECTION => self.state = State::Text,
                CALL => self.state = State::Head(String::new()),
                _ => {}
            },
        }
    }

    fn end(&mut self, out: &mut Out) {
        match &self.state {
            State::Head(text) | State::Name(text) => out.fail("output ended inside a call", text),
            _ => {}
        }
        self.state = State::Text;
    }
}
