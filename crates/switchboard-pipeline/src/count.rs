//! How many tokens a request's prompt takes on the backend that would answer it: counted
//! by the backend's own tokenizer where it offers one (the prompt exactly as the route
//! would send it, tool prompt of a prompted route included), otherwise estimated.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use switchboard_tools::{Content, Message};
use switchboard_wire::{ChatRequest, Format};

use crate::completion::{backend_messages, backend_request, tool_requirement};
use crate::pipeline::{GatewayRequest, Pipeline};
use crate::target::Target;
use switchboard_upstream::Route;

/// A prompt's size and where the figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCount {
    pub tokens: u64,
    /// `backend` (its tokenizer counted) or `estimate` (see [`estimate_tokens`]).
    pub source: &'static str,
}

impl Pipeline {
    /// Counts the prompt `request` would send.
    pub async fn count_tokens(&self, request: &GatewayRequest) -> TokenCount {
        let offered = request.offered();
        match &request.target {
            Target::Character(_) => estimate(&offered),
            Target::Route(route) => count_on(route, &offered, self.settings.request_timeout).await,
        }
    }

    /// The prompt's count for the head of a streamed answer, taken beside the answer itself so
    /// that it costs no wait: by the tokenizer of the route's backend, on OpenAI-compatible
    /// routes only. `None` where the answer's own usage is the only count (characters, whose
    /// prompt grows each round; Anthropic and Ollama routes, where a count would be a second
    /// billed or slow request): the head then carries the estimate.
    pub fn count_beside(&self, request: &GatewayRequest) -> Option<BoxFuture<'static, TokenCount>> {
        let Target::Route(route) = &request.target else {
            return None;
        };
        if route.format != Format::OpenAi {
            return None;
        }
        let route = Arc::clone(route);
        let chat = request.offered().into_owned();
        let timeout = self.settings.request_timeout;
        Some(Box::pin(
            async move { count_on(&route, &chat, timeout).await },
        ))
    }
}

/// Counts the prompt the route would send for `request` with its backend's tokenizer,
/// estimating where the backend has none or does not answer.
async fn count_on(route: &Route, request: &ChatRequest, timeout: Duration) -> TokenCount {
    let messages = backend_messages(
        route,
        request,
        &request.messages,
        tool_requirement(request).as_ref(),
    );
    let sent = backend_request(route, request, messages, route.prompted.is_none());
    match route
        .pool
        .count_tokens(sent.clone(), std::time::Instant::now() + timeout)
        .await
    {
        Ok(Some(tokens)) => TokenCount {
            tokens,
            source: "backend",
        },
        Ok(None) => estimate(&sent),
        Err(error) => {
            tracing::warn!(route = %route.name, %error, "the backend could not count tokens; estimating");
            estimate(&sent)
        }
    }
}

fn estimate(request: &ChatRequest) -> TokenCount {
    TokenCount {
        tokens: estimate_tokens(request),
        source: "estimate",
    }
}

/// Bytes of UTF-8 per token in the estimate: about right for English text and code with
/// the tokenizers of current models. (Bytes rather than characters: a string's length is
/// known without reading it, and a long conversation is estimated on every streamed answer.)
const BYTES_PER_TOKEN: u64 = 4;
/// What a message's role markers cost, roughly, in every chat template.
const TOKENS_PER_MESSAGE: u64 = 4;
/// An image at the size models scale them to (about 1.15 megapixels).
const TOKENS_PER_IMAGE: u64 = 1600;

/// The estimate used where the backend cannot count: the UTF-8 bytes of the messages'
/// text, reasoning, tool calls and results and of the tool definitions, divided by 4 and
/// rounded up, plus 4 tokens per message and 1,600 per image.
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    let mut bytes = 0u64;
    let mut schemas = Length(0);
    let mut fixed = 0u64;
    let mut count = |text: &str| bytes += text.len() as u64;
    for message in &request.messages {
        fixed += TOKENS_PER_MESSAGE;
        match message {
            Message::System { content, .. }
            | Message::Developer { content, .. }
            | Message::User { content, .. }
            | Message::Tool { content, .. } => {
                count(&content.text());
                fixed += images(content) * TOKENS_PER_IMAGE;
            }
            Message::Assistant {
                content,
                reasoning_content,
                tool_calls,
                ..
            } => {
                if let Some(content) = content {
                    count(&content.text());
                }
                if let Some(reasoning) = reasoning_content {
                    count(reasoning);
                }
                for call in tool_calls {
                    count(&call.name);
                    count(&call.arguments);
                }
            }
        }
    }
    for tool in request.tools.iter() {
        let function = &tool.function;
        count(&function.name);
        if let Some(description) = &function.description {
            count(description);
        }
        if let Some(parameters) = &function.parameters {
            // Writing into a counter cannot fail.
            let _ = serde_json::to_writer(&mut schemas, parameters);
        }
    }
    estimate_text(bytes + schemas.0) + fixed
}

/// The estimate for text of `bytes` UTF-8 bytes, as [`estimate_tokens`] counts it.
pub fn estimate_text(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// Counts the bytes written to it, to measure JSON without building the text.
struct Length(u64);

impl std::io::Write for Length {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        self.0 += buffer.len() as u64;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn images(content: &Content) -> u64 {
    match content {
        Content::Text(_) => 0,
        Content::Parts(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("image_url"))
            .count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_estimate_is_a_quarter_of_the_bytes_plus_fixed_costs() {
        let mut request = ChatRequest::new(
            "m",
            vec![
                Message::system("12345678"),
                Message::User {
                    content: Content::Parts(vec![
                        json!({"type": "text", "text": "abcd"}),
                        json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
                    ]),
                    name: None,
                },
            ],
        );
        // 12 bytes: 3 tokens; two messages: 8; one image: 1600.
        assert_eq!(estimate_tokens(&request), 3 + 8 + 1600);
        request.messages.push(Message::assistant("é", Vec::new()));
        assert_eq!(
            estimate_tokens(&request),
            4 + 12 + 1600,
            "14 bytes round up"
        );
        request.tools = serde_json::from_value(json!([{"type": "function", "function":
            {"name": "f", "parameters": {"type": "object"}}}]))
        .unwrap();
        // "f" and {"type":"object"}: 18 more bytes, 32 in all.
        assert_eq!(estimate_tokens(&request), 8 + 12 + 1600);
    }
}
