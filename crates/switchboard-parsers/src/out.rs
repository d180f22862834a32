//! Where every family's state machine sends what it found. It numbers calls, flags unknown
//! tool names, checks that finished arguments are a JSON object, and trims the newlines that
//! templates put around markup, so no family re-implements those rules.

use serde_json::Value;

use crate::ParseEvent;
use crate::tools::Tools;

/// Text that goes to the user or to reasoning.
#[derive(Debug, Default)]
struct Channel {
    started: bool,
    /// Blanks not yet known to be inside the channel.
    held: String,
}

impl Channel {
    /// Newlines at the very start and end of a channel are template glue around markup
    /// (`<think>\n`, `\n<tool_call>`); newlines between words are kept. Trailing newlines are
    /// therefore held until more text proves they are inside the channel, and so is a blank
    /// start, which is dropped if nothing else follows.
    fn take(&mut self, text: &str) -> Option<String> {
        let lead;
        let text = if self.started {
            text
        } else {
            // Nothing is sent while the channel holds only blanks: blank-only text around
            // markup is not content.
            self.held.push_str(text);
            if self.held.trim().is_empty() {
                return None;
            }
            lead = std::mem::take(&mut self.held);
            lead.trim_start_matches('\n')
        };
        let body = text.trim_end_matches('\n');
        if body.is_empty() {
            self.held.push_str(text);
            return None;
        }
        self.started = true;
        let mut delta = std::mem::take(&mut self.held);
        delta.push_str(body);
        self.held.push_str(&text[body.len()..]);
        Some(delta)
    }
}

#[derive(Debug)]
struct OpenCall {
    index: usize,
    name: String,
    arguments: String,
}

/// The event sink shared by all families.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) events: Vec<ParseEvent>,
    pub(crate) tools: Tools,
    content: Channel,
    reasoning: Channel,
    next_index: usize,
    call: Option<OpenCall>,
}

impl Out {
    pub(crate) fn new(tools: Tools) -> Self {
        Self {
            events: Vec::new(),
            tools,
            content: Channel::default(),
            reasoning: Channel::default(),
            next_index: 0,
            call: None,
        }
    }

    pub(crate) fn content(&mut self, text: &str) {
        if let Some(delta) = self.content.take(text) {
            self.events.push(ParseEvent::Content { delta });
        }
    }

    pub(crate) fn reasoning(&mut self, text: &str) {
        if let Some(delta) = self.reasoning.take(text) {
            self.events.push(ParseEvent::Reasoning { delta });
        }
    }

    /// Opens a call; any call still open is reported as cut off first.
    pub(crate) fn start(&mut self, name: &str) {
        if self.call.is_some() {
            self.fail("a new call began before the previous one ended", "");
        }
        let index = self.next_index;
        self.next_index += 1;
        let known = self.tools.knows(name);
        self.events.push(ParseEvent::ToolCallStart {
            index,
            name: name.to_owned(),
            known,
        });
        self.call = Some(OpenCall {
            index,
            name: name.to_owned(),
            arguments: String::new(),
        });
    }

    pub(crate) fn in_call(&self) -> bool {
        self.call.is_some()
    }

    /// The name of the open call, for families that type values by the tool's schema.
    pub(crate) fn call_name(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.name.as_str())
    }

    /// Streams a fragment of the open call's arguments.
    pub(crate) fn arguments(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(call) = &mut self.call {
            call.arguments.push_str(delta);
            self.events.push(ParseEvent::ToolCallArguments {
                index: call.index,
                delta: delta.to_owned(),
            });
        }
    }

    /// Closes the open call: `{}` when it had no arguments, an `Invalid` event when its
    /// arguments are not one JSON object.
    pub(crate) fn end(&mut self) {
        let Some(call) = self.call.take() else { return };
        if call.arguments.trim().is_empty() {
            self.events.push(ParseEvent::ToolCallArguments {
                index: call.index,
                delta: "{}".to_owned(),
            });
            self.events
                .push(ParseEvent::ToolCallEnd { index: call.index });
            return;
        }
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(Value::Object(_)) => self
                .events
                .push(ParseEvent::ToolCallEnd { index: call.index }),
            Ok(other) => self.events.push(ParseEvent::Invalid {
                index: Some(call.index),
                reason: format!(
                    "arguments of {} are {}, not a JSON object",
                    call.name,
                    kind(&other)
                ),
                text: call.arguments,
            }),
            Err(error) => self.events.push(ParseEvent::Invalid {
                index: Some(call.index),
                reason: format!("arguments of {} are not valid JSON: {error}", call.name),
                text: call.arguments,
            }),
        }
    }

    /// Reports malformed or cut-off markup; an open call is discarded with it.
    pub(crate) fn fail(&mut self, reason: &str, text: &str) {
        match self.call.take() {
            Some(call) => {
                let text = if text.is_empty() {
                    call.arguments
                } else {
                    text.to_owned()
                };
                self.events.push(ParseEvent::Invalid {
                    index: Some(call.index),
                    reason: format!("call to {}: {reason}", call.name),
                    text,
                });
            }
            None => self.events.push(ParseEvent::Invalid {
                index: None,
                reason: reason.to_owned(),
                text: text.to_owned(),
            }),
        }
    }

    /// End of output: a call still open was cut off.
    pub(crate) fn finish(&mut self) {
        if self.call.is_some() {
            self.fail("output ended inside the call", "");
        }
    }

    pub(crate) fn take_events(&mut self) -> Vec<ParseEvent> {
        std::mem::take(&mut self.events)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_around_markup_are_trimmed_but_inner_ones_kept() {
        let mut out = Out::new(Tools::default());
        for piece in ["\n", "Hi\n", "\n", "there\n", "\n"] {
            out.content(piece);
        }
        let text: String = out
            .take_events()
            .into_iter()
            .map(|event| match event {
                ParseEvent::Content { delta } => delta,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(text, "Hi\n\nthere");
    }

    #[test]
    fn arguments_that_are_not_an_object_make_the_call_invalid() {
        let mut out = Out::new(Tools::default());
        out.start("f");
        out.arguments("[1]");
        out.end();
        assert!(matches!(
            out.take_events().last(),
            Some(ParseEvent::Invalid { index: Some(0), .. })
        ));
    }
}
