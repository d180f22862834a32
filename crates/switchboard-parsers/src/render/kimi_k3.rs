//! Writes Kimi K3's XTML, which `families/kimi_k3.rs` reads: a `tools` element holding one
//! `<|open|>call tool="NAME" index="N"<|sep|>` per call (N counting from 1, as Moonshot's
//! encoder does) and one `<|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>`
//! per argument; string values raw, others JSON, attribute values escaping `&` and `"`.
//! Arguments that are not a JSON object go whole into a `json` element, as the encoder does.
//! Each result is the tool's own message element, as text.
//!
//! Every value round-trips: a string holding XTML control markers (`<|`), which raw text
//! cannot carry, is written as a JSON string (`type="json"`) with `<` escaped, and JSON
//! values holding them are escaped the same way.

use serde_json::Value;
use switchboard_tools::ToolCall;

use super::{Arguments, Call, template_json};

pub(super) const OPEN: &str = "<|open|>tools<|sep|>";

/// What every XTML control marker begins with.
const MARKER: &str = "<|";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let mut out = String::from(OPEN);
    for (index, call) in calls.iter().enumerate() {
        out.push_str(&format!(
            "<|open|>call tool=\"{}\" index=\"{}\"<|sep|>",
            attribute(call.name),
            index + 1
        ));
        match &call.arguments {
            Arguments::Object { map, .. } => {
                for (key, value) in map {
                    let (kind, text) = argument(value);
                    out.push_str(&format!(
                        "<|open|>argument key=\"{}\" type=\"{kind}\"<|sep|>{text}<|close|>argument<|sep|>",
                        attribute(key)
                    ));
                }
            }
            Arguments::NotAnObject(text) => out.push_str(&format!(
                "<|open|>json type=\"object\"<|sep|>{text}<|close|>json<|sep|>"
            )),
        }
        out.push_str("<|close|>call<|sep|>");
    }
    out.push_str("<|close|>tools<|sep|>");
    out
}

/// The `type` attribute and the text of one argument.
fn argument(value: &Value) -> (&'static str, String) {
    let kind = match value {
        Value::String(text) if !text.contains(MARKER) => return ("string", text.clone()),
        Value::String(_) => "json",
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let text = template_json::to_text(value);
    if text.contains(MARKER) {
        (kind, template_json::to_text_without_tags(value))
    } else {
        (kind, text)
    }
}

/// An attribute value with `&` and `"` escaped, as the encoder writes them.
fn attribute(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

pub(super) fn results(results: &[(ToolCall, String)]) -> String {
    results
        .iter()
        .enumerate()
        .map(|(index, (call, result))| {
            format!(
                "<|open|>message role=\"tool\" tool=\"{}\" index=\"{}\"<|sep|>{result}<|close|>message<|sep|>",
                attribute(&call.name),
                index + 1
            )
        })
        .collect()
}
