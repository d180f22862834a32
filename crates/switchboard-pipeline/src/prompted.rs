//! Prompted tool calling, for models or servers without native tool calling: the tools and
//! how to call them go into the system prompt, past calls and results are rewritten into the
//! family's markup, and the reply is parsed back into calls as it streams.

use std::collections::HashMap;

use switchboard_parsers::{
    Family, ParseEvent, ToolRequirement, corrective_message, render_tool_calls,
    render_tool_results, tool_prompt,
};
use switchboard_tools::{Content, Message, ToolCall, ToolDefinition};
use switchboard_wire::{StreamEvent, ToolChoice};

/// What the request asks of the model's calls.
pub fn requirement(choice: Option<&ToolChoice>) -> Option<ToolRequirement> {
    match choice {
        None | Some(ToolChoice::Auto) => Some(ToolRequirement::Auto),
        Some(ToolChoice::Required) => Some(ToolRequirement::Required),
        Some(ToolChoice::Function(name)) => Some(ToolRequirement::Named(name.clone())),
        Some(ToolChoice::None) => None,
    }
}

/// Whether a call by this name satisfies the requirement.
pub fn satisfies(requirement: &ToolRequirement, name: &str) -> bool {
    match requirement {
        ToolRequirement::Auto | ToolRequirement::Required => true,
        ToolRequirement::Named(required) => required == name,
    }
}

/// The conversation as the model sees it: the tool prompt joined to the system prompt (or
/// a system message of its own), assistant calls as markup, results as user turns.
pub fn rewrite_messages(
    family: Family,
    messages: &[Message],
    tools: &[ToolDefinition],
    requirement: Option<&ToolRequirement>,
    parallel: bool,
) -> Vec<Message> {
    let mut calls_by_id: HashMap<&str, &ToolCall> = HashMap::new();
    let mut rewritten: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let mut results: Vec<(ToolCall, String)> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) && !results.is_empty() {
            rewritten.push(Message::user(render_tool_results(
                family,
                &std::mem::take(&mut results),
            )));
        }
        match message {
            Message::Assistant {
                content,
                tool_calls,
                ..
            } if !tool_calls.is_empty() => {
                calls_by_id.extend(tool_calls.iter().map(|call| (call.id.as_str(), call)));
                let text = content.as_ref().map(Content::text).unwrap_or_default();
                rewritten.push(Message::assistant(
                    format!("{text}{}", render_tool_calls(family, tool_calls)),
                    Vec::new(),
                ));
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let call = calls_by_id.get(tool_call_id.as_str()).map_or_else(
                    || ToolCall {
                        id: tool_call_id.clone(),
                        name: String::new(),
                        arguments: String::new(),
                    },
                    |call| (*call).clone(),
                );
                results.push((call, content.text()));
            }
            other => rewritten.push(other.clone()),
        }
    }
    if !results.is_empty() {
        rewritten.push(Message::user(render_tool_results(family, &results)));
    }
    if let Some(requirement) = requirement
        && !tools.is_empty()
    {
        let prompt = tool_prompt(family, tools, requirement, parallel);
        match rewritten.first_mut() {
            Some(Message::System { content, .. }) => {
                *content = Content::Text(format!("{}\n\n{prompt}", content.text()))
            }
            _ => rewritten.insert(0, Message::system(prompt)),
        }
    }
    rewritten
}

/// The message asking once more for the call the request requires.
pub fn retry_messages(
    family: Family,
    requirement: &ToolRequirement,
    answer: String,
) -> [Message; 2] {
    [
        Message::assistant(answer, Vec::new()),
        Message::user(corrective_message(family, requirement)),
    ]
}

/// A parser event as one of our events; a withdrawn call is reported by its index.
pub enum Parsed {
    Event(StreamEvent),
    Withdraw { index: usize, text: String },
}

pub fn from_parse_event(event: ParseEvent) -> Parsed {
    match event {
        ParseEvent::Content { delta } => Parsed::Event(StreamEvent::TextDelta(delta)),
        ParseEvent::Reasoning { delta } => Parsed::Event(StreamEvent::ReasoningDelta(delta)),
        ParseEvent::ToolCallStart { index, name, .. } => {
            Parsed::Event(StreamEvent::ToolCallStart {
                index,
                id: String::new(),
                name,
            })
        }
        ParseEvent::ToolCallArguments { index, delta } => {
            Parsed::Event(StreamEvent::ToolCallArguments { index, delta })
        }
        ParseEvent::ToolCallEnd { index } => Parsed::Event(StreamEvent::ToolCallEnd { index }),
        // Markup that is not a valid call is still what the model wrote: it reaches the
        // client as text rather than vanishing.
        ParseEvent::Invalid {
            index: Some(index),
            text,
            ..
        } => Parsed::Withdraw { index, text },
        ParseEvent::Invalid {
            index: None, text, ..
        } => Parsed::Event(StreamEvent::TextDelta(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> ToolDefinition {
        serde_json::from_value(json!({"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}))
        .unwrap()
    }

    #[test]
    fn history_becomes_markup_and_results_become_user_turns() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: r#"{"city": "Paris"}"#.into(),
        };
        let messages = vec![
            Message::system("Be brief."),
            Message::user("Weather in Paris?"),
            Message::assistant("", vec![call]),
            Message::tool("call_1", "sunny"),
            Message::assistant("It is sunny.", Vec::new()),
        ];
        let rewritten = rewrite_messages(
            Family::Hermes,
            &messages,
            &[tool()],
            Some(&ToolRequirement::Auto),
            true,
        );
        assert_eq!(rewritten.len(), 5);
        let Message::System { content, .. } = &rewritten[0] else {
            panic!()
        };
        assert!(
            content.text().starts_with("Be brief.\n\n") && content.text().contains("get_weather")
        );
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = &rewritten[2]
        else {
            panic!()
        };
        assert!(tool_calls.is_empty());
        assert!(content.as_ref().unwrap().text().contains("<tool_call>"));
        let Message::User { content, .. } = &rewritten[3] else {
            panic!("results are a user turn: {:?}", rewritten[3])
        };
        assert!(content.text().contains("sunny"));
    }

    #[test]
    fn tool_choice_none_sends_no_tool_prompt() {
        let rewritten = rewrite_messages(
            Family::Hermes,
            &[Message::user("hi")],
            &[tool()],
            None,
            true,
        );
        assert_eq!(rewritten, [Message::user("hi")]);
    }
}
