//! Anthropic Messages streams as Anthropic sends them: `message_start`, content blocks that
//! open, stream deltas and stop, `ping`s, then `message_delta` with the stop reason and
//! `message_stop`. Named SSE events (`event:` lines), unlike OpenAI's.

use serde_json::{Value, json};

use crate::server::{Chunking, Reply};

/// Builds one streamed Messages answer block by block.
#[derive(Debug, Clone)]
pub struct AnthropicScript {
    events: Vec<(&'static str, Value)>,
    blocks: usize,
    text_open: bool,
}

impl AnthropicScript {
    /// Starts the message; `input_tokens` is reported here, as Anthropic does.
    pub fn new(input_tokens: u64) -> Self {
        Self {
            events: vec![(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
                    "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
                    "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
            )],
            blocks: 0,
            text_open: false,
        }
    }

    /// Text, in the open text block or a new one.
    pub fn text(mut self, text: &str) -> Self {
        if !self.text_open {
            self.events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": self.blocks, "content_block": {"type": "text", "text": ""}}),
            ));
            self.text_open = true;
        }
        self.events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": self.blocks, "delta": {"type": "text_delta", "text": text}}),
        ));
        self
    }

    /// A thinking block streamed in `fragments`, closed by its signature (as Anthropic
    /// sends extended thinking).
    pub fn thinking(mut self, fragments: &[&str], signature: &str) -> Self {
        self.close_text();
        let index = self.blocks;
        self.events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        for fragment in fragments {
            self.events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": fragment}}),
            ));
        }
        self.events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
        ));
        self.events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        self.blocks += 1;
        self
    }

    /// A keep-alive, which may come anywhere.
    pub fn ping(mut self) -> Self {
        self.events.push(("ping", json!({"type": "ping"})));
        self
    }

    /// A `tool_use` block: `input` is `{}` at the start, the arguments come as
    /// `input_json_delta` fragments (the first one empty, as Anthropic sends it).
    pub fn tool_use(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
        self.close_text();
        let index = self.blocks;
        self.events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        for fragment in std::iter::once(&"").chain(fragments) {
            self.events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        self.events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        self.blocks += 1;
        self
    }

    /// `message_delta` with the stop reason and output tokens, then `message_stop`.
    pub fn finish(mut self, stop_reason: &str, output_tokens: u64) -> Self {
        self.close_text();
        self.events.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
        ));
        self.events
            .push(("message_stop", json!({"type": "message_stop"})));
        self
    }

    /// The complete SSE body.
    pub fn body(&self) -> String {
        named_sse_body(&self.events)
    }

    /// The reply, one HTTP chunk per SSE event.
    pub fn reply(&self) -> Reply {
        self.reply_in(Chunking::PerEvent("\n\n"))
    }

    /// The reply in the given chunking.
    pub fn reply_in(&self, chunking: Chunking) -> Reply {
        Reply::sse(self.body(), chunking)
    }

    fn close_text(&mut self) {
        if self.text_open {
            self.events.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.blocks}),
            ));
            self.blocks += 1;
            self.text_open = false;
        }
    }
}

/// `event: NAME\ndata: {...}\n\n` per event.
fn named_sse_body(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}
