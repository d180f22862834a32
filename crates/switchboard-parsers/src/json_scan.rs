//! Finds where a JSON object or array ends in text that arrives in pieces, without parsing it
//! twice: it tracks only nesting depth and whether it is inside a string, so a marker such as
//! `</tool_call>` written inside a string argument cannot end the call.

/// What the scanner saw in one piece of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The value goes on past this piece.
    More,
    /// The value ends; its last byte is just before this offset in the piece.
    Done(usize),
    /// The first non-blank character does not open an object or array.
    NotJson,
}

/// Incremental end-of-value finder for one JSON object or array.
#[derive(Debug, Default, Clone)]
pub(crate) struct JsonScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
}

impl JsonScan {
    pub(crate) fn feed(&mut self, text: &str) -> Scan {
        for (at, byte) in text.bytes().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' if self.started => self.in_string = true,
                b'{' | b'[' => {
                    self.started = true;
                    self.depth += 1;
                }
                b'}' | b']' if self.started => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Scan::Done(at + 1);
                    }
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ if !self.started => return Scan::NotJson,
                _ => {}
            }
        }
        Scan::More
    }

    /// Whether any of the value has been seen.
    pub(crate) fn started(&self) -> bool {
        self.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closing_brace_inside_a_string_does_not_end_the_value() {
        let mut scan = JsonScan::default();
        assert_eq!(scan.feed(r#" {"a": "}</tool_call>\"}"#), Scan::More);
        assert_eq!(scan.feed(r#"", "b": [1]} tail"#), Scan::Done(12));
    }

    #[test]
    fn rejects_text_that_is_not_an_object() {
        assert_eq!(JsonScan::default().feed("  not json"), Scan::NotJson);
    }
}
