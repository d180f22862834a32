//! Writes the `mistral` format that `families/mistral.rs` reads, in the compact form of
//! tokenizer v11 and later (the current models): `[TOOL_CALLS]NAME[ARGS]{…}` per call, with no
//! separator, and results as `[TOOL_RESULTS]…[/TOOL_RESULTS]` per result.
//!
//! Carries every name without `[`-markers and every arguments object: the arguments are a
//! raw JSON region, and markup inside its strings is text to the parser. Arguments that are
//! not a JSON object are written as given.

use switchboard_tools::ToolCall;

use super::{Call, named_result};

pub(super) const OPEN: &str = "[TOOL_CALLS]";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    calls
        .iter()
        .map(|call| format!("{OPEN}{}[ARGS]{}", call.name, call.arguments.region()))
        .collect()
}

/// Each result holds `{"name": …, "content": …}`, the v11+ result markup having no place for
/// the name.
pub(super) fn results(results: &[(ToolCall, String)]) -> String {
    results
        .iter()
        .map(|(call, result)| {
            format!(
                "[TOOL_RESULTS]{}[/TOOL_RESULTS]",
                named_result(call, result)
            )
        })
        .collect()
}
