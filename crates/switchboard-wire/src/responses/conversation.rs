//! A Responses conversation (the stored turns it continues and the request's own input
//! items) as Chat Completions messages: `instructions` and the leading system/developer
//! messages one system message (local chat templates reject more than one, or a
//! `developer` role); an assistant's reasoning, text and calls one assistant message; each
//! call output a tool message, which must answer a call made earlier in the conversation;
//! an MCP call the gateway ran, a call and its result; an answered approval request, a call
//! for the gateway to run or refuse.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use switchboard_tools::{Content, Message, ToolCall};

use super::items::{ContentPart, Execution, Item, MessageContent, Role, ToolOutput};
use super::tools::model_name;
use crate::ConvertError;

/// What the model reads, replayed, of a search that loaded nothing because its input was
/// unusable (`tool_search_output` with `status: "incomplete"`): the detail is not kept in
/// the item, the failure is.
const UNRUN_SEARCH: &str =
    "Error: invalid_tool_input: the search could not run on that input; no tools were loaded";

/// An MCP call the model asked for and the client answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpApproval {
    /// The approval request's id: the call's id in the conversation.
    pub id: String,
    pub server_label: String,
    pub name: String,
    pub arguments: String,
    pub approve: bool,
    pub reason: Option<String>,
}

/// The assistant turn being gathered: reasoning, text and calls that belong together.
#[derive(Default)]
struct Turn {
    reasoning: String,
    text: String,
    calls: Vec<ToolCall>,
}

impl Turn {
    fn is_empty(&self) -> bool {
        self.reasoning.is_empty() && self.text.is_empty() && self.calls.is_empty()
    }

    fn flush(&mut self, messages: &mut Vec<Message>) {
        if self.is_empty() {
            return;
        }
        let turn = std::mem::take(self);
        messages.push(Message::Assistant {
            content: (!turn.text.is_empty()).then_some(Content::Text(turn.text)),
            reasoning_content: (!turn.reasoning.is_empty()).then_some(turn.reasoning),
            // Responses reasoning items carry no Anthropic signature to send back.
            reasoning_signature: None,
            tool_calls: turn.calls,
            name: None,
        });
    }
}

pub(super) fn messages(
    instructions: Option<&str>,
    items: &[(String, &Item)],
) -> Result<(Vec<Message>, Vec<McpApproval>), ConvertError> {
    // An approval request is a call only once answered: one left unanswered never ran.
    let mut requested: HashMap<&str, (&str, &str, &str)> = HashMap::new();
    let mut approvals = Vec::new();
    let mut system: Vec<String> = instructions
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    let mut messages = Vec::with_capacity(items.len() + 1);
    let mut turn = Turn::default();
    let mut calls: HashSet<&str> = HashSet::new();
    // The last hosted search call, which its output (with no call_id) answers.
    let mut hosted_search: Option<&str> = None;
    let answer = |call_id: &str, path: &str, calls: &HashSet<&str>| {
        if calls.contains(call_id) {
            Ok(())
        } else {
            Err(ConvertError::invalid(
                format!("{path}.call_id"),
                format!(
                    "\"{call_id}\" does not answer a call made earlier in the input or in the previous response"
                ),
            ))
        }
    };
    for (path, item) in items {
        let leading = messages.is_empty() && turn.is_empty();
        match item {
            Item::Message {
                role: Role::System | Role::Developer,
                content,
                ..
            } => {
                turn.flush(&mut messages);
                let text = text_of(content);
                if leading {
                    system.push(text);
                } else {
                    messages.push(Message::system(text));
                }
            }
            Item::Message {
                role: Role::User,
                content,
                ..
            } => {
                turn.flush(&mut messages);
                messages.push(Message::User {
                    content: user_content(content, &format!("{path}.content"))?,
                    name: None,
                });
            }
            Item::Message {
                role: Role::Assistant,
                content,
                ..
            } => {
                if !turn.calls.is_empty() {
                    turn.flush(&mut messages);
                }
                turn.text.push_str(&text_of(content));
            }
            Item::Reasoning {
                summary, content, ..
            } => {
                if !turn.text.is_empty() || !turn.calls.is_empty() {
                    turn.flush(&mut messages);
                }
                for part in summary.iter().chain(content.iter().flatten()) {
                    if !turn.reasoning.is_empty() {
                        turn.reasoning.push('\n');
                    }
                    turn.reasoning.push_str(&part.text);
                }
            }
            Item::FunctionCall {
                call_id,
                name,
                namespace,
                arguments,
                ..
            } => {
                calls.insert(call_id);
                turn.calls.push(ToolCall {
                    id: call_id.clone(),
                    name: model_name(namespace.as_deref(), name),
                    arguments: arguments.clone(),
                });
            }
            Item::CustomToolCall {
                call_id,
                name,
                namespace,
                input,
                ..
            } => {
                calls.insert(call_id);
                turn.calls.push(ToolCall {
                    id: call_id.clone(),
                    name: model_name(namespace.as_deref(), name),
                    arguments: json!({"input": input}).to_string(),
                });
            }
            Item::ToolSearchCall {
                id,
                call_id,
                arguments,
                execution,
                ..
            } => {
                let call_id = call_id.as_ref().or(id.as_ref()).ok_or_else(|| {
                    ConvertError::invalid(format!("{path}.call_id"), "the call needs its call_id")
                })?;
                if *execution == Some(Execution::Server) {
                    hosted_search = Some(call_id);
                }
                calls.insert(call_id);
                turn.calls.push(ToolCall {
                    id: call_id.clone(),
                    name: "tool_search".into(),
                    arguments: match arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    },
                });
            }
            Item::LocalShellCall {
                call_id, action, ..
            } => {
                calls.insert(call_id);
                let mut arguments = action.as_object().cloned().unwrap_or_default();
                arguments.remove("type");
                turn.calls.push(ToolCall {
                    id: call_id.clone(),
                    name: "local_shell".into(),
                    arguments: Value::Object(arguments).to_string(),
                });
            }
            Item::FunctionCallOutput {
                call_id, output, ..
            }
            | Item::CustomToolCallOutput {
                call_id, output, ..
            } => {
                turn.flush(&mut messages);
                answer(call_id, path, &calls)?;
                messages.push(Message::Tool {
                    tool_call_id: call_id.clone(),
                    content: tool_content(output),
                });
            }
            Item::ToolSearchOutput {
                call_id,
                tools: found,
                execution,
                status,
                ..
            } => {
                turn.flush(&mut messages);
                // A hosted search's output (`call_id: null`) answers the search just before.
                let hosted = match execution {
                    Some(Execution::Server) => hosted_search.take(),
                    _ => None,
                };
                let call_id = call_id.as_deref().or(hosted).ok_or_else(|| {
                    ConvertError::invalid(
                        format!("{path}.call_id"),
                        "the output needs the call_id it answers",
                    )
                })?;
                answer(call_id, path, &calls)?;
                // A search that could not run on its input loaded nothing, and says so:
                // read as an empty list it would tell the model that nothing matched.
                let content = if status.as_deref() == Some("incomplete") && found.is_empty() {
                    UNRUN_SEARCH.to_owned()
                } else {
                    Value::from(found.clone()).to_string()
                };
                messages.push(Message::tool(call_id, content));
            }
            Item::LocalShellCallOutput { id, output, .. } => {
                turn.flush(&mut messages);
                if calls.contains(id.as_str()) {
                    messages.push(Message::tool(id.clone(), output.clone()));
                } else {
                    return Err(ConvertError::invalid(
                        format!("{path}.id"),
                        format!("\"{id}\" does not answer a local_shell_call made earlier"),
                    ));
                }
            }
            Item::McpCall {
                id,
                name,
                arguments,
                output,
                error,
                ..
            } => {
                turn.calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
                turn.flush(&mut messages);
                let content = match (output, error) {
                    (Some(output), None) => output.clone(),
                    (_, Some(error)) => format!("Error: {}", mcp_error_text(error)),
                    (None, None) => "Error: the call did not finish".to_owned(),
                };
                messages.push(Message::tool(id.clone(), content));
            }
            Item::McpApprovalRequest {
                id,
                server_label,
                name,
                arguments,
            } => {
                requested.insert(id, (server_label, name, arguments));
            }
            Item::McpApprovalResponse {
                approval_request_id,
                approve,
                reason,
                ..
            } => {
                let Some((server_label, name, arguments)) =
                    requested.remove(approval_request_id.as_str())
                else {
                    return Err(ConvertError::invalid(
                        format!("{path}.approval_request_id"),
                        format!(
                            "\"{approval_request_id}\" answers no mcp_approval_request earlier in the input or in the previous response"
                        ),
                    ));
                };
                approvals.push(McpApproval {
                    id: approval_request_id.clone(),
                    server_label: server_label.to_owned(),
                    name: name.to_owned(),
                    arguments: arguments.to_owned(),
                    approve: *approve,
                    reason: reason.clone(),
                });
            }
            Item::AdditionalTools { .. } | Item::McpListTools { .. } => {}
            Item::ItemReference { .. } => {
                return Err(ConvertError::invalid(
                    format!("{path}.type"),
                    "item_reference is not supported; continue a stored conversation with previous_response_id",
                ));
            }
        }
    }
    turn.flush(&mut messages);
    if !approvals.is_empty() {
        // The answered calls end the conversation; their results follow once run.
        turn.calls = approvals
            .iter()
            .map(|approval| ToolCall {
                id: approval.id.clone(),
                name: approval.name.clone(),
                arguments: approval.arguments.clone(),
            })
            .collect();
        turn.flush(&mut messages);
    }
    if !system.is_empty() {
        messages.insert(0, Message::system(system.join("\n\n")));
    }
    Ok((messages, approvals))
}

/// What an `mcp_call`'s error object says, for the model.
fn mcp_error_text(error: &Value) -> String {
    if let Some(text) = error.as_str() {
        return text.to_owned();
    }
    if let Some(message) = error.get("message").and_then(Value::as_str) {
        return message.to_owned();
    }
    match error.get("content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => error.to_string(),
    }
}

/// The text of a message: text parts and refusals, in order.
fn text_of(content: &MessageContent) -> String {
    match content {
        MessageContent::Text(text) => text.clone(),
        MessageContent::Parts(parts) => parts.iter().filter_map(part_text).collect(),
    }
}

fn part_text(part: &ContentPart) -> Option<&str> {
    match part {
        ContentPart::InputText { text } | ContentPart::OutputText { text, .. } => Some(text),
        ContentPart::Refusal { refusal } => Some(refusal),
        ContentPart::InputImage { .. } | ContentPart::InputFile { .. } => None,
    }
}

/// A user message's content: plain text when it is only text, else Chat Completions parts.
fn user_content(content: &MessageContent, path: &str) -> Result<Content, ConvertError> {
    let MessageContent::Parts(parts) = content else {
        return Ok(Content::Text(text_of(content)));
    };
    parts_content(parts, path)
}

fn parts_content(parts: &[ContentPart], path: &str) -> Result<Content, ConvertError> {
    if parts.iter().all(|part| part_text(part).is_some()) {
        return Ok(Content::Text(parts.iter().filter_map(part_text).collect()));
    }
    let mut converted = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        converted.push(match part {
            ContentPart::InputImage {
                image_url: Some(url),
                detail,
                ..
            } => {
                let mut image = json!({"url": url});
                if let Some(detail) = detail {
                    image["detail"] = Value::from(detail.clone());
                }
                json!({"type": "image_url", "image_url": image})
            }
            ContentPart::InputImage { .. } => {
                return Err(ConvertError::invalid(
                    format!("{path}[{index}].image_url"),
                    "images need an image_url (a URL or a data: URL); file ids need OpenAI's file store",
                ));
            }
            ContentPart::InputFile { .. } => {
                return Err(ConvertError::invalid(
                    format!("{path}[{index}].type"),
                    "input_file parts are not supported; send the file's text as input_text",
                ));
            }
            text => json!({"type": "text", "text": part_text(text).unwrap_or_default()}),
        });
    }
    Ok(Content::Parts(converted))
}

/// A tool's output as a tool message's content; parts other than text and images cannot
/// travel in a tool message and are named instead of dropped.
fn tool_content(output: &ToolOutput) -> Content {
    match output {
        ToolOutput::Text(text) => Content::Text(text.clone()),
        ToolOutput::Parts(parts) => parts_content(parts, "output").unwrap_or_else(|_| {
            Content::Text(
                parts
                    .iter()
                    .map(|part| {
                        part_text(part).unwrap_or("[a file or image the gateway cannot pass on]")
                    })
                    .collect(),
            )
        }),
    }
}
