//! Prompted tool calling, the writing direction. When a model or server has no native tool
//! calling, the gateway puts the tools and the calling format in the system prompt, rewrites
//! the history into the family's own markup (calls in assistant turns, results in one user
//! turn, since such backends accept only system, user and assistant roles), and reads the
//! reply with this crate's parsers. Each `render/<module>.rs` writes the markup that
//! `families/<module>.rs` reads, and the round-trip tests hold the two together:
//! `parse_whole(family, tools, &render_tool_calls(family, calls))` gives back the calls.
//!
//! Arguments arrive as the raw JSON text of each call. Text that is a JSON object (or empty,
//! which is `{}`) is carried faithfully, within the limits each family module documents.
//! Text that is not a JSON object cannot be a valid call; it is embedded as is where the
//! format has a raw JSON region of its own (Mistral `[ARGS]`, DeepSeek V3/V3.1, Kimi K2,
//! gpt-oss message bodies, Kimi K3's `json` element), so the model sees what it wrote, and
//! is written as `{}` where the arguments are nested in a larger JSON or Python expression
//! or split into elements (Hermes, Llama 3 JSON, pythonic, json, Qwen XML, GLM, DSML,
//! Gemma 4).
//!
//! Results are passed in the order of their calls: families that number calls (Kimi) number
//! results by that position.

mod dsml;
mod gemma4;
mod glm;
mod gpt_oss;
mod hermes;
mod json;
mod kimi_k3;
mod llama_json;
mod mistral;
mod prompt;
mod pythonic;
mod qwen_xml;
mod sectioned;
mod template_json;

pub use prompt::{ToolRequirement, corrective_message, tool_prompt};

use serde_json::{Map, Value, json};
use switchboard_tools::ToolCall;

use crate::Family;

/// One call to render, its arguments decoded once.
pub(crate) struct Call<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Arguments<'a>,
}

/// A call's arguments.
pub(crate) enum Arguments<'a> {
    /// A JSON object: its text as given (trimmed) and its value.
    Object {
        text: &'a str,
        map: Map<String, Value>,
    },
    /// Text that is not a JSON object, as given.
    NotAnObject(&'a str),
}

impl<'a> Call<'a> {
    fn new(call: &'a ToolCall) -> Self {
        let text = call.arguments.trim();
        let arguments = if text.is_empty() {
            Arguments::Object {
                text: "{}",
                map: Map::new(),
            }
        } else {
            match serde_json::from_str::<Map<String, Value>>(text) {
                Ok(map) => Arguments::Object { text, map },
                Err(_) => Arguments::NotAnObject(&call.arguments),
            }
        };
        Self {
            name: &call.name,
            arguments,
        }
    }
}

impl Arguments<'_> {
    /// The object's members; none when the arguments are not an object.
    pub(crate) fn members(&self) -> impl Iterator<Item = (&String, &Value)> {
        match self {
            Arguments::Object { map, .. } => Some(map.iter()),
            Arguments::NotAnObject(_) => None,
        }
        .into_iter()
        .flatten()
    }

    /// JSON text for formats that nest the arguments inside more JSON: the object exactly
    /// as given (so large numbers keep their digits), or `{}`.
    pub(crate) fn nested_json(&self) -> &str {
        match self {
            Arguments::Object { text, .. } => text,
            Arguments::NotAnObject(_) => "{}",
        }
    }

    /// Text for formats whose arguments are a raw JSON region: whatever was given.
    pub(crate) fn region(&self) -> &str {
        match self {
            Arguments::Object { text, .. } => text,
            Arguments::NotAnObject(text) => text,
        }
    }
}

/// A result as JSON that names its call, for formats whose result markup has no place for
/// the name: `{"name": NAME, "content": RESULT}`, RESULT being the result's JSON value when
/// the text is JSON and the text as a string otherwise.
pub(crate) fn named_result(call: &ToolCall, result: &str) -> String {
    let content =
        serde_json::from_str::<Value>(result).unwrap_or_else(|_| Value::String(result.to_owned()));
    template_json::to_text(&json!({"name": call.name, "content": content}))
}

/// The markup an assistant turn holds for these calls, in the family's own format; empty
/// when there are no calls.
pub fn render_tool_calls(family: Family, calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let calls: Vec<Call<'_>> = calls.iter().map(Call::new).collect();
    match family {
        Family::Hermes => hermes::calls(&calls),
        Family::Qwen3Coder => qwen_xml::calls(&calls),
        Family::Llama3Json => llama_json::calls(&calls),
        Family::Pythonic => pythonic::calls(&calls),
        Family::Mistral => mistral::calls(&calls),
        Family::DeepseekV3 => sectioned::calls(sectioned::Layout::DeepseekV3, &calls),
        Family::DeepseekV31 => sectioned::calls(sectioned::Layout::DeepseekV31, &calls),
        Family::KimiK2 => sectioned::calls(sectioned::Layout::KimiK2, &calls),
        Family::DeepseekV32 => dsml::calls(dsml::Dsml::V32, &calls),
        Family::DeepseekV4 => dsml::calls(dsml::Dsml::V4, &calls),
        Family::DeepseekV41 => dsml::calls(dsml::Dsml::V41, &calls),
        Family::GptOss => gpt_oss::calls(&calls),
        Family::KimiK3 => kimi_k3::calls(&calls),
        Family::Glm45 => glm::calls(glm::Layout::Lines, &calls),
        Family::Glm47 => glm::calls(glm::Layout::Compact, &calls),
        Family::Gemma4 => gemma4::calls(&calls),
        Family::Json => json::calls(&calls),
    }
}

/// The text of the single user message that carries these results back, each naming the
/// call it answers, in the family's convention; empty when there are no results.
pub fn render_tool_results(family: Family, results: &[(ToolCall, String)]) -> String {
    if results.is_empty() {
        return String::new();
    }
    match family {
        Family::Hermes | Family::Qwen3Coder => hermes::tool_responses(results, false),
        Family::Llama3Json | Family::Pythonic | Family::Json => json::results(results),
        Family::Mistral => mistral::results(results),
        Family::DeepseekV3 => sectioned::results(sectioned::Layout::DeepseekV3, results),
        Family::DeepseekV31 => sectioned::results(sectioned::Layout::DeepseekV31, results),
        Family::KimiK2 => sectioned::results(sectioned::Layout::KimiK2, results),
        Family::DeepseekV32 => dsml::results(dsml::Dsml::V32, results),
        Family::DeepseekV4 => dsml::results(dsml::Dsml::V4, results),
        Family::DeepseekV41 => dsml::results(dsml::Dsml::V41, results),
        Family::GptOss => gpt_oss::results(results),
        Family::KimiK3 => kimi_k3::results(results),
        Family::Glm45 => glm::results(glm::Layout::Lines, results),
        Family::Glm47 => glm::results(glm::Layout::Compact, results),
        Family::Gemma4 => gemma4::results(results),
    }
}

/// The markup that opens a call in the family's format, for prompts that name it.
pub(crate) fn call_opener(family: Family) -> &'static str {
    match family {
        Family::Hermes => hermes::OPEN,
        Family::Qwen3Coder => qwen_xml::OPEN,
        Family::Llama3Json => llama_json::OPEN,
        Family::Pythonic => pythonic::OPEN,
        Family::Mistral => mistral::OPEN,
        Family::DeepseekV3 => sectioned::Layout::DeepseekV3.open(),
        Family::DeepseekV31 => sectioned::Layout::DeepseekV31.open(),
        Family::KimiK2 => sectioned::Layout::KimiK2.open(),
        Family::DeepseekV32 => dsml::Dsml::V32.open(),
        Family::DeepseekV4 => dsml::Dsml::V4.open(),
        Family::DeepseekV41 => dsml::Dsml::V41.open(),
        Family::GptOss => gpt_oss::OPEN,
        Family::KimiK3 => kimi_k3::OPEN,
        Family::Glm45 | Family::Glm47 => glm::OPEN,
        Family::Gemma4 => gemma4::OPEN,
        Family::Json => json::OPEN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "call_1".to_owned(),
            name: "f".to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    #[test]
    fn arguments_are_decoded_once_and_kept_as_given() {
        let given = call(" {\"n\": 12345678901234567890123} ");
        let decoded = Call::new(&given);
        assert_eq!(
            decoded.arguments.nested_json(),
            "{\"n\": 12345678901234567890123}"
        );
        assert_eq!(decoded.arguments.members().count(), 1);
        let empty = call("");
        assert_eq!(Call::new(&empty).arguments.nested_json(), "{}");
        let broken = call("{\"a\": ");
        let decoded = Call::new(&broken);
        assert_eq!(decoded.arguments.nested_json(), "{}");
        assert_eq!(decoded.arguments.region(), "{\"a\": ");
        assert_eq!(decoded.arguments.members().count(), 0);
        let array = call("[1]");
        assert_eq!(Call::new(&array).arguments.nested_json(), "{}");
    }

    #[test]
    fn results_name_their_call_and_keep_json_as_json() {
        assert_eq!(
            named_result(&call("{}"), "{\"temp\":20}"),
            "{\"name\": \"f\", \"content\": {\"temp\": 20}}"
        );
        assert_eq!(
            named_result(&call("{}"), "sunny, 20°C"),
            "{\"name\": \"f\", \"content\": \"sunny, 20°C\"}"
        );
    }
}
