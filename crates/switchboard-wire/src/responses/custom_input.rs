//! A custom tool's free-form input out of the model's call to its stand-in function
//! (`{"input": "…"}`), decoded as the arguments stream in, so `custom_tool_call_input.delta`
//! events carry the text itself and not JSON fragments.
//!
//! Only text that is certain is emitted: the JSON string's characters up to the last
//! complete escape. Arguments in another shape (other keys first, no `input`) are decoded
//! once they are complete; the final input is always what [`InputStream::finish`] says, and
//! what was streamed is a prefix of it.

use serde_json::Value;

#[derive(Debug, Default)]
pub struct InputStream {
    raw: String,
    /// Bytes of `raw` already read.
    read: usize,
    state: State,
    /// The text emitted so far.
    emitted: String,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the string's opening quote: `{"input": "`.
    #[default]
    Opening,
    Inside,
    /// The string closed, or the arguments do not start the expected way.
    Stopped,
}

const OPENING: &[&str] = &["{", "\"input\"", ":", "\""];

impl InputStream {
    /// Takes a fragment of the arguments; returns the input text it completes.
    pub fn push(&mut self, fragment: &str) -> String {
        self.raw.push_str(fragment);
        if self.state == State::Opening {
            self.open();
        }
        if self.state != State::Inside {
            return String::new();
        }
        let mut decoded = String::new();
        let rest = &self.raw[self.read..];
        let mut chars = rest.char_indices().peekable();
        let mut consumed = 0;
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    self.state = State::Stopped;
                    consumed = at + 1;
                    break;
                }
                '\\' => match escape(&rest[at..]) {
                    Escape::Char(decoded_char, length) => {
                        decoded.push(decoded_char);
                        consumed = at + length;
                        while chars.peek().is_some_and(|(next, _)| *next < consumed) {
                            chars.next();
                        }
                    }
                    Escape::Incomplete => break,
                    Escape::Invalid => {
                        self.state = State::Stopped;
                        break;
                    }
                },
                other => {
                    decoded.push(other);
                    consumed = at + other.len_utf8();
                }
            }
        }
        self.read += consumed;
        self.emitted.push_str(&decoded);
        decoded
    }

    /// The whole input once the arguments are complete, and the part not emitted yet.
    pub fn finish(&self) -> (String, String) {
        let input = match serde_json::from_str::<Value>(&self.raw) {
            Ok(Value::Object(object)) => match object.get("input") {
                Some(Value::String(input)) => input.clone(),
                // A model that named the argument otherwise still meant its one string.
                _ => match object.values().collect::<Vec<_>>().as_slice() {
                    [Value::String(only)] => only.clone(),
                    _ => self.raw.clone(),
                },
            },
            _ => self.raw.clone(),
        };
        let rest = input
            .strip_prefix(self.emitted.as_str())
            .unwrap_or_default()
            .to_owned();
        (input, rest)
    }

    /// Reads past `{"input": "` when it is all there; stops for good on anything else.
    fn open(&mut self) {
        let mut rest = &self.raw[..];
        for token in OPENING {
            rest = rest.trim_start();
            if rest.is_empty() {
                return;
            }
            if let Some(after) = rest.strip_prefix(token) {
                rest = after;
            } else {
                if !token.starts_with(rest) {
                    self.state = State::Stopped;
                }
                return;
            }
        }
        self.read = self.raw.len() - rest.len();
        self.state = State::Inside;
    }
}

enum Escape {
    /// The character and the escape's length in bytes.
    Char(char, usize),
    Incomplete,
    Invalid,
}

/// The escape at the start of `text` (which starts with a backslash).
fn escape(text: &str) -> Escape {
    let Some(kind) = text[1..].chars().next() else {
        return Escape::Incomplete;
    };
    let simple = match kind {
        '"' => Some('"'),
        '\\' => Some('\\'),
        '/' => Some('/'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'u' => None,
        _ => return Escape::Invalid,
    };
    if let Some(c) = simple {
        return Escape::Char(c, 2);
    }
    let Some(high) = hex4(&text[2..]) else {
        return if text.len() < 6 {
            Escape::Incomplete
        } else {
            Escape::Invalid
        };
    };
    if !(0xD800..0xDC00).contains(&high) {
        return char::from_u32(high).map_or(Escape::Invalid, |c| Escape::Char(c, 6));
    }
    // A high surrogate: its low half follows as another `\uXXXX`.
    let tail = &text[6..];
    if tail.len() < 6 {
        let start = tail.get(..tail.len().min(2));
        return if start.is_some_and(|start| "\\u".starts_with(start)) {
            Escape::Incomplete
        } else {
            Escape::Invalid
        };
    }
    match (tail.starts_with("\\u"), hex4(&tail[2..])) {
        (true, Some(low)) if (0xDC00..0xE000).contains(&low) => {
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            char::from_u32(code).map_or(Escape::Invalid, |c| Escape::Char(c, 12))
        }
        _ => Escape::Invalid,
    }
}

fn hex4(text: &str) -> Option<u32> {
    let digits = text.get(..4)?;
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `arguments` in pieces of `size` bytes (on char boundaries) and returns what was
    /// streamed and what finish says.
    fn feed(arguments: &str, size: usize) -> (String, String) {
        let mut stream = InputStream::default();
        let mut streamed = String::new();
        let mut piece = String::new();
        for c in arguments.chars() {
            piece.push(c);
            if piece.len() >= size {
                streamed.push_str(&stream.push(&piece));
                piece.clear();
            }
        }
        streamed.push_str(&stream.push(&piece));
        let (input, rest) = stream.finish();
        streamed.push_str(&rest);
        (streamed, input)
    }

    #[test]
    fn streamed_text_adds_up_to_the_input_at_any_chunking() {
        let patch = "*** Begin Patch\n*** Add File: a \"b\".txt\n+é 😀 \t\\ done\n*** End Patch\n";
        let arguments = serde_json::json!({"input": patch}).to_string();
        let escaped_unicode = arguments
            .replace('😀', "\\ud83d\\ude00")
            .replace('é', "\\u00e9");
        for text in [
            arguments.as_str(),
            escaped_unicode.as_str(),
            " { \"input\" :\"x\\ny\" }",
        ] {
            let expected = serde_json::from_str::<Value>(text).unwrap()["input"]
                .as_str()
                .unwrap()
                .to_owned();
            for size in [1, 2, 3, 7, 1000] {
                let (streamed, input) = feed(text, size);
                assert_eq!(input, expected, "{text} by {size}");
                assert_eq!(streamed, expected, "{text} by {size}");
            }
        }
    }

    #[test]
    fn text_is_streamed_before_the_arguments_end() {
        let mut stream = InputStream::default();
        assert_eq!(stream.push("{\"inp"), "");
        assert_eq!(stream.push("ut\": \"abc\\"), "abc");
        assert_eq!(stream.push("n"), "\n");
    }

    #[test]
    fn other_shapes_are_taken_whole_at_the_end() {
        for (arguments, input) in [
            ("{\"patch\": \"p\"}", "p"),
            ("not json", "not json"),
            ("{\"a\": 1, \"input\": \"x\"}", "x"),
        ] {
            let (streamed, found) = feed(arguments, 1);
            assert_eq!((streamed.as_str(), found.as_str()), (input, input));
        }
    }
}
