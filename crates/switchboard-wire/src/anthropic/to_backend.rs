//! Our request as an Anthropic Messages request, for an Anthropic backend. System messages
//! move to the top-level `system`; assistant tool calls become `tool_use` blocks and
//! consecutive tool results one user message of `tool_result` blocks; ids are rewritten
//! through an [`IdMap`] so the conversation stays consistent and maps back.
//!
//! Known losses, by the format's nature: developer messages become system ones (and a
//! system message's position is not kept); reasoning is sent back only with the signature
//! Anthropic gave it (Anthropic accepts only thinking blocks it signed itself); a missing
//! `max_tokens` is sent as 4096; arguments come back as compact JSON text; OpenAI fields
//! without a counterpart (`seed`, `logit_bias`, penalties, `logprobs`, …) are dropped with a
//! debug log.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, Message};

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
