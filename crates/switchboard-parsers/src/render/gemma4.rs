//! Writes Gemma 4's call notation, which `families/gemma4.rs` reads:
//! `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>` per call, with no separator;
//! strings between `<|"|>` tokens with nothing escaped, other values bare, keys bare and
//! sorted case-insensitively, as the chat template's `dictsort` orders them.
//! Each result is `<|tool_response>response:NAME{value:<|"|>…<|"|>}<tool_response|>`, as the
//! chat template writes it.
//!
//! A key that is not a plain word (empty, blanks at either end, or holding punctuation the
//! notation uses) is written as a `<|"|>` string, which the parser also reads as a key.
//! What this markup cannot carry: a string or key holding `<|"|>` itself (the notation has no
//! escape), a name holding `{`, and integers beyond the 64-bit signed range, which come back
//! as floats.

use serde_json::Value;
use switchboard_tools::ToolCall;

use super::Call;

pub(super) const OPEN: &str = "<|tool_call>call:";

const QUOTE: &str = "<|\"|>";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let mut out = String::new();
    for call in calls {
        out.push_str(OPEN);
        out.push_str(call.name);
        out.push('{');
        write_members(call.arguments.members(), &mut out);
        out.push_str("}<tool_call|>");
    }
    out
}

/// `key:value,…` in the template's order.
fn write_members<'a>(members: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut String) {
    let mut members: Vec<(&String, &Value)> = members.collect();
    members.sort_by_cached_key(|(key, _)| key.to_lowercase());
    for (index, (key, value)) in members.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_key(key, out);
        write_value(value, out);
    }
}

fn write_key(key: &str, out: &mut String) {
    let plain =
        !key.is_empty() && key.trim() == key && !key.contains(['{', '}', '[', ']', ':', ',', '<']);
    if plain {
        out.push_str(key);
    } else {
        write_string(key, out);
    }
    out.push(':');
}

fn write_string(text: &str, out: &mut String) {
    out.push_str(QUOTE);
    out.push_str(text);
    out.push_str(QUOTE);
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            write_members(map.iter(), out);
            out.push('}');
        }
        // null, booleans and numbers are written bare, as JSON spells them.
        other => out.push_str(&other.to_string()),
    }
}

pub(super) fn results(results: &[(ToolCall, String)]) -> String {
    results
        .iter()
        .map(|(call, result)| {
            format!(
                "<|tool_response>response:{}{{value:{QUOTE}{result}{QUOTE}}}<tool_response|>",
                call.name
            )
        })
        .collect()
}
