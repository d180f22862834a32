//! Ollama `/api/chat` streams as Ollama sends them: one JSON object per line, tool calls
//! whole (arguments as an object, no ids), and a last line with `done: true` and the counts.

use serde_json::{Value, json};

use crate::server::{Chunking, Reply};

/// Builds one streamed `/api/chat` answer line by line.
#[derive(Debug, Clone, Default)]
pub struct OllamaScript {
    lines: Vec<Value>,
}

impl OllamaScript {
    pub fn new() -> Self {
        Self::default()
    }

    /// A line of content.
    pub fn text(mut self, text: &str) -> Self {
        self.lines
            .push(line(json!({"role": "assistant", "content": text}), false));
        self
    }

    /// A line carrying whole tool calls: `(name, arguments object)` each.
    pub fn tool_calls(mut self, calls: &[(&str, Value)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(name, arguments)| json!({"function": {"name": name, "arguments": arguments}}))
            .collect();
        self.lines.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
            false,
        ));
        self
    }

    /// The last line: `done: true` with the reason and token counts.
    pub fn finish(mut self, done_reason: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let mut last = line(json!({"role": "assistant", "content": ""}), true);
        last["done_reason"] = json!(done_reason);
        last["prompt_eval_count"] = json!(prompt_tokens);
        last["eval_count"] = json!(completion_tokens);
        self.lines.push(last);
        self
    }

    /// The complete NDJSON body.
    pub fn body(&self) -> String {
        self.lines.iter().map(|line| format!("{line}\n")).collect()
    }

    /// The reply, one HTTP chunk per line.
    pub fn reply(&self) -> Reply {
        self.reply_in(Chunking::PerEvent("\n"))
    }

    /// The reply in the given chunking.
    pub fn reply_in(&self, chunking: Chunking) -> Reply {
        Reply::ok("application/x-ndjson", self.body(), chunking)
    }
}

fn line(message: Value, done: bool) -> Value {
    json!({"model": "scripted", "created_at": "2024-01-01T00:00:00Z", "message": message, "done": done})
}
