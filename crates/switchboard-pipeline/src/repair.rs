//! The `repair` policy's second try: when a call breaks the request's tools, the model is
//! shown its own answer with each broken call answered by the validation error it would read
//! from a real tool, and asked once more. Agents give up on an error response (`reject`) and
//! act on a broken call (`report`); a model that reads the error usually fixes its call.

use switchboard_tools::{Message, ToolCall, Toolset};

use crate::finisher::Broken;

/// What a good call made beside a broken one is answered with: it is passed on as it is,
/// so the model must not make it again.
const STANDS: &str = "This call is valid and will be made as it is; do not repeat it.";

/// The messages that follow the conversation for the second try: the model's answer (its
/// text and every call it made) and one result per call.
pub fn retry_messages(text: String, broken: &Broken, tools: &Toolset) -> Vec<Message> {
    let mut messages = Vec::with_capacity(broken.made.len() + 1);
    messages.push(Message::assistant(text, broken.made.clone()));
    for call in &broken.made {
        let result = if broken.broken.iter().any(|bad| bad.id == call.id) {
            error_text(call, tools)
        } else {
            STANDS.to_owned()
        };
        messages.push(Message::tool(call.id.clone(), result));
    }
    messages
}

/// The `Error: …` a tool would answer the call with, as characters' tools do.
fn error_text(call: &ToolCall, tools: &Toolset) -> String {
    match tools.check_call(&call.name, &call.arguments) {
        Err(error) => format!("{error}\nCorrect the call and make it again."),
        // Only broken calls are asked about; a call that passes now has nothing to correct.
        Ok(_) => STANDS.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_tools::{Content, Profile};

    #[test]
    fn each_call_gets_a_result_and_the_broken_one_its_error() {
        let tools = Toolset::from_json(
            &json!([{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]),
            &Profile::api(),
        )
        .unwrap();
        let call = |id: &str, arguments: &str| ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            arguments: arguments.into(),
        };
        let good = call("call_a", r#"{"city": "Oslo"}"#);
        let bad = call("call_b", r#"{"city": 7}"#);
        let broken = Broken {
            made: vec![good.clone(), bad.clone()],
            broken: vec![bad],
            released: Vec::new(),
        };
        let messages = retry_messages("Checking.".into(), &broken, &tools);
        assert_eq!(messages.len(), 3);
        assert!(
            matches!(&messages[0], Message::Assistant { content: Some(Content::Text(text)), tool_calls, .. }
                if text == "Checking." && tool_calls.len() == 2)
        );
        let Message::Tool {
            tool_call_id,
            content,
        } = &messages[2]
        else {
            panic!("{messages:?}")
        };
        assert_eq!(tool_call_id, "call_b");
        assert!(
            content
                .text()
                .starts_with("Error: Invalid parameters - /city: expected string"),
            "{content:?}"
        );
        assert!(matches!(&messages[1], Message::Tool { content, .. } if content.text() == STANDS));
    }
}
