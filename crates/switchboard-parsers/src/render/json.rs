//! Writes the generic `json` format that `families/json.rs` reads, the fallback for models
//! with no native markup: `{"tool_calls": [{"name": …, "arguments": …}, …]}`, and results as
//! `{"tool_results": [{"name": …, "content": …}, …]}` (also used by the Llama families, whose
//! tool role has no wrapper).
//!
//! Carries every name and every arguments object.

use switchboard_tools::ToolCall;

use super::{Call, named_result, template_json};

pub(super) const OPEN: &str = "{\"tool_calls\": [";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let objects: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "{{\"name\": {}, \"arguments\": {}}}",
                template_json::to_text(call.name),
                call.arguments.nested_json()
            )
        })
        .collect();
    format!("{OPEN}{}]}}", objects.join(", "))
}

pub(super) fn results(results: &[(ToolCall, String)]) -> String {
    let objects: Vec<String> = results
        .iter()
        .map(|(call, result)| named_result(call, result))
        .collect();
    format!("{{\"tool_results\": [{}]}}", objects.join(", "))
}
