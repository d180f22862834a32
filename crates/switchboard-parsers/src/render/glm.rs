//! Writes the GLM format that `families/glm.rs` reads:
//! `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>`, with a newline
//! after the name, after each element and between calls for `glm45` (GLM-4.5/4.6) and none
//! for `glm47` (GLM-4.7, 5.x); string values raw, other values template JSON, as the chat
//! templates write them. Results are `<tool_response>` blocks laid out the same way.
//!
//! What this markup cannot carry:
//! - the parser types each value by the tool's schema, so without one a string that reads
//!   as JSON (`"3"`, `"true"`) comes back as that JSON value;
//! - a string value holding `</arg_value>`, or `</tool_call>` followed (after blanks) by
//!   `<tool_call>`, ends there: raw text has no escape (JSON values holding them are
//!   written with `<` escaped, and do round-trip);
//! - a name or key holding GLM markup or a newline, or with blanks at either end.

use serde_json::Value;
use switchboard_tools::ToolCall;

use super::{Call, hermes, template_json};

pub(super) const OPEN: &str = "<tool_call>";

/// GLM's two whitespace layouts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Layout {
    /// GLM-4.5/4.6: newline-separated.
    Lines,
    /// GLM-4.7 and 5.x: no whitespace.
    Compact,
}

impl Layout {
    fn newline(self) -> &'static str {
        match self {
            Layout::Lines => "\n",
            Layout::Compact => "",
        }
    }
}

pub(super) fn calls(layout: Layout, calls: &[Call<'_>]) -> String {
    let newline = layout.newline();
    let blocks: Vec<String> = calls
        .iter()
        .map(|call| {
            let mut block = format!("{OPEN}{}{newline}", call.name);
            for (key, value) in call.arguments.members() {
                block.push_str(&format!(
                    "<arg_key>{key}</arg_key>{newline}<arg_value>{}</arg_value>{newline}",
                    value_text(value)
                ));
            }
            block.push_str("</tool_call>");
            block
        })
        .collect();
    blocks.join(newline)
}

/// A value's text: strings raw, other values JSON, with `<` escaped where GLM's closing tags
/// would otherwise appear in it.
fn value_text(value: &Value) -> String {
    if let Value::String(text) = value {
        return text.clone();
    }
    let text = template_json::to_text(value);
    if text.contains("</arg_value>") || text.contains("</tool_call>") {
        template_json::to_text_without_tags(value)
    } else {
        text
    }
}

pub(super) fn results(layout: Layout, results: &[(ToolCall, String)]) -> String {
    hermes::tool_responses(results, matches!(layout, Layout::Compact))
}
