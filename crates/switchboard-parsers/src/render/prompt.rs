//! The system-prompt text that teaches a model without native tool calling to call tools in
//! its family's markup, and the corrective message for the one retry when a required call
//! is missing. The example call in the prompt is written by the renderer itself, so the
//! model is shown exactly the markup the parser reads.

use serde_json::{Map, Value, json};
use switchboard_tools::{ToolCall, ToolDefinition};

use super::{call_opener, render_tool_calls, template_json};
use crate::Family;

/// Which calls the request demands: OpenAI's `tool_choice` without `none`, for which no
/// tools are sent at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRequirement {
    /// The model decides whether to call.
    Auto,
    /// The reply must call at least one tool.
    Required,
    /// The reply must call this tool.
    Named(String),
}

/// The text appended to the system prompt: the tools (name, description, JSON Schema of the
/// arguments), how to call them in the family's markup with an example, whether several
/// calls may be made in one reply, and what the requirement demands. Empty when there are no
/// tools.
pub fn tool_prompt(
    family: Family,
    tools: &[ToolDefinition],
    requirement: &ToolRequirement,
    parallel: bool,
) -> String {
    let named = match requirement {
        ToolRequirement::Named(name) => tools.iter().find(|tool| tool.name() == name),
        _ => None,
    };
    let Some(example_tool) = named.or_else(|| tools.first()) else {
        return String::new();
    };
    let mut out = String::from(
        "# Tools\n\nYou can call the tools below. Each line describes one tool as JSON: its \
         name, what it does, and the JSON Schema of its arguments.\n\n",
    );
    for tool in tools {
        out.push_str(&describe(tool));
        out.push('\n');
    }
    let example = ToolCall {
        id: "call_example".to_owned(),
        name: example_tool.name().to_owned(),
        arguments: template_json::to_text(&example_arguments(example_tool)),
    };
    out.push_str(&format!(
        "\n## Calling a tool\n\nTo call a tool, write the call in exactly this format ({}). \
         For example, a call to {}:\n\n{}\n\n",
        value_rule(family),
        example.name,
        render_tool_calls(family, std::slice::from_ref(&example))
    ));
    if parallel {
        out.push_str(
            "You may call several tools in one reply when they do not depend on each other: ",
        );
        out.push_str(several_rule(family));
    } else {
        out.push_str("Call at most one tool per reply.");
    }
    out.push('\n');
    out.push_str(&match requirement {
        ToolRequirement::Auto => "Call a tool only when it helps; otherwise answer in plain \
                                  text, without any of this markup."
            .to_owned(),
        ToolRequirement::Required => "In this reply you must call at least one of these \
                                      tools; do not answer in plain text."
            .to_owned(),
        ToolRequirement::Named(name) => {
            format!("In this reply you must call the tool {name}; do not answer in plain text.")
        }
    });
    out.push_str(
        "\nWhen you call tools, end your reply after the calls: their results come back in \
         the next message.\n",
    );
    out
}

/// A short user message for the one retry when `requirement` asked for a call and the reply
/// made none.
pub fn corrective_message(family: Family, requirement: &ToolRequirement) -> String {
    let opener = call_opener(family);
    match requirement {
        ToolRequirement::Auto => format!(
            "Your reply did not follow the tool-call format. If a tool is needed, reply again \
             with the call in the format the system prompt describes (it begins with \
             {opener}); otherwise answer in plain text."
        ),
        ToolRequirement::Required => format!(
            "Your reply did not call a tool, but a tool call is required. Reply again with a \
             call to one of the tools, in the format the system prompt describes (it begins \
             with {opener}), and no other text."
        ),
        ToolRequirement::Named(name) => format!(
            "Your reply did not call {name}, but a call to {name} is required. Reply again \
             with a call to {name}, in the format the system prompt describes (it begins \
             with {opener}), and no other text."
        ),
    }
}

/// One tool as a line of JSON; the output schema stays out, as providers never see it.
fn describe(tool: &ToolDefinition) -> String {
    let mut line = Map::new();
    line.insert("name".to_owned(), json!(tool.function.name));
    if let Some(description) = &tool.function.description {
        line.insert("description".to_owned(), json!(description));
    }
    if let Some(parameters) = &tool.function.parameters {
        line.insert("parameters".to_owned(), parameters.clone());
    }
    template_json::to_text(&line)
}

/// Example arguments: up to two properties, required ones first, with placeholder values
/// of their schema's type, so the example stays short and valid.
fn example_arguments(tool: &ToolDefinition) -> Map<String, Value> {
    let schema = tool.function.parameters.as_ref();
    let Some(properties) = schema
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
    else {
        return Map::new();
    };
    let required: Vec<&str> = schema
        .and_then(|schema| schema.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut members: Vec<(&String, &Value)> = properties.iter().collect();
    members.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    members
        .into_iter()
        .take(2)
        .map(|(name, schema)| (name.clone(), placeholder(schema)))
        .collect()
}

fn placeholder(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    match kind {
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => json!({}),
        "null" => Value::Null,
        _ => json!("..."),
    }
}

/// How argument values are written, in the family's markup.
fn value_rule(family: Family) -> &'static str {
    match family {
        Family::Qwen3Coder | Family::Glm45 | Family::Glm47 => {
            "one element per argument: string values as plain text, other values as JSON"
        }
        Family::DeepseekV32 | Family::DeepseekV4 | Family::DeepseekV41 => {
            "one parameter per argument: string=\"true\" and plain text for string values, \
             string=\"false\" and JSON for other values"
        }
        Family::KimiK3 => {
            "one argument element per argument, with its type: string values as plain text, \
             other values as JSON"
        }
        Family::Pythonic => {
            "keyword arguments with Python literals: quoted strings, numbers, True, False, \
             None, lists and dicts"
        }
        Family::Gemma4 => {
            "keys without quotes, string values between <|\"|> tokens, other values bare"
        }
        Family::Hermes
        | Family::Llama3Json
        | Family::Mistral
        | Family::DeepseekV3
        | Family::DeepseekV31
        | Family::GptOss
        | Family::KimiK2
        | Family::Json => "the arguments as a JSON object matching the tool's parameters",
    }
}

/// How several calls share one reply, in the family's markup.
fn several_rule(family: Family) -> &'static str {
    match family {
        Family::Pythonic => "put all the calls in the one list, separated by commas.",
        Family::Json => "put all the calls in the one \"tool_calls\" array.",
        Family::Llama3Json => "write the call objects one after another, separated by \"; \".",
        Family::DeepseekV3
        | Family::DeepseekV31
        | Family::DeepseekV32
        | Family::DeepseekV4
        | Family::DeepseekV41
        | Family::KimiK2 => "put all the calls in the one calls section, one after another.",
        Family::KimiK3 => "put all the call elements in the one tools element.",
        Family::Hermes
        | Family::Qwen3Coder
        | Family::Mistral
        | Family::GptOss
        | Family::Glm45
        | Family::Glm47
        | Family::Gemma4 => "write the calls one after another.",
    }
}
