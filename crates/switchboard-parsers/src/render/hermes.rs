//! Writes the `hermes` format that `families/hermes.rs` reads (Qwen 2.5/3, Hermes):
//! `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` per call, and results as
//! `<tool_response>` blocks, the convention Qwen3-Coder and GLM share.
//!
//! Carries every name and every arguments object: the call is one JSON object, and markup
//! inside its strings is text to the parser.

use switchboard_tools::ToolCall;

use super::{Call, named_result, template_json};

pub(super) const OPEN: &str = "<tool_call>";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let blocks: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "{OPEN}\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                template_json::to_text(call.name),
                call.arguments.nested_json()
            )
        })
        .collect();
    blocks.join("\n")
}

/// `<tool_response>` blocks, each holding `{"name": …, "content": …}` since the markup has
/// no place for the name; `compact` drops the newlines (GLM-4.7 and later).
pub(super) fn tool_responses(results: &[(ToolCall, String)], compact: bool) -> String {
    let newline = if compact { "" } else { "\n" };
    let blocks: Vec<String> = results
        .iter()
        .map(|(call, result)| {
            format!(
                "<tool_response>{newline}{}{newline}</tool_response>",
                named_result(call, result)
            )
        })
        .collect();
    blocks.join(newline)
}
