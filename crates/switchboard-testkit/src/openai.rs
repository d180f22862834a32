//! OpenAI-compatible streams as a model server sends them: `chat.completion.chunk`s over
//! SSE, ending with `data: [DONE]`.

use serde_json::{Value, json};

use crate::server::{Chunking, Reply};

/// Builds one streamed answer chunk by chunk, the way vLLM and llama.cpp's server do.
#[derive(Debug, Clone, Default)]
pub struct OpenAiScript {
    chunks: Vec<Value>,
    calls: usize,
}

impl OpenAiScript {
    pub fn new() -> Self {
        Self::default()
    }

    /// A content delta.
    pub fn text(mut self, text: &str) -> Self {
        self.chunks.push(delta(json!({"content": text})));
        self
    }

    /// A tool call whose arguments arrive in `fragments`: id, type and name on the first
    /// fragment, only arguments after, as the protocol has it.
    pub fn tool_call(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
        let index = self.calls;
        self.calls += 1;
        self.chunks.push(delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        ));
        for fragment in fragments {
            self.chunks.push(delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
            ));
        }
        self
    }

    /// A chunk with this raw `delta`, for shapes the other builders do not make (text and a
    /// call in one delta, a call without an id, several calls at once).
    pub fn delta(mut self, delta: Value) -> Self {
        self.chunks.push(self::delta(delta));
        self
    }

    /// The closing chunk with its finish reason and usage; without it the stream is cut short.
    pub fn finish(mut self, reason: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.chunks.push(json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}));
        self.chunks.push(json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
            "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}}));
        self
    }

    /// The closing usage (after [`finish`](Self::finish)) counts `reasoning_tokens` of the
    /// completion as reasoning, as OpenAI's reasoning models report it.
    pub fn reasoning_tokens(mut self, reasoning_tokens: u64) -> Self {
        if let Some(usage) = self
            .chunks
            .last_mut()
            .and_then(|chunk| chunk.get_mut("usage"))
        {
            usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning_tokens});
        }
        self
    }

    /// The complete SSE body, `[DONE]` included.
    pub fn body(&self) -> String {
        sse_body(&self.chunks, true)
    }

    /// The reply, one HTTP chunk per SSE event.
    pub fn reply(&self) -> Reply {
        self.reply_in(Chunking::PerEvent("\n\n"))
    }

    /// The reply in the given chunking.
    pub fn reply_in(&self, chunking: Chunking) -> Reply {
        Reply::sse(self.body(), chunking)
    }

    /// The reply cut off after `events` SSE events, without `[DONE]` and without closing
    /// the chunked body: a backend dying mid-stream.
    pub fn cut_after(&self, events: usize) -> Reply {
        let mut reply = Reply::sse(
            sse_body(&self.chunks[..events.min(self.chunks.len())], false),
            Chunking::PerEvent("\n\n"),
        );
        reply.drop_connection = true;
        reply
    }
}

fn delta(delta: Value) -> Value {
    json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

/// `data: {...}\n\n` per chunk, and `data: [DONE]\n\n` when `done`.
pub fn sse_body(chunks: &[Value], done: bool) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

/// The function names a Chat Completions request offers, in order: what a test reads to see
/// which tools reached the model.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The last message of a Chat Completions request (`null` when it has none).
pub fn last_message(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or(Value::Null)
}

/// The text of a Chat Completions message's content, whichever shape it has (a string, or
/// parts of which the text ones count): how a scripted model reads what an agent sent it.
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}
