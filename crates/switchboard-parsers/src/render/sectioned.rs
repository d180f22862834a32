//! Writes the section-token formats that `families/sectioned.rs` reads:
//! - `deepseek_v3` (V3, R1): `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>`,
//!   calls separated by `\n`; results in `<｜tool▁outputs▁begin｜>…<｜tool▁outputs▁end｜>`;
//! - `deepseek_v31`: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` chained with
//!   no separator; results as `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`;
//! - `kimi_k2`: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>`,
//!   IDX being the call's position in the turn; results as `## Return of functions.NAME:IDX`
//!   sections, the text Kimi's template gives each tool message.
//!
//! Carries every identifier-like name and every arguments object: the arguments are a raw
//! JSON region, and markup inside its strings is text to the parser. Arguments that are not
//! a JSON object are written as given. DeepSeek results hold `{"name": …, "content": …}`, the
//! output markup having no place for the name.

use switchboard_tools::ToolCall;

use super::{Call, named_result};

/// Which family's layout.
#[derive(Debug, Clone, Copy)]
pub(super) enum Layout {
    DeepseekV3,
    DeepseekV31,
    KimiK2,
}

impl Layout {
    pub(super) fn open(self) -> &'static str {
        match self {
            Layout::DeepseekV3 | Layout::DeepseekV31 => "<｜tool▁calls▁begin｜>",
            Layout::KimiK2 => "<|tool_calls_section_begin|>",
        }
    }
}

pub(super) fn calls(layout: Layout, calls: &[Call<'_>]) -> String {
    let (separator, close) = match layout {
        Layout::DeepseekV3 => ("\n", "<｜tool▁calls▁end｜>"),
        Layout::DeepseekV31 => ("", "<｜tool▁calls▁end｜>"),
        Layout::KimiK2 => ("", "<|tool_calls_section_end|>"),
    };
    let blocks: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let (name, arguments) = (call.name, call.arguments.region());
            match layout {
                Layout::DeepseekV3 => format!(
                    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜>"
                ),
                Layout::DeepseekV31 => {
                    format!("<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜>")
                }
                Layout::KimiK2 => format!(
                    "<|tool_call_begin|>{}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>",
                    kimi_id(name, index)
                ),
            }
        })
        .collect();
    format!("{}{}{close}", layout.open(), blocks.join(separator))
}

pub(super) fn results(layout: Layout, results: &[(ToolCall, String)]) -> String {
    let blocks = results
        .iter()
        .enumerate()
        .map(|(index, (call, result))| match layout {
            Layout::DeepseekV3 | Layout::DeepseekV31 => format!(
                "<｜tool▁output▁begin｜>{}<｜tool▁output▁end｜>",
                named_result(call, result)
            ),
            Layout::KimiK2 => format!("## Return of {}\n{result}", kimi_id(&call.name, index)),
        });
    let blocks: Vec<String> = blocks.collect();
    match layout {
        Layout::DeepseekV3 => format!(
            "<｜tool▁outputs▁begin｜>{}<｜tool▁outputs▁end｜>",
            blocks.join("\n")
        ),
        Layout::DeepseekV31 => blocks.concat(),
        Layout::KimiK2 => blocks.join("\n\n"),
    }
}

/// Kimi's call id, `functions.NAME:IDX`, from which its parser reads the name.
fn kimi_id(name: &str, index: usize) -> String {
    format!("functions.{name}:{index}")
}
