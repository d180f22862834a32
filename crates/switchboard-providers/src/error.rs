//! Backend failures, typed so a caller can tell its own mistake from the backend's, and so
//! the gateway can answer each with the right status.

use switchboard_wire::{CollectError, ConvertError, DecodeError};

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    Connect,
    /// From sending the request to the first byte of the answer's body.
    FirstByte,
    /// Between two pieces of the body.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "the connection",
            TimeoutPhase::FirstByte => "the first byte of the answer",
            TimeoutPhase::Idle => "the next piece of the stream",
        })
    }
}

/// How far a request got when its connection failed: whether the backend is down or up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionFailure {
    /// No connection could be made (refused, no such host, TLS): the backend is down or out of
    /// reach.
    Unreachable,
    /// The request was sent and the backend closed the connection (or reset it) before any
    /// byte of an answer, on a pooled connection and again on a new one: the backend is up
    /// but drops requests.
    ClosedBeforeAnswer,
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend answered with an error status; `message` is its own explanation, and
    /// `retry_after` its `Retry-After` header (seconds), when it sent one.
    #[error("backend answered HTTP {status}: {message}")]
    Http {
        status: u16,
        message: String,
        retry_after: Option<std::time::Duration>,
    },
    /// The connection failed before any byte of an answer; `failure` says how far it got.
    #[error("{}", connect_message(url, *failure, detail))]
    Connect {
        url: String,
        failure: ConnectionFailure,
        detail: String,
    },
    #[error("backend timed out waiting for {phase}")]
    Timeout { phase: TimeoutPhase },
    /// The answer stopped before its terminator: a cut, never a short answer.
    #[error("backend stream was cut at byte {offset}: {detail}")]
    StreamCut { offset: usize, detail: String },
    /// Bytes the decoder could not accept, or an error the backend sent inside the stream.
    #[error("backend sent an answer that cannot be decoded: {0}")]
    Decode(#[from] DecodeError),
    #[error("backend's events do not form an answer: {0}")]
    Incomplete(#[from] CollectError),
    /// The request cannot be expressed in this backend's format (e.g. `tool_choice:
    /// required` for Ollama, or history arguments that are not JSON).
    #[error("request not sendable to this backend: {0}")]
    Unsupported(#[from] ConvertError),
    #[error("invalid backend configuration: {0}")]
    Config(String),
}

impl BackendError {
    /// The HTTP status a gateway should answer with: rate limits and the client's own
    /// request errors pass through, a backend that is down or broken is a 502, a slow one
    /// a 504.
    pub fn http_status(&self) -> u16 {
        match self {
            BackendError::Http {
                status: status @ (400 | 404 | 413 | 422 | 429),
                ..
            } => *status,
            BackendError::Http { .. } => 502,
            BackendError::Connect { .. } | BackendError::StreamCut { .. } => 502,
            BackendError::Decode(_) | BackendError::Incomplete(_) => 502,
            BackendError::Timeout { .. } => 504,
            BackendError::Unsupported(_) => 400,
            BackendError::Config(_) => 500,
        }
    }

    /// A decoder's verdict: a truncation is a cut stream, anything else a decode error.
    pub(crate) fn from_decode(error: DecodeError) -> Self {
        if error.is_truncation() {
            BackendError::StreamCut {
                offset: error.offset,
                detail: error.kind.to_string(),
            }
        } else {
            BackendError::Decode(error)
        }
    }
}

fn connect_message(url: &str, failure: ConnectionFailure, detail: &str) -> String {
    match failure {
        ConnectionFailure::Unreachable => format!("cannot reach backend at {url}: {detail}"),
        ConnectionFailure::ClosedBeforeAnswer => format!(
            "backend at {url} closed the connection before answering, also on a new connection: {detail}"
        ),
    }
}

/// The backend's own words from an error body: OpenAI's and Anthropic's `error.message`,
/// Ollama's `error`, vLLM's `message`, FastAPI's `detail`; otherwise the text itself.
pub(crate) fn error_message(body: &[u8], status: u16) -> String {
    const LIMIT: usize = 2000;
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let found = [
            value.pointer("/error/message"),
            value.get("error").filter(|error| error.is_string()),
            value.get("message"),
            value.get("detail"),
        ]
        .into_iter()
        .flatten()
        .next();
        if let Some(found) = found {
            return found
                .as_str()
                .map_or_else(|| found.to_string(), str::to_owned);
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no message")
            .to_owned();
    }
    text.chars().take(LIMIT).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_from_each_providers_error_shape() {
        assert_eq!(
            error_message(
                br#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#,
                400
            ),
            "bad tools"
        );
        assert_eq!(
            error_message(br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#, 400),
            "max_tokens: required"
        );
        assert_eq!(
            error_message(br#"{"error":"model 'x' not found"}"#, 404),
            "model 'x' not found"
        );
        assert_eq!(
            error_message(br#"{"object":"error","message":"too long"}"#, 400),
            "too long"
        );
        assert_eq!(error_message(b"upstream down\n", 502), "upstream down");
        assert_eq!(error_message(b"", 503), "Service Unavailable");
    }

    #[test]
    fn statuses_for_the_gateway() {
        let http = |status| BackendError::Http {
            status,
            message: String::new(),
            retry_after: None,
        };
        assert_eq!(http(429).http_status(), 429);
        assert_eq!(http(400).http_status(), 400);
        assert_eq!(http(401).http_status(), 502);
        assert_eq!(http(503).http_status(), 502);
        assert_eq!(
            BackendError::Connect {
                url: String::new(),
                failure: ConnectionFailure::Unreachable,
                detail: String::new()
            }
            .http_status(),
            502
        );
        assert_eq!(
            BackendError::Timeout {
                phase: TimeoutPhase::Idle
            }
            .http_status(),
            504
        );
    }
}
