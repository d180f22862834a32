//! The one interface the runtime and gateway call, and the non-streaming call defined as
//! the stream collected, so the two can never disagree.

use std::pin::Pin;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use switchboard_wire::{ChatRequest, ChatResponse, Collector, StreamEvent};

use crate::BackendError;

/// The events of one answer, in order; ends after `Finish` (and usage), or with an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, BackendError>> + Send>>;

/// An LLM server reachable over HTTP.
pub trait Backend: Send + Sync {
    /// Sends the request; resolves once the backend has accepted it (HTTP status received),
    /// so HTTP errors and refused requests surface here rather than in the stream.
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>>;

    /// How many tokens the request's prompt takes, by the backend's own tokenizer (chat
    /// template and tools included); `None` when the backend offers no way to count.
    fn count_tokens(
        &self,
        _request: ChatRequest,
    ) -> BoxFuture<'_, Result<Option<u64>, BackendError>> {
        Box::pin(async { Ok(None) })
    }

    /// Embeddings as the backend serves them at its own endpoint `path` (Ollama's
    /// `/api/embed`), for a client's request in that same format (`body`, its model the
    /// backend's): `None` where the backend serves no embeddings.
    fn embed<'a>(
        &'a self,
        _path: &'a str,
        _body: serde_json::Value,
    ) -> Option<BoxFuture<'a, Result<serde_json::Value, BackendError>>> {
        None
    }

    /// Whether the backend is serving: its model list answers (`GET /models` for
    /// OpenAI-compatible servers, `/v1/models` for Anthropic, `/api/tags` for Ollama). A
    /// health check, not a request: never retried.
    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>>;
}

/// The whole answer: the event stream collected.
pub async fn complete(
    backend: &dyn Backend,
    request: ChatRequest,
) -> Result<ChatResponse, BackendError> {
    let mut events = backend.chat(request).await?;
    let mut collector = Collector::new();
    while let Some(event) = events.next().await {
        collector.push(&event?);
    }
    Ok(collector.finish()?)
}
