//! What the three clients share: one pooled HTTP client, one retry on a new connection when
//! the backend closed a pooled one under the request (no other retries: whoever holds the
//! client retries, as the gateway's replica pool does), the first-byte and idle timeouts,
//! and the body fed to the format's stream decoder as it arrives, or read whole when its
//! content type says it is one JSON answer.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchboard_wire::ids::IdSource;
use switchboard_wire::{DecodeError, DecodeErrorKind, Format, StreamDecoder, StreamEvent};

use std::sync::Arc;

use crate::error::error_message;
use crate::secrets::Redactor;
use crate::{BackendConfig, BackendError, ConnectionFailure, EventStream, TimeoutPhase};

/// Longest wait a `Retry-After` header is reported with.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How long a health check waits for its answer once connected.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest a JSON answer that is not a chat (a tokenizer's, embeddings) may take to arrive
/// once its headers did.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest such answer read (vLLM's tokenizer lists every token id; embeddings are long
/// lists of numbers).
const MAX_JSON_ANSWER_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    /// Keeps no connection: the retry of a request whose pooled connection the backend had
    /// closed must not land on another stale one.
    unpooled: reqwest::Client,
    config: BackendConfig,
    headers: HeaderMap,
    /// Every error leaving the transport passes through it: backends quote credentials.
    redactor: Arc<Redactor>,
}

/// A header carrying a secret from the configuration; an error names the header, never the value.
pub(crate) fn secret_header(name: &str, value: &str) -> Result<HeaderValue, BackendError> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| BackendError::Config(format!("the {name} is not a valid header value")))?;
    value.set_sensitive(true);
    Ok(value)
}

/// `Authorization: Bearer <key>` when a key is configured.
pub(crate) fn bearer_headers(config: &BackendConfig) -> Result<HeaderMap, BackendError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &config.api_key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            secret_header("API key", &format!("Bearer {key}"))?,
        );
    }
    Ok(headers)
}

impl Transport {
    /// `headers` are the format's own (auth, version); the configured extra headers are added.
    pub(crate) fn new(config: BackendConfig, mut headers: HeaderMap) -> Result<Self, BackendError> {
        for (name, value) in &config.extra_headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|error| BackendError::Config(format!("header name {name:?}: {error}")))?;
            let value = HeaderValue::from_str(value).map_err(|error| {
                BackendError::Config(format!("value of header {name}: {error}"))
            })?;
            headers.insert(name, value);
        }
        let build = |builder: reqwest::ClientBuilder| {
            builder
                .connect_timeout(config.connect_timeout)
                .build()
                .map_err(|error| BackendError::Config(error.to_string()))
        };
        let client = build(reqwest::Client::builder().pool_idle_timeout(config.pool_idle_timeout))?;
        let unpooled = build(reqwest::Client::builder().pool_max_idle_per_host(0))?;
        Ok(Self {
            client,
            unpooled,
            redactor: Arc::new(Redactor::new(&config)),
            config,
            headers,
        })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.base_url.trim_end_matches('/'))
    }

    /// Posts `body` and reads the whole answer as JSON: `None` when it is not JSON or is
    /// larger than [`MAX_JSON_ANSWER_BYTES`].
    pub(crate) async fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<Option<serde_json::Value>, BackendError> {
        let bytes =
            serde_json::to_vec(body).map_err(|error| BackendError::Config(error.to_string()))?;
        let mut response = self.send(url, bytes).await?;
        let mut answer = Vec::new();
        loop {
            let chunk = tokio::time::timeout(READ_TIMEOUT, response.chunk())
                .await
                .map_err(|_| BackendError::Timeout {
                    phase: TimeoutPhase::Idle,
                })?
                .map_err(|error| BackendError::StreamCut {
                    offset: answer.len(),
                    detail: error.to_string(),
                })?;
            let Some(chunk) = chunk else { break };
            if answer.len() + chunk.len() > MAX_JSON_ANSWER_BYTES {
                return Ok(None);
            }
            answer.extend_from_slice(&chunk);
        }
        Ok(serde_json::from_slice(&answer).ok())
    }

    /// Posts `body` and returns the answer's events: decoded as they stream in, or from the
    /// whole JSON body, by the same normalisation either way. The answer's content type
    /// decides which, not what was asked: some servers ignore `stream: true`.
    pub(crate) async fn exchange(
        &self,
        url: String,
        body: Vec<u8>,
        format: Format,
        streaming: bool,
    ) -> Result<EventStream, BackendError> {
        let started = Instant::now();
        let response = self.send(&url, body).await?;
        let streamed = is_streamed(response.headers(), streaming);
        let body = Body {
            chunks: response.bytes_stream().boxed(),
            first_byte_deadline: Some(started + self.config.first_byte_timeout),
            idle_timeout: self.config.idle_timeout,
            received: 0,
            limit: self.config.max_body_bytes,
        };
        if streamed {
            return Ok(decode_stream(
                body,
                format.stream_decoder(IdSource::random()),
                Arc::clone(&self.redactor),
            ));
        }
        let bytes = body
            .read_all()
            .await
            .map_err(|error| self.redactor.error(error))?;
        let events = format
            .body_events(&bytes, IdSource::random())
            .map_err(|error| self.redactor.error(BackendError::from_decode(error)))?;
        Ok(stream::iter(events.into_iter().map(Ok)).boxed())
    }

    /// `GET path` answers with a success status within the connect timeout plus five
    /// seconds: the server is up and serving, not merely accepting connections.
    pub(crate) async fn check(&self, path: &str) -> Result<(), BackendError> {
        let url = self.url(path);
        let request = self.client.get(&url).headers(self.headers.clone()).send();
        let wait = self.config.connect_timeout + CHECK_TIMEOUT;
        let error = match tokio::time::timeout(wait, request).await {
            Err(_) => BackendError::Timeout {
                phase: TimeoutPhase::FirstByte,
            },
            Ok(Err(error)) => connect_error(&url, &error),
            Ok(Ok(response)) if response.status().is_success() => return Ok(()),
            Ok(Ok(response)) => BackendError::Http {
                status: response.status().as_u16(),
                message: format!(
                    "GET {}{path} answered {}",
                    self.redactor.shown_base(),
                    response.status()
                ),
                retry_after: None,
            },
        };
        Err(self.redactor.error(error))
    }

    /// Posts `body` to `url` and returns an answer with a success status; an error's text
    /// is cut of the backend's credentials. No retries here: whoever holds the backend
    /// retries (the gateway's replica pool, on another replica where there is one).
    pub(crate) async fn send(
        &self,
        url: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, BackendError> {
        self.send_unredacted(url, body)
            .await
            .map_err(|error| self.redactor.error(error))
    }

    async fn send_unredacted(
        &self,
        url: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, BackendError> {
        // Set for the one attempt that retries a request the backend closed the connection on.
        let mut reopened = false;
        loop {
            let client = if reopened {
                &self.unpooled
            } else {
                &self.client
            };
            let mut headers = self.headers.clone();
            if let Some(hook) = &self.config.request_headers {
                hook(&mut headers);
            }
            let request = client
                .post(url)
                .headers(headers)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            match tokio::time::timeout(self.config.first_byte_timeout, request.send()).await {
                Err(_) => {
                    return Err(BackendError::Timeout {
                        phase: TimeoutPhase::FirstByte,
                    });
                }
                Ok(Err(error)) if !reopened && closed_before_answer(&error) => {
                    // A server closes an idle keep-alive connection when it likes
                    // (llama.cpp's right after a stream); a request written into it as
                    // it closed was never read. Once more, at once, on a new connection.
                    tracing::debug!(url = %self.redactor.text(&crate::shown_url(url)), error = %self.redactor.text(&error.to_string()), "backend closed the connection before answering; retrying on a new connection");
                    reopened = true;
                }
                Ok(Err(error)) => return Err(connect_error(url, &error)),
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) => return Err(self.refusal(response).await),
            }
        }
    }

    /// An answer with an error status as an error: its status, the backend's message and
    /// how long it asked to be left alone (`Retry-After`).
    async fn refusal(&self, response: reqwest::Response) -> BackendError {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(|seconds| Duration::from_secs(seconds).min(MAX_RETRY_AFTER));
        let bytes = Body {
            chunks: response.bytes_stream().boxed(),
            first_byte_deadline: None,
            idle_timeout: self.config.idle_timeout,
            received: 0,
            limit: self.config.max_body_bytes,
        }
        .read_all()
        .await
        .unwrap_or_default();
        BackendError::Http {
            status,
            message: error_message(&bytes, status),
            retry_after,
        }
    }
}

/// Whether the answer is a stream (SSE, or NDJSON for Ollama) or one JSON body, by its
/// content type; without a telling one, what was asked for.
fn is_streamed(headers: &HeaderMap, asked: bool) -> bool {
    let media_type = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase());
    match media_type.as_deref() {
        Some("application/json") => false,
        Some("text/event-stream" | "application/x-ndjson") => true,
        _ => asked,
    }
}

/// The connection was open and the request on its way, and the backend closed or reset it
/// before any byte of an answer.
fn closed_before_answer(error: &reqwest::Error) -> bool {
    if error.is_connect() || error.is_timeout() {
        return false;
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>()
            && hyper.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        source = cause.source();
    }
    false
}

fn connect_error(url: &str, error: &reqwest::Error) -> BackendError {
    if error.is_timeout() {
        return BackendError::Timeout {
            phase: TimeoutPhase::Connect,
        };
    }
    let failure = if closed_before_answer(error) {
        ConnectionFailure::ClosedBeforeAnswer
    } else {
        ConnectionFailure::Unreachable
    };
    // The source chain holds the useful part ("Connection refused").
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        detail = format!("{detail}: {cause}");
        source = cause.source();
    }
    BackendError::Connect {
        url: url.to_owned(),
        failure,
        detail,
    }
}

/// A response body read under the first-byte and idle timeouts.
struct Body {
    chunks: futures::stream::BoxStream<'static, Result<bytes::Bytes, reqwest::Error>>,
    first_byte_deadline: Option<Instant>,
    idle_timeout: Duration,
    received: usize,
    /// The most [`Body::read_all`] keeps.
    limit: usize,
}

impl Body {
    /// The next piece, `None` at the end.
    async fn next(&mut self) -> Result<Option<bytes::Bytes>, BackendError> {
        let (wait, phase) = match self.first_byte_deadline {
            Some(deadline) if self.received == 0 => (
                deadline.saturating_duration_since(Instant::now()),
                TimeoutPhase::FirstByte,
            ),
            _ => (self.idle_timeout, TimeoutPhase::Idle),
        };
        match tokio::time::timeout(wait, self.chunks.next()).await {
            Err(_) => Err(BackendError::Timeout { phase }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(bytes))) => {
                self.received += bytes.len();
                Ok(Some(bytes))
            }
            Ok(Some(Err(error))) => Err(BackendError::StreamCut {
                offset: self.received,
                detail: format!("connection failed: {error}"),
            }),
        }
    }

    async fn read_all(mut self) -> Result<Vec<u8>, BackendError> {
        let mut all = Vec::new();
        while let Some(bytes) = self.next().await? {
            if all.len() + bytes.len() > self.limit {
                return Err(BackendError::Decode(DecodeError {
                    offset: self.limit,
                    kind: DecodeErrorKind::Protocol(format!(
                        "the answer is longer than the {} bytes allowed for a whole body",
                        self.limit
                    )),
                }));
            }
            all.extend_from_slice(&bytes);
        }
        Ok(all)
    }
}

struct Decoding {
    body: Body,
    decoder: Box<dyn StreamDecoder>,
    redactor: Arc<Redactor>,
    ready: VecDeque<StreamEvent>,
    /// Reported after the events decoded before it.
    failure: Option<BackendError>,
    ended: bool,
}

/// Events as soon as the decoder completes them; the first error ends the stream.
fn decode_stream(
    body: Body,
    decoder: Box<dyn StreamDecoder>,
    redactor: Arc<Redactor>,
) -> EventStream {
    let state = Decoding {
        body,
        decoder,
        redactor,
        ready: VecDeque::new(),
        failure: None,
        ended: false,
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.ready.pop_front() {
                return Some((Ok(event), state));
            }
            if let Some(failure) = state.failure.take() {
                return Some((Err(failure), state));
            }
            if state.ended {
                return None;
            }
            let mut out = Vec::new();
            let step = match state.body.next().await {
                Ok(Some(bytes)) => state
                    .decoder
                    .feed(&bytes, &mut out)
                    .map_err(BackendError::from_decode),
                Ok(None) => {
                    state.ended = true;
                    state
                        .decoder
                        .finish(&mut out)
                        .map_err(BackendError::from_decode)
                }
                Err(error) => Err(error),
            };
            state.ready.extend(out);
            if let Err(error) = step {
                state.ended = true;
                state.failure = Some(state.redactor.error(error));
            }
        }
    })
    .boxed()
}
