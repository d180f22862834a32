//! Client for Anthropic's Messages API: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version`. Tool ids of the conversation are rewritten to Anthropic's alphabet
//! on the way out and the answer's ids mapped back.

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchboard_wire::anthropic::build_request;
use switchboard_wire::ids::IdMap;
use switchboard_wire::{ChatRequest, Format, StreamEvent};

use crate::tokens::anthropic_count;
use crate::transport::{Transport, secret_header};
use crate::{Backend, BackendConfig, BackendError, EventStream};

/// The API version this client's wire types follow.
const API_VERSION: &str = "2023-06-01";

#[derive(Debug)]
pub struct AnthropicBackend {
    transport: Transport,
}

impl AnthropicBackend {
    pub fn new(config: BackendConfig) -> Result<Self, BackendError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &config.api_key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                secret_header("API key", key)?,
            );
        }
        Ok(Self {
            transport: Transport::new(config, headers)?,
        })
    }

    /// Configured from `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`.
    pub fn from_env() -> Result<Self, BackendError> {
        Self::new(BackendConfig::anthropic_from_env())
    }
}

impl Backend for AnthropicBackend {
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>> {
        Box::pin(async move {
            let mut ids = IdMap::new();
            let wire = build_request(&request, &mut ids)?;
            let body = serde_json::to_vec(&wire)
                .map_err(|error| BackendError::Config(error.to_string()))?;
            let url = self.transport.url("/v1/messages");
            let events = self
                .transport
                .exchange(url, body, Format::Anthropic, request.stream)
                .await?;
            Ok(events
                .map(move |event| match event {
                    Ok(StreamEvent::ToolCallStart { index, id, name }) => {
                        Ok(StreamEvent::ToolCallStart {
                            index,
                            id: ids.from_anthropic(&id),
                            name,
                        })
                    }
                    other => other,
                })
                .boxed())
        })
    }

    /// Anthropic's `/v1/messages/count_tokens`.
    fn count_tokens(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<Option<u64>, BackendError>> {
        Box::pin(async move { anthropic_count(&self.transport, &request).await })
    }

    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.transport.check("/v1/models"))
    }
}
