//! An Anthropic client's Messages request as our request: `thinking` and
//! `output_config.effort` become a reasoning effort, `output_config.format` a JSON-schema
//! response format; Anthropic's own tools (which have a `type` and no schema) and fields
//! without a counterpart (`metadata`, `cache_control`, redacted thinking, …) are left out;
//! a tool result marked `is_error` reads `Error: …`, and images in tool results follow the
//! results as a user turn.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, FunctionDefinition, Message, ToolCall, ToolDefinition, ToolKind};

use super::types::{
    AnthropicTool, AnthropicToolChoice, Block, ContentBlock, MessageContent, MessagesRequest,
    System, ToolResultContent,
};
use crate::ids::IdMap;
use crate::{ChatRequest, ConvertError, ToolChoice};

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

/// An Anthropic client's request in our model; `ids` maps back ids rewritten on the way
/// out (pass an empty map for ids that came from an Anthropic client). Each system text
/// block is a system message of its own, so a backend that takes blocks gets them back.
pub fn parse_request(request: MessagesRequest, ids: &IdMap) -> Result<ChatRequest, ConvertError> {
    let mut messages = Vec::new();
    match request.system {
        None => {}
        Some(System::Text(text)) => messages.push(Message::system(text)),
        Some(System::Blocks(blocks)) => {
            messages.extend(system_text(blocks).into_iter().map(Message::system));
        }
    }
    for (position, message) in request.messages.into_iter().enumerate() {
        let path = format!("messages.{position}");
        let role = message.role.as_str();
        if !matches!(role, "user" | "assistant" | "system") {
            return Err(ConvertError::invalid(
                format!("{path}.role"),
                format!("must be \"user\", \"assistant\" or \"system\", got \"{role}\""),
            ));
        }
        let blocks = match message.content {
            MessageContent::Text(text) => {
                messages.push(match role {
                    "assistant" => Message::assistant(text, Vec::new()),
                    "system" => Message::system(text),
                    _ => Message::user(text),
                });
                continue;
            }
            MessageContent::Blocks(blocks) => blocks,
        };
        match role {
            "system" => messages.push(Message::system(system_text(blocks).concat())),
            "assistant" => messages.push(assistant_message(blocks, ids, &path)?),
            _ => {
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
    }
    let (tool_choice, disable) = match request.tool_choice {
        None => (None, None),
        Some(AnthropicToolChoice::Auto {
            disable_parallel_tool_use,
        }) => (Some(ToolChoice::Auto), disable_parallel_tool_use),
        Some(AnthropicToolChoice::Any {
            disable_parallel_tool_use,
        }) => (Some(ToolChoice::Required), disable_parallel_tool_use),
        Some(AnthropicToolChoice::Tool {
            name,
            disable_parallel_tool_use,
        }) => (Some(ToolChoice::Function(name)), disable_parallel_tool_use),
        Some(AnthropicToolChoice::None) => (Some(ToolChoice::None), None),
    };
    let reasoning_effort = reasoning_effort(&request.extra)?;
    let response_format = response_format(&request.extra)?;
    Ok(ChatRequest {
        model: request.model,
        messages,
        tools: request
            .tools
            .unwrap_or_default()
            .into_iter()
            .filter(AnthropicTool::is_custom)
            .map(|tool| ToolDefinition {
                kind: ToolKind::Function,
                function: FunctionDefinition {
                    name: tool.name,
                    description: tool.description,
                    parameters: Some(tool.input_schema),
                    strict: None,
                    output_schema: None,
                },
            })
            .collect(),
        tool_choice,
        parallel_tool_calls: disable.map(|disable| !disable),
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: Some(request.max_tokens),
        stop: request.stop_sequences.unwrap_or_default(),
        stream: request.stream.unwrap_or(false),
        reasoning_effort,
        response_format,
        seed: None,
        top_k: request
            .extra
            .get("top_k")
            .and_then(Value::as_u64)
            .and_then(|k| u32::try_from(k).ok()),
        extra: Map::new(),
    })
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
fn reasoning_effort(extra: &Map<String, Value>) -> Result<Option<String>, ConvertError> {
    let thinking = extra.get("thinking").filter(|value| !value.is_null());
    let kind = thinking.map(|thinking| thinking.get("type").and_then(Value::as_str));
    let effort = extra
        .get("output_config")
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
fn response_format(extra: &Map<String, Value>) -> Result<Option<Value>, ConvertError> {
    let (path, format) = match extra
        .get("output_config")
        .and_then(|config| config.get("format"))
        .filter(|value| !value.is_null())
    {
        Some(format) => ("output_config.format", format),
        None => match extra.get("output_format").filter(|value| !value.is_null()) {
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
