//! Client for OpenAI-compatible servers (OpenAI, vLLM, llama.cpp, mistral.rs, OpenRouter…):
//! `POST {base}/chat/completions` with a bearer key.

use futures::future::BoxFuture;
use switchboard_wire::openai::{StreamOptions, build_request};
use switchboard_wire::{ChatRequest, Format};

use crate::tokens::Tokenizer;
use crate::transport::{Transport, bearer_headers};
use crate::{Backend, BackendConfig, BackendError, EventStream};

#[derive(Debug)]
pub struct OpenAiBackend {
    transport: Transport,
    tokenizer: Tokenizer,
}

impl OpenAiBackend {
    pub fn new(config: BackendConfig) -> Result<Self, BackendError> {
        let headers = bearer_headers(&config)?;
        Ok(Self {
            transport: Transport::new(config, headers)?,
            tokenizer: Tokenizer::default(),
        })
    }

    /// Configured from `OPENAI_BASE_URL` and `OPENAI_API_KEY`.
    pub fn from_env() -> Result<Self, BackendError> {
        Self::new(BackendConfig::openai_from_env())
    }
}

impl Backend for OpenAiBackend {
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>> {
        Box::pin(async move {
            let mut wire = build_request(&request);
            if request.stream {
                // Usage only comes in a stream when asked for.
                wire.stream_options = Some(StreamOptions {
                    include_usage: Some(true),
                    extra: serde_json::Map::new(),
                });
            }
            let body = serde_json::to_vec(&wire)
                .map_err(|error| BackendError::Config(error.to_string()))?;
            let url = self.transport.url("/chat/completions");
            self.transport
                .exchange(url, body, Format::OpenAi, request.stream)
                .await
        })
    }

    /// vLLM's `/tokenize`, or llama.cpp's `/apply-template` and `/tokenize`.
    fn count_tokens(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<Option<u64>, BackendError>> {
        Box::pin(async move { self.tokenizer.count(&self.transport, &request).await })
    }

    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.transport.check("/models"))
    }
}
