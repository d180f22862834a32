//! Our request ↔ Anthropic Messages request. System messages move to the top-level
//! `system`; assistant tool calls become `tool_use` blocks and consecutive tool results one
//! user message of `tool_result` blocks; ids are rewritten through an [`IdMap`] so the
//! conversation stays consistent and maps back.
//!
//! Known losses, by the format's nature: developer messages become system ones (and a
//! system message's position is not kept); reasoning is sent back only with the signature
//! Anthropic gave it (Anthropic accepts only thinking blocks it signed itself); a missing
//! `max_tokens` is sent as 4096; arguments come back as compact JSON text; OpenAI fields
//! without a counterpart (`seed`, `logit_bias`, penalties, `logprobs`, …) are dropped with a
//! debug log.
//!
//! From an Anthropic client: `thinking` and `output_config.effort` become a reasoning
//! effort, `output_config.format` a JSON-schema response format; Anthropic's own tools
//! (which have a `type` and no schema) and fields without a counterpart (`metadata`,
//! `cache_control`, redacted thinking, …) are left out; a tool result marked `is_error`
//! reads `Error: …`, and images in tool results follow the results as a user turn.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, FunctionDefinition, Message, ToolCall, ToolDefinition, ToolKind};

use super::types::{
    AnthropicMessage, AnthropicTool, AnthropicToolChoice, Block, ContentBlock, MessageContent,
    MessagesRequest, System, ToolResultContent,
};
use crate::ids::IdMap;
use crate::request::dropped;
use crate::{ChatRequest, ConvertError, ToolChoice};

/// Sent when the caller sets no limit: Anthropic requires one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Our request as an Anthropic Messages request.
pub fn build_request(
    request: &ChatRequest,
    ids: &mut IdMap,
) -> Result<MessagesRequest, ConvertError> {
    let mut system = Vec::new();
    let mut messages: Vec<AnthropicMessage> = Vec::new();
    let mut in_results = false;
    for (position, message) in request.messages.iter().enumerate() {
        let path = format!("messages[{position}]");
        let was_results = std::mem::replace(&mut in_results, false);
        match message {
            Message::System { content, .. } | Message::Developer { content, .. } => {
                system.push(ContentBlock::Known(Block::text(content.text())));
            }
            Message::User { content, .. } => {
                let content = match content {
                    Content::Text(text) => MessageContent::Text(text.clone()),
                    Content::Parts(parts) => MessageContent::Blocks(
                        parts
                            .iter()
                            .enumerate()
                            .map(|(index, part)| {
                                user_block(part, &format!("{path}.content[{index}]"))
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                };
                messages.push(AnthropicMessage {
                    role: "user".to_owned(),
                    content,
                });
            }
            Message::Assistant {
                content,
                reasoning_content,
                reasoning_signature,
                tool_calls,
                ..
            } => {
                let mut blocks = Vec::new();
                if let (Some(thinking), Some(signature)) = (reasoning_content, reasoning_signature)
                {
                    blocks.push(ContentBlock::Known(Block::Thinking {
                        thinking: thinking.clone(),
                        signature: Some(signature.clone()),
                    }));
                }
                if let Some(text) = content
                    .as_ref()
                    .map(Content::text)
                    .filter(|text| !text.is_empty())
                {
                    blocks.push(ContentBlock::Known(Block::text(text)));
                }
                for (index, call) in tool_calls.iter().enumerate() {
                    let input = arguments_object(
                        &call.arguments,
                        &format!("{path}.tool_calls[{index}].function.arguments"),
                    )?;
                    blocks.push(ContentBlock::Known(Block::ToolUse {
                        id: ids.to_anthropic(&call.id),
                        name: call.name.clone(),
                        input,
                        extra: Map::new(),
                    }));
                }
                messages.push(AnthropicMessage {
                    role: "assistant".to_owned(),
                    content: MessageContent::Blocks(blocks),
                });
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let block = ContentBlock::Known(Block::ToolResult {
                    tool_use_id: ids.to_anthropic(tool_call_id),
                    content: Some(ToolResultContent::Text(content.text())),
                    is_error: None,
                    extra: Map::new(),
                });
                match messages.last_mut() {
                    Some(AnthropicMessage {
                        content: MessageContent::Blocks(blocks),
                        ..
                    }) if was_results => {
                        blocks.push(block);
                    }
                    _ => messages.push(AnthropicMessage {
                        role: "user".to_owned(),
                        content: MessageContent::Blocks(vec![block]),
                    }),
                }
                in_results = true;
            }
        }
    }
    let disable_parallel_tool_use = request.parallel_tool_calls.map(|parallel| !parallel);
    let tool_choice = match (&request.tool_choice, disable_parallel_tool_use) {
        (None, Some(true)) | (Some(ToolChoice::Auto), _) => Some(AnthropicToolChoice::Auto {
            disable_parallel_tool_use,
        }),
        (None, _) => None,
        (Some(ToolChoice::None), _) => Some(AnthropicToolChoice::None),
        (Some(ToolChoice::Required), _) => Some(AnthropicToolChoice::Any {
            disable_parallel_tool_use,
        }),
        (Some(ToolChoice::Function(name)), _) => Some(AnthropicToolChoice::Tool {
            name: name.clone(),
            disable_parallel_tool_use,
        }),
    };
    let mut wire = MessagesRequest {
        model: request.model.clone(),
        messages,
        system: (!system.is_empty()).then_some(System::Blocks(system)),
        max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        tools: (!request.tools.is_empty()).then(|| {
            request
                .tools
                .iter()
                .map(|tool| AnthropicTool {
                    name: tool.function.name.clone(),
                    description: tool.function.description.clone(),
                    input_schema: tool
                        .function
                        .parameters
                        .clone()
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                    extra: Map::new(),
                })
                .collect()
        }),
        tool_choice,
        temperature: request.temperature,
        top_p: request.top_p,
        stop_sequences: (!request.stop.is_empty()).then(|| request.stop.clone()),
        stream: request.stream.then_some(true),
        extra: Map::new(),
    };
    standard_fields(request, &mut wire);
    Ok(wire)
}

/// Anthropic's smallest thinking budget.
const MIN_THINKING_BUDGET: u32 = 1024;

/// The thinking budget for one of OpenAI's `reasoning_effort` levels; `none` is no thinking.
fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "minimal" => Some(MIN_THINKING_BUDGET),
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16_384),
        "xhigh" => Some(32_768),
        _ => None,
    }
}

/// The OpenAI API's other fields, where Anthropic has a counterpart: `top_k`,
/// `response_format` (a JSON schema, as `output_config.format`), `reasoning_effort` (a
/// thinking budget), `user` (`metadata.user_id`) and `service_tier`. The rest is dropped.
fn standard_fields(request: &ChatRequest, wire: &mut MessagesRequest) {
    if let Some(top_k) = request.top_k {
        wire.extra.insert("top_k".into(), top_k.into());
    }
    if let Some(format) = &request.response_format {
        match (
            format.get("type").and_then(Value::as_str),
            format.pointer("/json_schema/schema"),
        ) {
            (Some("text"), _) => {}
            (Some("json_schema"), Some(schema)) => {
                wire.extra.insert(
                    "output_config".into(),
                    json!({"format": {"type": "json_schema", "schema": schema}}),
                );
            }
            _ => dropped(
                "Anthropic",
                "response_format",
                "only a json_schema with its schema has a counterpart (output_config.format)",
            ),
        }
    }
    if let Some(effort) = &request.reasoning_effort {
        think(request, effort, wire);
    }
    if request.seed.is_some() {
        dropped("Anthropic", "seed", "Anthropic has no seed");
    }
    for (field, value) in &request.extra {
        match (field.as_str(), value.as_str()) {
            ("user", Some(user)) => {
                wire.extra
                    .insert("metadata".into(), json!({"user_id": user}));
            }
            ("service_tier", Some("auto")) => {
                wire.extra.insert("service_tier".into(), "auto".into());
            }
            ("service_tier", Some("default")) => {
                wire.extra
                    .insert("service_tier".into(), "standard_only".into());
            }
            _ => dropped("Anthropic", field, "no counterpart in the Messages API"),
        }
    }
}

/// `reasoning_effort` as extended thinking. Thinking tokens count toward `max_tokens`: with
/// no limit asked, the answer keeps the usual room on top of the budget; under a client's
/// limit the budget takes at most half of it. Anthropic refuses thinking with a forced tool
/// call (the request's `tool_choice` wins), with sampling changed (thinking wins), and after
/// a tool call whose signed thinking block the history cannot carry back (no thinking).
fn think(request: &ChatRequest, effort: &str, wire: &mut MessagesRequest) {
    let Some(budget) = thinking_budget(effort) else {
        if effort != "none" {
            dropped(
                "Anthropic",
                "reasoning_effort",
                "not an OpenAI effort level",
            );
        }
        return;
    };
    if matches!(
        request.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Function(_))
    ) {
        dropped(
            "Anthropic",
            "reasoning_effort",
            "Anthropic does not think when a tool call is forced",
        );
        return;
    }
    let last_assistant = request
        .messages
        .iter()
        .rev()
        .find(|message| matches!(message, Message::Assistant { .. }));
    if matches!(last_assistant, Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty())
    {
        dropped(
            "Anthropic",
            "reasoning_effort",
            "thinking in a tool loop needs the signed thinking block of the turn that called, which OpenAI-shaped history does not carry",
        );
        return;
    }
    let budget = match request.max_tokens {
        None => {
            wire.max_tokens = budget + DEFAULT_MAX_TOKENS;
            budget
        }
        Some(max) => budget.min(max / 2),
    };
    if budget < MIN_THINKING_BUDGET {
        dropped(
            "Anthropic",
            "reasoning_effort",
            "max_tokens leaves no room for Anthropic's smallest thinking budget (1024)",
        );
        return;
    }
    if wire.temperature.take().is_some() {
        dropped("Anthropic", "temperature", "thinking needs the default");
    }
    if wire.extra.remove("top_k").is_some() {
        dropped("Anthropic", "top_k", "thinking needs the default");
    }
    if wire.top_p.is_some_and(|top_p| top_p < 0.95) {
        wire.top_p = None;
        dropped("Anthropic", "top_p", "thinking needs 0.95 or more");
    }
    wire.extra.insert(
        "thinking".into(),
        json!({"type": "enabled", "budget_tokens": budget}),
    );
}

/// Arguments text as the JSON object Anthropic's `input` must be; empty text is `{}`.
fn arguments_object(arguments: &str, path: &str) -> Result<Value, ConvertError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(ConvertError::invalid(
            path,
            "arguments must be a JSON object",
        )),
        Err(error) => Err(ConvertError::invalid(
            path,
            format!("arguments are not valid JSON: {error}"),
        )),
    }
}

/// An OpenAI content part as an Anthropic block: text, or an image by URL or data URL.
fn user_block(part: &Value, path: &str) -> Result<ContentBlock, ConvertError> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => Ok(ContentBlock::Known(Block::text(
            part.get("text").and_then(Value::as_str).unwrap_or_default(),
        ))),
        Some("image_url") => {
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let source = match url
                .strip_prefix("data:")
                .and_then(|rest| rest.split_once(";base64,"))
            {
                Some((media_type, data)) => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
                None => json!({"type": "url", "url": url}),
            };
            Ok(ContentBlock::Known(Block::Image {
                source,
                extra: Map::new(),
            }))
        }
        other => Err(ConvertError::Unsupported {
            format: "Anthropic",
            what: format!(
                "content part type {} at {path}",
                other.map_or_else(|| "(missing)".to_owned(), |t| format!("\"{t}\""))
            ),
        }),
    }
}

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
