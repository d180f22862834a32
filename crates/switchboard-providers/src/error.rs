//! Backend failures, typed so a caller can tell its own mistake from the backend's, and so
//! the gateway can answer each with the right status.

use switchboard_wire::{CollectError, ConvertError, DecodeError, DecodeErrorKind};

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
    /// The code a client is answered with (`error.code`): what went wrong, in words a
    /// dashboard can count. Each variant gets its own; a new variant gets its line here.
    pub fn code(&self) -> &'static str {
        match self {
            // A backend refusing the gateway's key: the operator's business, not the client's.
            BackendError::Http {
                status: 401 | 403, ..
            } => "backend_auth_failed",
            BackendError::Decode(decode)
                if matches!(decode.kind, DecodeErrorKind::TooLarge { .. }) =>
            {
                "backend_answer_too_large"
            }
            BackendError::Http { status: 429, .. } => "rate_limited",
            // Busy rather than broken: clients that know the difference retry (Anthropic's 529).
            BackendError::Http {
                status: 503 | 529, ..
            } => "backend_overloaded",
            BackendError::Http { .. } => "backend_error",
            BackendError::Connect {
                failure: ConnectionFailure::ClosedBeforeAnswer,
                ..
            } => "backend_closed_connection",
            BackendError::Connect { .. } => "backend_unreachable",
            BackendError::Timeout { .. } => "backend_timeout",
            BackendError::StreamCut { .. } => "backend_stream_cut",
            BackendError::Decode(_) | BackendError::Incomplete(_) => "backend_bad_answer",
            BackendError::Unsupported(_) => "unsupported_by_backend",
            BackendError::Config(_) => "backend_config",
        }
    }

    /// A short, bounded name for the failure, as a span's `error.type` asks.
    pub fn kind(&self) -> std::borrow::Cow<'static, str> {
        match self {
            BackendError::Http { status, .. } => status.to_string().into(),
            BackendError::Connect { .. } => "connect".into(),
            BackendError::Timeout { .. } => "timeout".into(),
            BackendError::StreamCut { .. } => "stream_cut".into(),
            BackendError::Decode(_) | BackendError::Incomplete(_) => "bad_answer".into(),
            BackendError::Unsupported(_) => "unsupported".into(),
            BackendError::Config(_) => "config".into(),
        }
    }

    /// Whether an attempt failing this way before its first event may be made again; `None`
    /// when not: the request's own fault (400, 401, 422, a request the format cannot
    /// express), an error the backend explained in its answer, an answer too large. Of an
    /// error after the first event, whether the replica is to blame.
    pub fn retry_class(&self) -> Option<RetryClass> {
        match self {
            BackendError::Connect {
                failure: ConnectionFailure::ClosedBeforeAnswer,
                ..
            } => Some(RetryClass::Reset),
            BackendError::Connect { .. }
            | BackendError::Timeout {
                phase: TimeoutPhase::Connect,
            } => Some(RetryClass::Connect),
            BackendError::Timeout { .. } => Some(RetryClass::Timeout),
            // Headers came, then the connection died before a byte of the body.
            BackendError::StreamCut { offset: 0, .. } => Some(RetryClass::Reset),
            BackendError::StreamCut { .. } | BackendError::Incomplete(_) => {
                Some(RetryClass::BadAnswer)
            }
            BackendError::Decode(decode)
                if !matches!(
                    decode.kind,
                    DecodeErrorKind::Backend(_) | DecodeErrorKind::TooLarge { .. }
                ) =>
            {
                Some(RetryClass::BadAnswer)
            }
            BackendError::Http {
                status: 404 | 501, ..
            } => Some(RetryClass::NotServed),
            BackendError::Http { status: 429, .. } => Some(RetryClass::RateLimited),
            BackendError::Http {
                status: 500 | 502 | 503 | 504 | 529,
                ..
            } => Some(RetryClass::ServerError),
            _ => None,
        }
    }

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

/// How a failure before an answer began may be retried, as the replica pool reads it: each
/// variant is also a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    Connect,
    Reset,
    RateLimited,
    ServerError,
    /// No first event in time.
    Timeout,
    /// A success status with something that is not an answer (a web page, JSON without
    /// `choices`, a body cut before its first event).
    BadAnswer,
    /// 404 or 501: the server does not serve the model or endpoint asked for, which the
    /// other replicas of a route may.
    NotServed,
}

impl RetryClass {
    pub fn label(self) -> &'static str {
        match self {
            RetryClass::Connect => "connect_error",
            RetryClass::Reset => "connection_reset",
            RetryClass::RateLimited => "rate_limited",
            RetryClass::ServerError => "server_error",
            RetryClass::Timeout => "first_byte_timeout",
            RetryClass::BadAnswer => "bad_answer",
            RetryClass::NotServed => "not_served",
        }
    }

    /// Failures the same replica would most likely repeat (or that took a long wait to
    /// show): tried again only on another replica.
    pub fn elsewhere_only(self) -> bool {
        matches!(
            self,
            RetryClass::Timeout | RetryClass::BadAnswer | RetryClass::NotServed
        )
    }

    /// A failure the request could have hit on any healthy server counts for nothing
    /// against this one: a 429 is the server protecting itself.
    pub fn blames_replica(self) -> bool {
        self != RetryClass::RateLimited
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

    fn retry(error: &BackendError) -> Option<RetryClass> {
        error.retry_class()
    }

    #[test]
    fn what_is_retried() {
        let http = |status| BackendError::Http {
            status,
            message: String::new(),
            retry_after: None,
        };
        assert_eq!(retry(&http(429)), Some(RetryClass::RateLimited));
        for status in [500, 502, 503, 504] {
            assert_eq!(retry(&http(status)), Some(RetryClass::ServerError));
        }
        for status in [400, 401, 422] {
            assert_eq!(retry(&http(status)), None, "{status}");
        }
        for status in [404, 501] {
            assert_eq!(retry(&http(status)), Some(RetryClass::NotServed));
        }
        let cut = |offset| BackendError::StreamCut {
            offset,
            detail: String::new(),
        };
        assert_eq!(retry(&cut(0)), Some(RetryClass::Reset));
        assert_eq!(
            retry(&cut(10)),
            Some(RetryClass::BadAnswer),
            "bytes, but no event"
        );
        let decode = |kind| BackendError::Decode(DecodeError { offset: 0, kind });
        assert_eq!(
            retry(&decode(DecodeErrorKind::Json("<html>".into()))),
            Some(RetryClass::BadAnswer)
        );
        assert_eq!(
            retry(&decode(DecodeErrorKind::Backend("prompt too long".into()))),
            None,
            "the backend explained itself"
        );
        assert_eq!(
            retry(&BackendError::Timeout {
                phase: TimeoutPhase::FirstByte
            }),
            Some(RetryClass::Timeout)
        );
    }

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
