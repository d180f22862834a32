//! `gemma4`: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,obj:{k:[1,<|"|>a<|"|>]}}<tool_call|>`,
//! an object notation that is not JSON (bare keys, strings between `<|"|>` tokens with
//! nothing escaped), and `<|channel>thought\n…<channel|>` reasoning.
//!
//! A call is read whole when `<tool_call|>` arrives outside a string, then converted to JSON
//! (bare words become numbers, booleans, null, or strings). A call without `{…}`, one that
//! does not parse, or one cut off by the end of output is reported as
//! [`crate::ParseEvent::Invalid`]; text after a call is content.

use serde_json::{Map, Number, Value};

use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &[
    "<|channel>",
    "<channel|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "<|tool_response>",
    "<turn|>",
];
const CHANNEL: usize = 0;
const END_CHANNEL: usize = 1;
const CALL: usize = 2;
const END_CALL: usize = 3;
const QUOTE: usize = 4;

/// A lexical piece of a call body.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Punct(char),
    Word(String),
    Str(String),
}

#[derive(Debug)]
enum State {
    Text,
    /// After `<|channel>`: the channel name up to its newline.
    ChannelName(String),
    /// Inside `<|tool_call>`: the raw head (`call:NAME{…`) and the body's pieces.
    Call {
        head: String,
        body: Vec<Tok>,
        in_string: bool,
        opened: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Gemma4 {
    reasoning: bool,
    state: State,
}

impl Gemma4 {
    pub(crate) fn new(reasoning: bool) -> Self {
        Self {
            reasoning,
            state: State::Text,
        }
    }
}

/// Splits raw (non-string) body text into punctuation and bare words.
fn lex(text: &str, body: &mut Vec<Tok>) {
    for piece in text.split_inclusive(['{', '}', '[', ']', ':', ',']) {
        let (word, punct) = match piece.chars().last() {
            Some(last @ ('{' | '}' | '[' | ']' | ':' | ',')) => {
                (&piece[..piece.len() - 1], Some(last))
            }
            _ => (piece, None),
        };
        if !word.trim().is_empty() {
            // A word split across chunks continues the previous one.
            match body.last_mut() {
                Some(Tok::Word(previous)) => previous.push_str(word),
                _ => body.push(Tok::Word(word.to_owned())),
            }
        } else if let (Some(Tok::Word(previous)), false) = (body.last_mut(), word.is_empty()) {
            previous.push_str(word);
        }
        if let Some(punct) = punct {
            body.push(Tok::Punct(punct));
        }
    }
}

impl Machine for Gemma4 {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Text if self.reasoning => out.reasoning(text),
            State::Text => out.content(text),
            State::ChannelName(name) => match text.find('\n') {
                Some(end) => {
                    name.push_str(&text[..end]);
                    self.reasoning = name.trim() == "thought";
                    self.state = State::Text;
                    self.text(out, &text[end + 1..]);
                }
                None => name.push_str(text),
            },
            State::Call {
                body,
                in_string: true,
                ..
            } => match body.last_mut() {
                Some(Tok::Str(string)) => string.push_str(text),
                _ => body.push(Tok::Str(text.to_owned())),
            },
            State::Call {
                head, body, opened, ..
            } => {
                if *opened {
                    lex(text, body);
                } else if let Some(at) = text.find('{') {
                    head.push_str(&text[..at]);
                    *opened = true;
                    lex(&text[at..], body);
                } else {
                    head.push_str(text);
                }
            }
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match &mut self.state {
            State::Call {
                body,
                in_string,
                opened,
                ..
            } if marker == QUOTE && *opened => {
                if !*in_string {
                    body.push(Tok::Str(String::new()));
                }
                *in_string = !*in_string;
            }
            State::Call {
                in_string: true, ..
            } => self.text(out, literal),
            State::Call { head, body, .. } => {
                let (head, body) = (std::mem::take(head), std::mem::take(body));
                self.state = State::Text;
                let name = head
                    .trim()
                    .strip_prefix("call:")
                    .unwrap_or(head.trim())
                    .trim()
                    .to_owned();
                let arguments = Reader { toks: &body, at: 0 }.object_whole();
                match (marker, arguments) {
                    (END_CALL, Some(arguments)) if !name.is_empty() => {
                        out.start(&name);
                        out.arguments(&Value::Object(arguments).to_string());
                        out.end();
                    }
                    (END_CALL, _) => out.fail("the call is not NAME{…} in Gemma's notation", &head),
                    _ => {
                        out.fail("the call was not closed with <tool_call|>", &head);
                        self.marker(out, marker, literal);
                    }
                }
            }
            State::ChannelName(_) => {
                // `<|channel>thought<channel|>`: an empty channel.
                self.state = State::Text;
                self.reasoning = false;
            }
            State::Text => match marker {
                CHANNEL => self.state = State::ChannelName(String::new()),
                END_CHANNEL => self.reasoning = false,
                CALL => {
                    self.reasoning = false;
                    self.state = State::Call {
                        head: String::new(),
                        body: Vec::new(),
                        in_string: false,
                        opened: false,
                    };
                }
                _ => {}
            },
        }
    }

    fn end(&mut self, out: &mut Out) {
        if let State::Call { head, .. } = &self.state {
            out.fail("output ended inside the call", head);
        }
        self.state = State::Text;
    }
}

/// Reads Gemma's object notation into JSON.
struct Reader<'a> {
    toks: &'a [Tok],
    at: usize,
}

impl Reader<'_> {
    /// The whole body as one object, or `None`.
    fn object_whole(mut self) -> Option<Map<String, Value>> {
        match self.value()? {
            Value::Object(map) if self.at == self.toks.len() => Some(map),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<&Tok> {
        let tok = self.toks.get(self.at)?;
        self.at += 1;
        Some(tok)
    }

    fn eat(&mut self, punct: char) -> bool {
        let found = self.toks.get(self.at) == Some(&Tok::Punct(punct));
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Option<Value> {
        match self.next()?.clone() {
            Tok::Punct('{') => {
                let mut map = Map::new();
                if self.eat('}') {
                    return Some(Value::Object(map));
                }
                loop {
                    let key = match self.next()? {
                        Tok::Word(word) => word.trim().to_owned(),
                        Tok::Str(text) => text.clone(),
                        Tok::Punct(_) => return None,
                    };
                    if !self.eat(':') {
                        return None;
                    }
                    let value = self.value()?;
                    map.insert(key, value);
                    if self.eat('}') {
                        return Some(Value::Object(map));
                    }
                    if !self.eat(',') {
                        return None;
                    }
                }
            }
            Tok::Punct('[') => {
                let mut items = Vec::new();
                if self.eat(']') {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(']') {
                        return Some(Value::Array(items));
                    }
                    if !self.eat(',') {
                        return None;
                    }
                }
            }
            Tok::Punct(_) => None,
            Tok::Str(text) => Some(Value::String(text)),
            Tok::Word(word) => Some(bare(word.trim())),
        }
    }
}

fn bare(word: &str) -> Value {
    match word {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => {
            if let Ok(int) = word.parse::<i64>() {
                return Value::from(int);
            }
            match word
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(Number::from_f64)
            {
                Some(number) => Value::Number(number),
                None => Value::String(word.to_owned()),
            }
        }
    }
}
