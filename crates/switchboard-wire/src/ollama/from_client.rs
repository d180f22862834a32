//! An Ollama `/api/chat` request as our request (what a client of Ollama's API sends):
//! calls without ids get generated ones, and results are matched to their calls.

use serde_json::{Map, Value, json};
use switchboard_tools::{Content, Message, ToolCall};

use super::types::OllamaChatRequest;
use crate::ids::IdSource;
use crate::{ChatRequest, ConvertError};

/// An Ollama request in our model. Calls without ids get generated ones, and results
/// without `tool_call_id` are matched to the earliest unanswered call of the same name.
pub fn parse_request(
    request: OllamaChatRequest,
    ids: &mut IdSource,
) -> Result<ChatRequest, ConvertError> {
    let mut messages = Vec::with_capacity(request.messages.len());
    let mut unanswered: Vec<(String, String)> = Vec::new();
    for (position, message) in request.messages.into_iter().enumerate() {
        messages.push(match message.role.as_str() {
            "system" => Message::system(message.content),
            "user" => match message.images {
                None => Message::user(message.content),
                Some(images) => {
                    let mut parts = vec![json!({"type": "text", "text": message.content})];
                    parts.extend(images.into_iter().map(|data| {
                        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}})
                    }));
                    Message::User { content: Content::Parts(parts), name: None }
                }
            },
            "assistant" => {
                let tool_calls: Vec<ToolCall> = message
                    .tool_calls
                    .unwrap_or_default()
                    .into_iter()
                    .map(|call| ToolCall {
                        id: call.id.unwrap_or_else(|| ids.call_id()),
                        name: call.function.name,
                        arguments: match call.function.arguments {
                            Value::String(text) => text,
                            Value::Null => "{}".to_owned(),
                            other => other.to_string(),
                        },
                    })
                    .collect();
                unanswered.extend(tool_calls.iter().map(|call| (call.id.clone(), call.name.clone())));
                Message::Assistant {
                    content: (!message.content.is_empty()).then_some(Content::Text(message.content)),
                    reasoning_content: message.thinking,
                    reasoning_signature: None,
                    tool_calls,
                    name: None,
                }
            }
            "tool" => {
                let id = match message.tool_call_id {
                    Some(id) => id,
                    None => {
                        let found = unanswered
                            .iter()
                            .position(|(_, name)| message.tool_name.as_deref().is_none_or(|wanted| wanted == name))
                            .ok_or_else(|| {
                                ConvertError::invalid(format!("messages[{position}]"), "tool result answers no earlier tool call")
                            })?;
                        unanswered.remove(found).0
                    }
                };
                unanswered.retain(|(pending, _)| *pending != id);
                Message::tool(id, message.content)
            }
            other => {
                return Err(ConvertError::invalid(
                    format!("messages[{position}].role"),
                    format!("must be system, user, assistant or tool, got \"{other}\""),
                ));
            }
        });
    }
    let options = request.options.unwrap_or_default();
    let number = |key: &str| options.get(key).and_then(Value::as_f64);
    Ok(ChatRequest {
        model: request.model,
        messages,
        tools: request.tools.unwrap_or_default(),
        tool_choice: None,
        reasoning_effort: None,
        response_format: None,
        seed: options.get("seed").and_then(Value::as_i64),
        top_k: options
            .get("top_k")
            .and_then(Value::as_u64)
            .and_then(|k| u32::try_from(k).ok()),
        parallel_tool_calls: None,
        temperature: number("temperature"),
        top_p: number("top_p"),
        max_tokens: options
            .get("num_predict")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        stop: options
            .get("stop")
            .and_then(Value::as_array)
            .map(|stops| {
                stops
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        // Ollama streams when `stream` is absent.
        stream: request.stream.unwrap_or(true),
        extra: Map::new(),
    })
}
