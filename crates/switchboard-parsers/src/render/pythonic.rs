//! Writes the `pythonic` format that `families/pythonic.rs` reads (Llama 3.2/4 and others):
//! `[name(key="value", n=3), other()]`, arguments as Python keyword arguments with Python
//! literals (`True`, `False`, `None`, double-quoted strings with backslash escapes, lists
//! and dicts). Results use the generic JSON of `render/json.rs`.
//!
//! What this markup cannot carry: a name or key that is not a Python identifier (a name
//! starting with a digit, a key with spaces), and integers beyond the 64-bit signed range,
//! which come back as floats.

use std::fmt::Write;

use serde_json::Value;

use super::Call;

pub(super) const OPEN: &str = "[";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let mut out = String::from(OPEN);
    for (index, call) in calls.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        out.push_str(call.name);
        out.push('(');
        for (position, (key, value)) in call.arguments.members().enumerate() {
            if position > 0 {
                out.push_str(", ");
            }
            out.push_str(key);
            out.push('=');
            literal(value, &mut out);
        }
        out.push(')');
    }
    out.push(']');
    out
}

/// A JSON value as the Python literal that reads back as it.
fn literal(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                literal(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                string(key, out);
                out.push_str(": ");
                literal(item, out);
            }
            out.push('}');
        }
    }
}

fn string(text: &str, out: &mut String) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Control characters are all below U+FFFF, so `\uXXXX` reaches them.
            control if control.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_are_python() {
        let mut out = String::new();
        literal(
            &json!({"a": [null, true, false, -3, 2.5], "b": "x\"y\\z\n\u{1}é"}),
            &mut out,
        );
        assert_eq!(
            out,
            r#"{"a": [None, True, False, -3, 2.5], "b": "x\"y\\z\n\u0001é"}"#
        );
    }
}
