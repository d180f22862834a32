//! Writes DeepSeek's DSML, which `families/dsml.rs` reads: `deepseek_v32`
//! (`<｜DSML｜function_calls>`), `deepseek_v4` (`<｜DSML｜tool_calls>`) and `deepseek_v41`
//! (`<｜DSML｜ calls>`, tag names with a leading space), one `invoke` per call and one
//! `parameter` per argument, as DeepSeek's encoders lay them out. Results are
//! `<function_results><result>…</result></function_results>` (V3.2) or `<tool_result>`
//! blocks (V4, V4.1), each holding `{"name": …, "content": …}`.
//!
//! String values are raw text (`string="true"`), other values JSON (`string="false"`). A
//! string holding DSML markup is written as a JSON string instead, with `<` escaped, and so
//! is JSON holding it: every value round-trips. Names and keys must not hold `"` or `>`.

use serde_json::Value;
use switchboard_tools::ToolCall;

use super::{Call, named_result, template_json};

/// The text every DSML tag carries; a value holding it could close its element.
const DSML: &str = "｜DSML｜";

/// Which DSML generation.
#[derive(Debug, Clone, Copy)]
pub(super) enum Dsml {
    V32,
    V4,
    V41,
}

impl Dsml {
    /// The tag names of the calls section, an invoke and a parameter.
    fn tags(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Dsml::V32 => ("function_calls", "invoke", "parameter"),
            Dsml::V4 => ("tool_calls", "invoke", "parameter"),
            Dsml::V41 => (" calls", " invoke", " parameter"),
        }
    }

    pub(super) fn open(self) -> &'static str {
        match self {
            Dsml::V32 => "<｜DSML｜function_calls>",
            Dsml::V4 => "<｜DSML｜tool_calls>",
            Dsml::V41 => "<｜DSML｜ calls>",
        }
    }
}

pub(super) fn calls(version: Dsml, calls: &[Call<'_>]) -> String {
    let (section, invoke, parameter) = version.tags();
    let mut out = format!("{}\n", version.open());
    for call in calls {
        out.push_str(&format!("<{DSML}{invoke} name=\"{}\">\n", call.name));
        for (key, value) in call.arguments.members() {
            let (is_string, text) = match value {
                Value::String(text) if !text.contains(DSML) => ("true", text.clone()),
                other => ("false", json_value(other)),
            };
            out.push_str(&format!(
                "<{DSML}{parameter} name=\"{key}\" string=\"{is_string}\">{text}</{DSML}{parameter}>\n"
            ));
        }
        out.push_str(&format!("</{DSML}{invoke}>\n"));
    }
    out.push_str(&format!("</{DSML}{section}>"));
    out
}

/// A value as JSON, with `<` escaped when its text would hold DSML markup.
fn json_value(value: &Value) -> String {
    let text = template_json::to_text(value);
    if text.contains(DSML) {
        template_json::to_text_without_tags(value)
    } else {
        text
    }
}

pub(super) fn results(version: Dsml, results: &[(ToolCall, String)]) -> String {
    match version {
        Dsml::V32 => {
            let blocks: Vec<String> = results
                .iter()
                .map(|(call, result)| format!("<result>{}</result>", named_result(call, result)))
                .collect();
            format!(
                "<function_results>\n{}\n</function_results>",
                blocks.join("\n")
            )
        }
        Dsml::V4 | Dsml::V41 => {
            let blocks: Vec<String> = results
                .iter()
                .map(|(call, result)| {
                    format!("<tool_result>{}</tool_result>", named_result(call, result))
                })
                .collect();
            blocks.join("\n\n")
        }
    }
}
