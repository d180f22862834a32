//! Client for Ollama's native API: `POST {host}/api/chat`, NDJSON when streaming. A
//! `tool_choice` Ollama cannot honour is refused before anything is sent.

use futures::future::BoxFuture;
use switchboard_wire::ollama::build_request;
use switchboard_wire::{ChatRequest, Format};

use crate::transport::{Transport, bearer_headers};
use crate::{Backend, BackendConfig, BackendError, EventStream};

#[derive(Debug)]
pub struct OllamaBackend {
    transport: Transport,
}

impl OllamaBackend {
    pub fn new(config: BackendConfig) -> Result<Self, BackendError> {
        // Ollama itself needs no key; proxies in front of it often do.
        let headers = bearer_headers(&config)?;
        Ok(Self {
            transport: Transport::new(config, headers)?,
        })
    }

    /// Configured from `OLLAMA_HOST`.
    pub fn from_env() -> Result<Self, BackendError> {
        Self::new(BackendConfig::ollama_from_env())
    }
}

impl Backend for OllamaBackend {
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>> {
        Box::pin(async move {
            let wire = build_request(&request)?;
            let body = serde_json::to_vec(&wire)
                .map_err(|error| BackendError::Config(error.to_string()))?;
            let url = self.transport.url("/api/chat");
            self.transport
                .exchange(url, body, Format::Ollama, request.stream)
                .await
        })
    }

    /// Ollama embeds at `/api/embed` (and the older `/api/embeddings`), answering in the
    /// format its clients read, so the client's request passes as it was sent.
    fn embed<'a>(
        &'a self,
        path: &'a str,
        body: serde_json::Value,
    ) -> Option<BoxFuture<'a, Result<serde_json::Value, BackendError>>> {
        Some(Box::pin(async move {
            let url = self.transport.url(path);
            self.transport.post_json(&url, &body).await?.ok_or_else(|| {
                BackendError::Decode(switchboard_wire::DecodeError {
                    offset: 0,
                    kind: switchboard_wire::DecodeErrorKind::Json(format!(
                        "the answer at {path} is not JSON, or larger than the gateway reads"
                    )),
                })
            })
        }))
    }

    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.transport.check("/api/tags"))
    }
}
