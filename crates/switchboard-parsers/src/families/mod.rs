//! One state machine per family, and the few helpers several of them share.

mod args;
mod dsml;
mod gemma4;
mod glm;
mod gpt_oss;
mod hermes;
mod json;
mod kimi_k3;
mod llama_json;
mod mistral;
mod pythonic;
mod qwen_xml;
mod sectioned;

use serde_json::{Map, Value};

use crate::out::Out;
use crate::{Driver, Family, ParseOptions, ToolCallParser};

/// Builds the parser for a family.
pub(crate) fn build(family: Family, out: Out, options: ParseOptions) -> Box<dyn ToolCallParser> {
    let reasoning = options.starts_in_reasoning;
    match family {
        Family::Hermes => Box::new(Driver::new(hermes::Hermes::new(reasoning), out)),
        Family::Qwen3Coder => Box::new(Driver::new(qwen_xml::QwenXml::new(reasoning), out)),
        Family::Llama3Json => Box::new(Driver::new(llama_json::LlamaJson::new(), out)),
        Family::Pythonic => Box::new(Driver::new(pythonic::Pythonic::new(), out)),
        Family::Mistral => Box::new(Driver::new(mistral::Mistral::new(reasoning), out)),
        Family::GptOss => Box::new(Driver::new(gpt_oss::GptOss::new(), out)),
        Family::DeepseekV3 => Box::new(Driver::new(
            sectioned::Sectioned::new(sectioned::Layout::DeepseekV3, reasoning),
            out,
        )),
        Family::DeepseekV31 => Box::new(Driver::new(
            sectioned::Sectioned::new(sectioned::Layout::DeepseekV31, reasoning),
            out,
        )),
        Family::DeepseekV32 => Box::new(Driver::new(
            dsml::DsmlParser::new(dsml::Dsml::V32, reasoning),
            out,
        )),
        Family::DeepseekV4 => Box::new(Driver::new(
            dsml::DsmlParser::new(dsml::Dsml::V4, reasoning),
            out,
        )),
        Family::DeepseekV41 => Box::new(Driver::new(
            dsml::DsmlParser::new(dsml::Dsml::V41, reasoning),
            out,
        )),
        Family::KimiK2 => Box::new(Driver::new(
            sectioned::Sectioned::new(sectioned::Layout::KimiK2, reasoning),
            out,
        )),
        Family::KimiK3 => Box::new(Driver::new(kimi_k3::KimiK3::new(reasoning), out)),
        Family::Glm45 | Family::Glm47 => Box::new(Driver::new(glm::Glm::new(reasoning), out)),
        Family::Gemma4 => Box::new(Driver::new(gemma4::Gemma4::new(reasoning), out)),
        Family::Json => Box::new(Driver::new(json::Json::new(), out)),
    }
}

/// Reports one call written as a JSON object `{"name": …, "arguments"|"parameters": …}`.
/// Arguments given as a string holding a JSON object (double-encoded) are decoded.
pub(crate) fn emit_json_call(out: &mut Out, call: &Value) -> Result<(), String> {
    let Some(object) = call.as_object() else {
        return Err("the call is not a JSON object".to_owned());
    };
    let Some(name) = object.get("name").and_then(Value::as_str) else {
        return Err("the call has no \"name\" string".to_owned());
    };
    let arguments = ["arguments", "parameters"]
        .iter()
        .find_map(|key| object.get(*key));
    let arguments = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(Value::String(text)) if text.trim().is_empty() => Map::new(),
        Some(Value::String(text)) => match serde_json::from_str::<Map<String, Value>>(text) {
            Ok(map) => map,
            Err(_) => {
                return Err(format!(
                    "the arguments of {name} are a string, not a JSON object"
                ));
            }
        },
        Some(_) => return Err(format!("the arguments of {name} are not a JSON object")),
    };
    out.start(name);
    out.arguments(&Value::Object(arguments).to_string());
    out.end();
    Ok(())
}
