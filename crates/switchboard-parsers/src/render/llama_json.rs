//! Writes the `llama3_json` format that `families/llama_json.rs` reads (Llama 3.x):
//! `{"name": …, "parameters": …}`, several separated by `; ` (the chat template itself
//! allows one call per message). Results use the generic JSON of `render/json.rs`, Llama's
//! `ipython` role having no wrapper of its own.
//!
//! Carries every name and every arguments object.

use super::{Call, template_json};

pub(super) const OPEN: &str = "{\"name\": ";

pub(super) fn calls(calls: &[Call<'_>]) -> String {
    let objects: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "{OPEN}{}, \"parameters\": {}}}",
                template_json::to_text(call.name),
                call.arguments.nested_json()
            )
        })
        .collect();
    objects.join("; ")
}
