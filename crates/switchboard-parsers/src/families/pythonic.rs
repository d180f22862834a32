//! `pythonic` (Llama 3.2 and 4, and others prompted for it): the reply is a Python list of
//! calls with keyword arguments and Python literals, `[get_weather(city="Paris"), add(a=1, b=2)]`.
//!
//! A `[` at the start of the output (or after `<|python_start|>`) is held until the list
//! closes; it becomes calls if it parses as a list of calls, and is returned unchanged as
//! content otherwise. A list cut off by the end of output is reported as
//! [`crate::ParseEvent::Invalid`] when it begins like a call (`[name(`), and is content
//! otherwise. Literals: strings in either quote with Python escapes, numbers, `True`,
//! `False`, `None`, lists, tuples and dicts.

use serde_json::{Map, Number, Value};

use crate::Machine;
use crate::out::Out;

const MARKERS: &[&str] = &["<|python_start|>", "<|python_end|>"];
const PYTHON_START: usize = 0;

/// Finds the end of a bracketed Python expression, skipping brackets inside strings.
#[derive(Debug, Default)]
struct PyScan {
    depth: usize,
    quote: Option<u8>,
    escaped: bool,
}

impl PyScan {
    fn feed(&mut self, text: &str) -> Option<usize> {
        for (at, byte) in text.bytes().enumerate() {
            if let Some(quote) = self.quote {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == quote {
                    self.quote = None;
                }
                continue;
            }
            match byte {
                b'\'' | b'"' => self.quote = Some(byte),
                b'[' | b'(' | b'{' => self.depth += 1,
                b']' | b')' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(at + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[derive(Debug)]
enum State {
    Start { blank: String },
    List { scan: PyScan, text: String },
    Content,
}

#[derive(Debug)]
pub(crate) struct Pythonic {
    state: State,
}

impl Pythonic {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Start {
                blank: String::new(),
            },
        }
    }
}

impl Machine for Pythonic {
    fn markers(&self) -> &'static [&'static str] {
        MARKERS
    }

    fn text(&mut self, out: &mut Out, text: &str) {
        match &mut self.state {
            State::Content => out.content(text),
            State::Start { blank } => {
                let trimmed = text.trim_start();
                if trimmed.is_empty() {
                    blank.push_str(text);
                } else if trimmed.starts_with('[') {
                    self.state = State::List {
                        scan: PyScan::default(),
                        text: String::new(),
                    };
                    self.text(out, trimmed);
                } else {
                    let mut content = std::mem::take(blank);
                    content.push_str(text);
                    self.state = State::Content;
                    out.content(&content);
                }
            }
            State::List { scan, text: body } => match scan.feed(text) {
                None => body.push_str(text),
                Some(end) => {
                    body.push_str(&text[..end]);
                    let body = std::mem::take(body);
                    self.state = State::Content;
                    match parse_calls(&body) {
                        Some(calls) => {
                            for (name, arguments) in calls {
                                out.start(&name);
                                out.arguments(&Value::Object(arguments).to_string());
                                out.end();
                            }
                        }
                        None => out.content(&body),
                    }
                    out.content(&text[end..]);
                }
            },
        }
    }

    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str) {
        match self.state {
            State::List { .. } => self.text(out, literal),
            _ if marker == PYTHON_START => {
                self.state = State::Start {
                    blank: String::new(),
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, out: &mut Out) {
        if let State::List { text, .. } = &self.state {
            let mut parser = Py {
                text: text.as_bytes(),
                at: 1,
            };
            parser.blank();
            let looks_like_call = parser.identifier().is_some() && parser.eat(b'(');
            let text = text.clone();
            if looks_like_call {
                out.fail("output ended inside the call list", &text);
            } else {
                out.content(&text);
            }
        }
        self.state = State::Content;
    }
}

type Call = (String, Map<String, Value>);

/// Parses `[name(k=v, …), …]`; `None` when the text is anything else.
fn parse_calls(text: &str) -> Option<Vec<Call>> {
    let mut parser = Py {
        text: text.as_bytes(),
        at: 0,
    };
    parser.blank();
    if !parser.eat(b'[') {
        return None;
    }
    let mut calls = Vec::new();
    loop {
        parser.blank();
        if parser.eat(b']') {
            break;
        }
        if !calls.is_empty() {
            if !parser.eat(b',') {
                return None;
            }
            parser.blank();
            if parser.eat(b']') {
                break;
            }
        }
        calls.push(parser.call()?);
    }
    parser.blank();
    (parser.at == parser.text.len() && !calls.is_empty()).then_some(calls)
}

/// A small recursive-descent reader for the Python subset calls are written in.
struct Py<'a> {
    text: &'a [u8],
    at: usize,
}

impl Py<'_> {
    fn blank(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn identifier(&mut self) -> Option<String> {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            self.at += 1;
        }
        let name = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        (!name.is_empty() && !name.as_bytes()[0].is_ascii_digit()).then(|| name.to_owned())
    }

    fn call(&mut self) -> Option<Call> {
        let name = self.identifier()?;
        self.blank();
        if !self.eat(b'(') {
            return None;
        }
        let mut arguments = Map::new();
        loop {
            self.blank();
            if self.eat(b')') {
                break;
            }
            if !arguments.is_empty() {
                if !self.eat(b',') {
                    return None;
                }
                self.blank();
                if self.eat(b')') {
                    break;
                }
            }
            let key = self.identifier()?;
            self.blank();
            if !self.eat(b'=') {
                return None;
            }
            self.blank();
            let value = self.value()?;
            arguments.insert(key, value);
        }
        Some((name, arguments))
    }

    fn value(&mut self) -> Option<Value> {
        self.blank();
        match *self.text.get(self.at)? {
            quote @ (b'\'' | b'"') => self.string(quote).map(Value::String),
            b'[' => self.sequence(b']'),
            b'(' => self.sequence(b')'),
            b'{' => self.dict(),
            _ => self.word(),
        }
    }

    fn sequence(&mut self, close: u8) -> Option<Value> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.blank();
            if self.eat(close) {
                return Some(Value::Array(items));
            }
            if !items.is_empty() {
                if !self.eat(b',') {
                    return None;
                }
                self.blank();
                if self.eat(close) {
                    return Some(Value::Array(items));
                }
            }
            items.push(self.value()?);
        }
    }

    fn dict(&mut self) -> Option<Value> {
        self.at += 1;
        let mut map = Map::new();
        loop {
            self.blank();
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            if !map.is_empty() {
                if !self.eat(b',') {
                    return None;
                }
                self.blank();
                if self.eat(b'}') {
                    return Some(Value::Object(map));
                }
            }
            let key = match self.value()? {
                Value::String(key) => key,
                other => other.to_string(),
            };
            self.blank();
            if !self.eat(b':') {
                return None;
            }
            let value = self.value()?;
            map.insert(key, value);
        }
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'+'))
        {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        match word {
            "True" | "true" => Some(Value::Bool(true)),
            "False" | "false" => Some(Value::Bool(false)),
            "None" | "null" => Some(Value::Null),
            _ => {
                let digits = word.replace('_', "");
                if let Ok(int) = digits.parse::<i64>() {
                    return Some(Value::from(int));
                }
                digits
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .and_then(Number::from_f64)
                    .map(Value::Number)
            }
        }
    }

    fn string(&mut self, quote: u8) -> Option<String> {
        self.at += 1;
        let mut bytes = Vec::new();
        loop {
            let byte = *self.text.get(self.at)?;
            self.at += 1;
            if byte == quote {
                return String::from_utf8(bytes).ok();
            }
            if byte != b'\\' {
                bytes.push(byte);
                continue;
            }
            let escaped = *self.text.get(self.at)?;
            self.at += 1;
            match escaped {
                b'n' => bytes.push(b'\n'),
                b't' => bytes.push(b'\t'),
                b'r' => bytes.push(b'\r'),
                b'0' => bytes.push(0),
                b'x' | b'u' | b'U' => {
                    let len = match escaped {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let hex = std::str::from_utf8(self.text.get(self.at..self.at + len)?).ok()?;
                    let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                    self.at += len;
                    bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                }
                b'\n' => {}
                other => {
                    if !matches!(other, b'\\' | b'\'' | b'"') {
                        bytes.push(b'\\');
                    }
                    bytes.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_literals_become_json() {
        let calls =
            parse_calls("[f(a='x\\'y', b=[1, 2.5, None], c={'k': (True, -3)}), g()]").unwrap();
        assert_eq!(calls[0].0, "f");
        assert_eq!(
            Value::Object(calls[0].1.clone()),
            json!({"a": "x'y", "b": [1, 2.5, null], "c": {"k": [true, -3]}})
        );
        assert_eq!(calls[1], ("g".to_owned(), Map::new()));
    }

    #[test]
    fn lists_that_are_not_calls_are_rejected() {
        assert!(parse_calls("[1, 2]").is_none());
        assert!(parse_calls("[f(1)]").is_none());
        assert!(parse_calls("[]").is_none());
    }
}
