//! `gpt_oss` (harmony): a sequence of messages
//! `<|start|>assistant[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json| json]<|message|>BODY<|end|>`,
//! the output beginning right after the prompt's `<|start|>assistant`.
//!
//! A message to `functions.NAME` (in the role or the channel part of the header, on the
//! commentary or the analysis channel) is a call whose body is the JSON arguments, streamed
//! as they arrive; markup inside its JSON strings is text. The analysis channel is reasoning;
//! final and recipient-less commentary (preambles) are content; inside them only `<|end|>`
//! and `<|return|>` end the message, so special-token text quoted in reasoning stays. Messages
//! to other recipients (built-in `python`, `browser.*`) and messages on unknown channels are
//! dropped; a header garbled beyond reading is reported as [`crate::ParseEvent::Invalid`]
//! and parsing resumes at the next message.

use super::args::{Fed, RawJsonArgs};
use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &[
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|constrain|>",
];
const START: usize = 0;
const CHANNEL: usize = 1;
const MESSAGE: usize = 2;
const END: usize = 3;
const RETURN: usize = 5;
const CONSTRAIN: usize = 6;

#[derive(Debug)]
enum Body {
    Reasoning,
    Content,
    Call(RawJsonArgs),
    /// The call's JSON is complete; only the end of the message may follow.
    CallDone,
    Ignored,
}

#[derive(Debug)]
enum State {
    /// Header text: before `<|channel|>` (role part) and after it (channel part).
    Header {
        role: String,
        channel: Option<String>,
    },
    Body(Body),
}

#[derive(Debug)]
pub(crate) struct GptOss {
    state: State,
}

fn header() -> State {
    State::Header {
        role: String::new(),
        channel: None,
    }
}

impl GptOss {
    pub(crate) fn new() -> Self {
        Self { state: header() }
    }

    fn open_body(&mut self, out: &mut Out) {
        let State::Header { role, channel } = &self.state else {
            return;
        };
        let channel_text = channel.as_deref().unwrap_or("");
        let recipient = recipient(role).or_else(|| recipient(channel_text));
        let channel_name = channel_text
            .split(|c: char| c.is_whitespace() || c == '<')
            .next()
            .unwrap_or("");
        let body = match recipient {
            Some(to) => match to.strip_prefix("functions.") {
                Some(name) if !name.is_empty() => {
                    out.start(name);
                    Body::Call(RawJsonArgs::default())
                }
                _ => Body::Ignored,
            },
            None => match channel_name {
                "analysis" => Body::Reasoning,
                "final" | "commentary" | "" => Body::Content,
                _ => Body::Ignored,
            },
        };
        self.state = State::Body(body);
    }
}

/// The `to=NAME` recipient in a header part, if any.
fn recipient(header: &str) -> Option<&str> {
    let at = header.find("to=")?;
    let name = header[at + 3..]
        .split(|c: char| c.is_whitespace() || c == '<')
        .next()
        .unwrap_or("");
    (!name.is_empty()).then_some(name)
}

impl Machine for GptOss {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Header {
                role,
                channel: None,
            } => role.push_str(text),
            State::Header {
                channel: Some(channel),
                ..
            } => channel.push_str(text),
            State::Body(Body::Reasoning) => out.reasoning(text),
            State::Body(Body::Content) => out.content(text),
            State::Body(Body::Call(args)) => match args.feed(out, text) {
                Fed::More => {}
                Fed::Done(_) => self.state = State::Body(Body::CallDone),
                Fed::Broken => self.state = State::Body(Body::Ignored),
            },
            State::Body(Body::CallDone | Body::Ignored) => {}
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Body(Body::Call(args)) if args.started() => self.text(out, literal),
            State::Body(Body::Reasoning | Body::Content) if !matches!(marker, END | RETURN) => {
                self.text(out, literal)
            }
            State::Body(body) => {
                if matches!(body, Body::Call(_)) {
                    out.fail("the call message has no JSON arguments", "");
                }
                self.state = header();
            }
            State::Header { role, channel } => match marker {
                CHANNEL => {
                    // A second channel part replaces a stray first one.
                    *channel = Some(String::new());
                }
                CONSTRAIN => {
                    let part = channel.get_or_insert_with(String::new);
                    part.push(' ');
                }
                MESSAGE => self.open_body(out),
                START => {
                    if !role.trim().is_empty() || channel.is_some() {
                        out.fail("a message header without <|message|>", role);
                    }
                    self.state = header();
                }
                _ => {
                    if !role.trim().is_empty() || channel.is_some() {
                        let text = format!("{role}{}", channel.as_deref().unwrap_or(""));
                        out.fail("a message header without <|message|>", &text);
                    }
                    self.state = header();
                }
            },
        }
    }

    fn end(&mut self, out: &mut Out) {
        if let State::Header { role, channel } = &self.state {
            let to = recipient(role).or_else(|| channel.as_deref().and_then(recipient));
            if to.is_some_and(|to| to.starts_with("functions.")) {
                out.fail("output ended inside a call header", role);
            }
        }
        self.state = header();
    }
}
