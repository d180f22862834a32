//! Our request as an Ollama `/api/chat` request, for an Ollama backend. Ollama has no
//! `tool_choice`: `none` is honoured by sending no tools, `required` or a named function is
//! refused with an error rather than silently ignored. `parallel_tool_calls` cannot be
//! enforced and is not sent. Of the OpenAI API's other fields, sampling ones go into
//! `options`, `response_format` becomes `format` and `reasoning_effort` becomes `think`; the
//! rest is dropped with a debug log.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, Message};

use super::types::{OllamaChatRequest, OllamaFunction, OllamaMessage, OllamaToolCall};
use crate::request::dropped;
use crate::{ChatRequest, ConvertError, ToolChoice};

/// Our request as an Ollama request.
pub fn build_request(request: &ChatRequest) -> Result<OllamaChatRequest, ConvertError> {
    let send_tools = match &request.tool_choice {
        None | Some(ToolChoice::Auto) => true,
        Some(ToolChoice::None) => false,
        Some(ToolChoice::Required) => {
            return Err(ConvertError::Unsupported {
                format: "Ollama",
                what: "tool_choice \"required\"".to_owned(),
            });
        }
        Some(ToolChoice::Function(name)) => {
            return Err(ConvertError::Unsupported {
                format: "Ollama",
                what: format!("tool_choice naming function \"{name}\""),
            });
        }
    };
    let mut names_by_id = std::collections::HashMap::new();
    let mut messages = Vec::with_capacity(request.messages.len());
    for (position, message) in request.messages.iter().enumerate() {
        let path = format!("messages[{position}]");
        messages.push(match message {
            Message::System { content, .. } | Message::Developer { content, .. } => OllamaMessage {
                role: "system".to_owned(),
                content: content.text(),
                ..OllamaMessage::default()
            },
            Message::User { content, .. } => OllamaMessage {
                role: "user".to_owned(),
                content: content.text(),
                images: images(content, &path)?,
                ..OllamaMessage::default()
            },
            Message::Assistant {
                content,
                reasoning_content,
                tool_calls,
                ..
            } => {
                let mut calls = Vec::with_capacity(tool_calls.len());
                for (index, call) in tool_calls.iter().enumerate() {
                    names_by_id.insert(call.id.clone(), call.name.clone());
                    let arguments = match serde_json::from_str::<Value>(&call.arguments) {
                        _ if call.arguments.trim().is_empty() => Value::Object(Map::new()),
                        Ok(value @ Value::Object(_)) => value,
                        Ok(_) | Err(_) => {
                            return Err(ConvertError::invalid(
                                format!("{path}.tool_calls[{index}].function.arguments"),
                                "arguments must be a JSON object",
                            ));
                        }
                    };
                    calls.push(OllamaToolCall {
                        id: Some(call.id.clone()),
                        function: OllamaFunction {
                            index: None,
                            name: call.name.clone(),
                            arguments,
                        },
                    });
                }
                OllamaMessage {
                    role: "assistant".to_owned(),
                    content: content.as_ref().map(Content::text).unwrap_or_default(),
                    thinking: reasoning_content.clone(),
                    tool_calls: (!calls.is_empty()).then_some(calls),
                    ..OllamaMessage::default()
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => OllamaMessage {
                role: "tool".to_owned(),
                content: content.text(),
                tool_name: names_by_id.get(tool_call_id).cloned(),
                tool_call_id: Some(tool_call_id.clone()),
                ..OllamaMessage::default()
            },
        });
    }
    let mut options = Map::new();
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            options.insert(key.to_owned(), value);
        }
    };
    set("temperature", request.temperature.map(Value::from));
    set("top_p", request.top_p.map(Value::from));
    set("num_predict", request.max_tokens.map(Value::from));
    set(
        "stop",
        (!request.stop.is_empty()).then(|| json!(request.stop)),
    );
    set("top_k", request.top_k.map(Value::from));
    set("seed", request.seed.map(Value::from));
    let mut extra = Map::new();
    for (field, value) in &request.extra {
        match field.as_str() {
            "frequency_penalty" | "presence_penalty" => set(field, Some(value.clone())),
            _ => dropped("Ollama", field, "no counterpart in /api/chat"),
        }
    }
    if let Some(format) = &request.response_format {
        match (
            format.get("type").and_then(Value::as_str),
            format.pointer("/json_schema/schema"),
        ) {
            (Some("text"), _) => {}
            (Some("json_object"), _) => {
                extra.insert("format".into(), "json".into());
            }
            (Some("json_schema"), Some(schema)) => {
                extra.insert("format".into(), schema.clone());
            }
            _ => dropped(
                "Ollama",
                "response_format",
                "a json_schema without its schema",
            ),
        }
    }
    if let Some(effort) = &request.reasoning_effort {
        match think(&request.model, effort) {
            Some(think) => {
                extra.insert("think".into(), think);
            }
            None => dropped("Ollama", "reasoning_effort", "not an OpenAI effort level"),
        }
    }
    Ok(OllamaChatRequest {
        model: request.model.clone(),
        messages,
        tools: (send_tools && !request.tools.is_empty())
            .then(|| std::sync::Arc::clone(&request.tools)),
        stream: Some(request.stream),
        options: (!options.is_empty()).then_some(options),
        extra,
    })
}

/// `reasoning_effort` as Ollama's `think`: on or off, except for gpt-oss models, the ones
/// Ollama takes a level for (`low`, `medium`, `high`).
fn think(model: &str, effort: &str) -> Option<Value> {
    let level = match effort {
        "none" => return Some(Value::Bool(false)),
        "minimal" | "low" => "low",
        "medium" => "medium",
        "high" | "xhigh" => "high",
        _ => return None,
    };
    Some(if model.to_ascii_lowercase().contains("gpt-oss") {
        level.into()
    } else {
        Value::Bool(true)
    })
}

/// Base64 images of OpenAI `image_url` parts; Ollama takes only inline data.
fn images(content: &Content, path: &str) -> Result<Option<Vec<String>>, ConvertError> {
    let Content::Parts(parts) = content else {
        return Ok(None);
    };
    let mut images = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {}
            Some("image_url") => {
                let url = part
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match url.split_once(";base64,") {
                    Some((_, data)) if url.starts_with("data:") => images.push(data.to_owned()),
                    _ => {
                        return Err(ConvertError::Unsupported {
                            format: "Ollama",
                            what: format!(
                                "image URLs (only data: URLs) at {path}.content[{index}]"
                            ),
                        });
                    }
                }
            }
            other => {
                return Err(ConvertError::Unsupported {
                    format: "Ollama",
                    what: format!("content part type {other:?} at {path}.content[{index}]"),
                });
            }
        }
    }
    Ok((!images.is_empty()).then_some(images))
}
