//! Writes harmony, which `families/gpt_oss.rs` reads (gpt-oss): each call is a commentary
//! message to `functions.NAME` whose body is the JSON arguments, as the model generates it
//! after the prompt's `<|start|>assistant`:
//! `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`, later
//! calls opening their own `<|start|>assistant`. Each result is the tool's own message,
//! `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`, as text.
//!
//! Carries every name without blanks or `<` and every arguments object: the body is a raw
//! JSON region, and markup inside its strings is text to the parser. Arguments that are not
//! a JSON object are written as given.

use switchboard_tools::ToolCall;

use super::Call;

pub(super) const OPEN: &str = "<|channel|>commentary to=functions.";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let messages: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "{OPEN}{} <|constrain|>json<|message|>{}<|call|>",
                call.name,
                call.arguments.region()
            )
        })
        .collect();
    messages.join("<|start|>assistant")
}

pub(super) fn results(results: &[(ToolCall, String)]) -> String {
    results
        .iter()
        .map(|(call, result)| {
            format!(
                "<|start|>functions.{} to=assistant<|channel|>commentary<|message|>{result}<|end|>",
                call.name
            )
        })
        .collect()
}
