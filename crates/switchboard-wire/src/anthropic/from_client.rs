//! An Anthropic client's Messages request, part by part, as our request (the Messages
//! front-end checks each part and moves it here, in one pass): `thinking` and
//! `output_config.effort` become a reasoning effort, `output_config.format` a JSON-schema
//! response format; Anthropic's own tools (which have a `type` and no schema) and fields
//! without a counterpart (`metadata`, `cache_control`, redacted thinking, …) are left out;
//! a tool result marked `is_error` reads `Error: …`, and images in tool results follow the
//! results as a user turn.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, FunctionDefinition, Message, ToolCall, ToolDefinition, ToolKind};

use super::types::{
    AnthropicTool, AnthropicToolChoice, Block, ContentBlock, MessageContent, Role, System,
    ToolResultContent,
};
use crate::ids::IdMap;
use crate::{ConvertError, ToolChoice};

/// How a `tool_reference` in a tool result reads to a model: the tool is offered from then
/// on.
const LOADED: &str = "Tool loaded: ";

/// An Anthropic image block as an OpenAI `image_url` part.
fn image_part(source: &Value) -> Value {
    let url = match source.get("type").and_then(Value::as_str) {
        Some("base64") => format!(
            "data:{};base64,{}",
            source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            source
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        _ => source
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    };
    json!({"type": "image_url", "image_url": {"url": url}})
}

fn block_kind(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Known(known) => serde_json::to_value(known)
            .ok()
            .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
        ContentBlock::Other(value) => value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("(missing)")
            .to_owned(),
    }
}

/// The text a tool result gives the model, and the images it carries (which only a user
/// turn can hold in the other formats). `is_error` results read `Error: …`, the convention
/// models are told to expect.
fn tool_result(
    content: Option<ToolResultContent>,
    is_error: bool,
    path: &str,
) -> Result<(String, Vec<Value>), ConvertError> {
    let mut images = Vec::new();
    let text = match content {
        None => String::new(),
        Some(ToolResultContent::Text(text)) => text,
        Some(ToolResultContent::Blocks(blocks)) => {
            let mut text = String::new();
            for (index, block) in blocks.into_iter().enumerate() {
                match block {
                    ContentBlock::Known(Block::Text { text: part, .. }) => text.push_str(&part),
                    ContentBlock::Known(Block::Image { source, .. }) => {
                        images.push(image_part(&source))
                    }
                    // The tool itself is offered beside the others; the model reads that it
                    // was found.
                    ContentBlock::Known(Block::ToolReference { tool_name }) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(LOADED);
                        text.push_str(&tool_name);
                    }
                    other => {
                        return Err(ConvertError::Unsupported {
                            format: "our model",
                            what: format!(
                                "tool_result block type \"{}\" at {path}.content.{index}",
                                block_kind(&other)
                            ),
                        });
                    }
                }
            }
            text
        }
    };
    let text = if is_error && !text.starts_with("Error") {
        format!("Error: {text}")
    } else {
        text
    };
    Ok((text, images))
}

/// The text of a system prompt or system message; only text blocks carry any.
fn system_text(blocks: Vec<ContentBlock>) -> Vec<String> {
    blocks
        .into_iter()
        .filter_map(|block| match block {
            ContentBlock::Known(Block::Text { text, .. }) => Some(text),
            _ => None,
        })
        .collect()
}

/// A Messages request's system prompt in our model: each text block a system message of
/// its own, so that a backend that takes blocks gets them back.
pub fn system(system: System) -> Vec<Message> {
    match system {
        System::Text(text) => vec![Message::system(text)],
        System::Blocks(blocks) => system_text(blocks)
            .into_iter()
            .map(Message::system)
            .collect(),
    }
}

/// One message of an Anthropic client's conversation (at `path`, for its problems) in our
/// model, appended to `messages`; `ids` maps back ids rewritten on the way out (an empty
/// map for ids that came from an Anthropic client). A user turn's tool results become tool
/// messages, and the images among them follow as a user message.
pub fn push_message(
    role: Role,
    content: MessageContent,
    ids: &IdMap,
    path: &str,
    messages: &mut Vec<Message>,
) -> Result<(), ConvertError> {
    let blocks = match content {
        MessageContent::Text(text) => {
            messages.push(match role {
                Role::Assistant => Message::assistant(text, Vec::new()),
                Role::System => Message::system(text),
                Role::User => Message::user(text),
            });
            return Ok(());
        }
        MessageContent::Blocks(blocks) => blocks,
    };
    match role {
        Role::System => messages.push(Message::system(system_text(blocks).concat())),
        Role::Assistant => messages.push(assistant_message(blocks, ids, path)?),
        Role::User => {
            let mut parts = Vec::new();
            for (index, block) in blocks.into_iter().enumerate() {
                match block {
                    ContentBlock::Known(Block::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        ..
                    }) => {
                        let (text, images) = tool_result(
                            content,
                            is_error == Some(true),
                            &format!("{path}.content.{index}"),
                        )?;
                        messages.push(Message::Tool {
                            tool_call_id: ids.from_anthropic(&tool_use_id),
                            content: Content::Text(text),
                        });
                        parts.extend(images);
                    }
                    ContentBlock::Known(Block::Text { text, .. }) => {
                        parts.push(json!({"type": "text", "text": text}))
                    }
                    ContentBlock::Known(Block::Image { source, .. }) => {
                        parts.push(image_part(&source))
                    }
                    other => {
                        return Err(ConvertError::Unsupported {
                            format: "our model",
                            what: format!(
                                "user block type \"{}\" at {path}.content.{index}",
                                block_kind(&other)
                            ),
                        });
                    }
                }
            }
            if !parts.is_empty() {
                messages.push(Message::User {
                    content: Content::Parts(parts),
                    name: None,
                });
            }
        }
    }
    Ok(())
}

/// `tool_choice` in our model, with `parallel_tool_calls` (the negation of Anthropic's
/// `disable_parallel_tool_use`).
pub fn tool_choice(choice: AnthropicToolChoice) -> (ToolChoice, Option<bool>) {
    let (choice, disable) = match choice {
        AnthropicToolChoice::Auto {
            disable_parallel_tool_use,
        } => (ToolChoice::Auto, disable_parallel_tool_use),
        AnthropicToolChoice::Any {
            disable_parallel_tool_use,
        } => (ToolChoice::Required, disable_parallel_tool_use),
        AnthropicToolChoice::Tool {
            name,
            disable_parallel_tool_use,
        } => (ToolChoice::Function(name), disable_parallel_tool_use),
        AnthropicToolChoice::None => (ToolChoice::None, None),
    };
    (choice, disable.map(|disable| !disable))
}

/// A custom tool (see [`AnthropicTool::is_custom`]) in our model.
pub fn tool(tool: AnthropicTool) -> ToolDefinition {
    ToolDefinition {
        kind: ToolKind::Function,
        function: FunctionDefinition {
            name: tool.name,
            description: tool.description,
            parameters: Some(tool.input_schema),
            strict: None,
            output_schema: None,
        },
    }
}

/// An assistant turn: its text, its reasoning (with the signature when there is exactly
/// one signed thinking block, the only case where the pair stays true), and its calls.
fn assistant_message(
    blocks: Vec<ContentBlock>,
    ids: &IdMap,
    path: &str,
) -> Result<Message, ConvertError> {
    let (mut text, mut reasoning, mut tool_calls) = (String::new(), String::new(), Vec::new());
    let mut signatures = Vec::new();
    for (index, block) in blocks.into_iter().enumerate() {
        match block {
            ContentBlock::Known(Block::Text { text: part, .. }) => text.push_str(&part),
            ContentBlock::Known(Block::Thinking {
                thinking,
                signature,
            }) => {
                reasoning.push_str(&thinking);
                signatures.push(signature.unwrap_or_default());
            }
            ContentBlock::Known(Block::RedactedThinking { .. }) => {}
            ContentBlock::Known(Block::ToolUse {
                id, name, input, ..
            }) => tool_calls.push(ToolCall {
                id: ids.from_anthropic(&id),
                name,
                arguments: input.to_string(),
            }),
            other => {
                return Err(ConvertError::Unsupported {
                    format: "our model",
                    what: format!(
                        "assistant block type \"{}\" at {path}.content.{index}",
                        block_kind(&other)
                    ),
                });
            }
        }
    }
    let reasoning_signature = match signatures.as_slice() {
        [signature] if !signature.is_empty() => Some(signature.clone()),
        _ => None,
    };
    Ok(Message::Assistant {
        content: (!text.is_empty()).then_some(Content::Text(text)),
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        reasoning_signature,
        tool_calls,
        name: None,
    })
}

/// `thinking` and `output_config.effort` as a reasoning effort. An explicit effort wins;
/// a thinking budget maps by size (under 4,096 tokens `low`, under 16,384 `medium`, else
/// `high`); adaptive thinking without an effort, and disabled thinking, leave the
/// backend's default.
pub fn reasoning_effort(
    thinking: Option<&Map<String, Value>>,
    output_config: Option<&Map<String, Value>>,
) -> Result<Option<String>, ConvertError> {
    let kind = thinking.map(|thinking| thinking.get("type").and_then(Value::as_str));
    let effort = output_config
        .and_then(|config| config.get("effort"))
        .filter(|value| !value.is_null());
    match kind {
        None | Some(Some("enabled" | "adaptive" | "disabled")) => {}
        Some(_) => {
            return Err(ConvertError::invalid(
                "thinking.type",
                "must be \"enabled\", \"adaptive\" or \"disabled\"",
            ));
        }
    }
    if kind == Some(Some("disabled")) {
        return Ok(None);
    }
    if let Some(effort) = effort {
        let mapped = match effort.as_str() {
            Some(level @ ("low" | "medium" | "high" | "xhigh")) => level,
            Some("max") => "xhigh",
            _ => {
                return Err(ConvertError::invalid(
                    "output_config.effort",
                    format!(
                        "must be \"low\", \"medium\", \"high\", \"xhigh\" or \"max\", got {effort}"
                    ),
                ));
            }
        };
        return Ok(Some(mapped.to_owned()));
    }
    if kind != Some(Some("enabled")) {
        return Ok(None);
    }
    let budget = thinking
        .and_then(|thinking| thinking.get("budget_tokens"))
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            ConvertError::invalid(
                "thinking.budget_tokens",
                "enabled thinking needs budget_tokens, a positive integer",
            )
        })?;
    Ok(Some(
        match budget {
            0..4096 => "low",
            4096..16384 => "medium",
            _ => "high",
        }
        .to_owned(),
    ))
}

/// `output_config.format` (or the older top-level `output_format`), a JSON schema the
/// answer must follow, as OpenAI's `response_format`.
pub fn response_format(
    output_config: Option<&Map<String, Value>>,
    output_format: Option<&Value>,
) -> Result<Option<Value>, ConvertError> {
    let (path, format) = match output_config
        .and_then(|config| config.get("format"))
        .filter(|value| !value.is_null())
    {
        Some(format) => ("output_config.format", format),
        None => match output_format.filter(|value| !value.is_null()) {
            Some(format) => ("output_format", format),
            None => return Ok(None),
        },
    };
    match (
        format.get("type").and_then(Value::as_str),
        format.get("schema"),
    ) {
        (Some("json_schema"), Some(schema @ Value::Object(_))) => Ok(Some(json!({
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema}
        }))),
        _ => Err(ConvertError::invalid(
            path,
            "must be {\"type\": \"json_schema\", \"schema\": {…}} with the schema as an object",
        )),
    }
}
