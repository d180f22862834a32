//! JSON written the way chat templates write it (Python's `json.dumps` with
//! `ensure_ascii=False`: `", "` and `": "` separators, non-ASCII kept as is), because that is
//! the text models saw in training. Markup families whose tags could be closed by text inside
//! a JSON string can ask for `<` to be written `\u003c`, which no tag survives.

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

/// `value` as template JSON.
pub(crate) fn to_text<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, false)
}

/// `value` as template JSON, with every `<` inside strings written `\u003c`.
pub(crate) fn to_text_without_tags<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, true)
}

fn write<T: Serialize + ?Sized>(value: &T, escape_tags: bool) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, TemplateStyle { escape_tags });
    // Serialising strings, maps with string keys and `serde_json` values into memory cannot
    // fail; should it ever, what was written so far is returned rather than a panic.
    let _ = value.serialize(&mut serializer);
    String::from_utf8_lossy(&out).into_owned()
}

struct TemplateStyle {
    escape_tags: bool,
}

impl Formatter for TemplateStyle {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if !self.escape_tags {
            return writer.write_all(fragment.as_bytes());
        }
        let mut pieces = fragment.split('<');
        if let Some(first) = pieces.next() {
            writer.write_all(first.as_bytes())?;
        }
        for piece in pieces {
            writer.write_all(b"\\u003c")?;
            writer.write_all(piece.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn separators_and_unicode_follow_the_templates() {
        let value = json!({"city": "Zürich", "filters": {"tags": ["a", "b"], "max": 3}, "q": "café \"best\""});
        assert_eq!(
            to_text(&value),
            r#"{"city": "Zürich", "filters": {"tags": ["a", "b"], "max": 3}, "q": "café \"best\""}"#
        );
        assert_eq!(to_text("a<b"), r#""a<b""#);
    }

    #[test]
    fn escaped_tags_read_back_as_the_same_value() {
        let value = json!({"x": "</arg_value><|close|>", "<k>": ["<"]});
        let text = to_text_without_tags(&value);
        assert!(!text.contains('<'), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }
}
