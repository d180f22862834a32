//! Conversation history, bounded by whole turns so that a tool result never outlives the
//! call it answers.

use switchboard_tools::Message;

/// Messages a conversation keeps by default: a character's, behind the gateway or in the
/// terminal.
const MAX_MESSAGES: usize = 100;

/// The messages after the system prompt, oldest first.
#[derive(Debug, Clone)]
pub struct History {
    messages: Vec<Message>,
    max_messages: usize,
}

impl Default for History {
    /// Empty, keeping at most 100 messages.
    fn default() -> Self {
        Self::new(MAX_MESSAGES)
    }
}

impl History {
    pub fn new(max_messages: usize) -> Self {
        Self {
            messages: Vec::new(),
            max_messages: max_messages.max(1),
        }
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Drops the oldest turns whole (a turn starts at a user message) until the bound holds.
    /// The newest turn is kept even when it alone is over the bound: cutting into it would
    /// separate tool results from their calls.
    pub fn trim(&mut self) {
        while self.messages.len() > self.max_messages {
            let next_turn = self
                .messages
                .iter()
                .skip(1)
                .position(|message| matches!(message, Message::User { .. }));
            match next_turn {
                Some(offset) => {
                    self.messages.drain(..=offset);
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_tools::ToolCall;

    fn turn_with_tool(n: usize) -> Vec<Message> {
        let call = ToolCall {
            id: format!("call_{n}"),
            name: "log".into(),
            arguments: "{}".into(),
        };
        vec![
            Message::user(format!("question {n}")),
            Message::assistant("", vec![call]),
            Message::tool(format!("call_{n}"), "ok"),
            Message::assistant(format!("answer {n}"), Vec::new()),
        ]
    }

    #[test]
    fn oldest_turns_go_whole() {
        let mut history = History::new(10);
        for n in 0..4 {
            turn_with_tool(n)
                .into_iter()
                .for_each(|message| history.push(message));
            history.trim();
        }
        assert_eq!(history.len(), 8);
        assert_eq!(history.messages()[0], Message::user("question 2"));
        // every tool result still follows the assistant message that made its call
        for (index, message) in history.messages().iter().enumerate() {
            if let Message::Tool { tool_call_id, .. } = message {
                let Message::Assistant { tool_calls, .. } = &history.messages()[index - 1] else {
                    panic!("orphan result")
                };
                assert_eq!(&tool_calls[0].id, tool_call_id);
            }
        }
    }

    #[test]
    fn a_single_long_turn_is_kept() {
        let mut history = History::new(2);
        turn_with_tool(0)
            .into_iter()
            .for_each(|message| history.push(message));
        history.trim();
        assert_eq!(history.len(), 4);
    }
}
