//! Writes the `qwen3_coder` format that `families/qwen_xml.rs` reads (Qwen3-Coder, Qwen3.5+):
//! `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`,
//! string values as raw text and other values as template JSON, as the chat template writes
//! them. Results are `<tool_response>` blocks.
//!
//! What this markup cannot carry:
//! - the parser types each value by the tool's schema, so without one a string that reads
//!   as JSON (`"3"`, `"true"`) comes back as that JSON value;
//! - a string value in which `</parameter>`, `<parameter=` or `</function>` begins a line (at
//!   its start or after a newline) ends the value there: raw text has no escape;
//! - a name or key holding `>`, or with blanks at either end.

use serde_json::Value;

use super::{Call, template_json};

pub(super) const OPEN: &str = "<tool_call>";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let blocks: Vec<String> = calls
        .iter()
        .map(|call| {
            let mut block = format!("{OPEN}\n<function={}>\n", call.name);
            for (key, value) in call.arguments.members() {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => template_json::to_text(other),
                };
                block.push_str(&format!("<parameter={key}>\n{text}\n</parameter>\n"));
            }
            block.push_str("</function>\n</tool_call>");
            block
        })
        .collect();
    blocks.join("\n")
}
