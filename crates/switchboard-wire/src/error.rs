//! Errors of this crate. Each names what went wrong and where: a byte offset for streams,
//! a JSON path for conversions, so a user can find the culprit in a capture or a request.

use crate::CollectError;

/// A stream or body a decoder could not accept, with the byte offset where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct DecodeError {
    /// Offset from the first byte of the body.
    pub offset: usize,
    pub kind: DecodeErrorKind,
}

/// What a decoder found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("invalid UTF-8")]
    InvalidUtf8,
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The body ended before the format's terminator: a short answer, never a complete one.
    #[error("stream ended without {0}")]
    Truncated(&'static str),
    /// Well-formed JSON that breaks the format's rules (e.g. arguments for a call never started).
    #[error("{0}")]
    Protocol(String),
    /// The backend itself reported an error inside the stream.
    #[error("the backend reported an error: {0}")]
    Backend(String),
    /// One line or event longer than the decoders accept.
    #[error("an event longer than {limit} bytes")]
    TooLarge { limit: usize },
}

impl DecodeError {
    pub(crate) fn new(offset: usize, kind: DecodeErrorKind) -> Self {
        Self { offset, kind }
    }

    /// A JSON error inside `text`, which starts at byte `start` of the body: serde_json's
    /// line and column become an absolute offset. JSON that simply stops is a truncation.
    pub(crate) fn json(
        text: &str,
        start: usize,
        error: &serde_json::Error,
        terminator: &'static str,
    ) -> Self {
        let line_start: usize = text
            .split_inclusive('\n')
            .take(error.line().saturating_sub(1))
            .map(str::len)
            .sum();
        if error.is_eof() {
            return Self::new(start + text.len(), DecodeErrorKind::Truncated(terminator));
        }
        let offset =
            (start + line_start + error.column().saturating_sub(1)).min(start + text.len());
        Self::new(offset, DecodeErrorKind::Json(error.to_string()))
    }

    /// The line or event starting at `offset` passed [`MAX_EVENT_BYTES`](crate::MAX_EVENT_BYTES).
    pub(crate) fn too_large(offset: usize) -> Self {
        Self::new(
            offset,
            DecodeErrorKind::TooLarge {
                limit: crate::MAX_EVENT_BYTES,
            },
        )
    }

    pub(crate) fn protocol(offset: usize, message: impl Into<String>) -> Self {
        Self::new(offset, DecodeErrorKind::Protocol(message.into()))
    }

    /// For the unterminated last event of a body: whatever fails to parse there was cut.
    pub(crate) fn at_end(self, terminator: &'static str) -> Self {
        match self.kind {
            DecodeErrorKind::Json(_) => {
                Self::new(self.offset, DecodeErrorKind::Truncated(terminator))
            }
            _ => self,
        }
    }

    /// True when the body was cut short rather than malformed.
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, DecodeErrorKind::Truncated(_))
    }
}

/// A request, conversation or response that cannot be expressed in the target format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A value that is wrong where it stands, e.g. arguments that are not a JSON object.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// Something the target format has no way to say; refused rather than dropped.
    #[error("{format} does not support {what}")]
    Unsupported { format: &'static str, what: String },
}

impl ConvertError {
    pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// An event sequence an encoder cannot write, e.g. Ollama needs arguments as a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("tool call {index}: arguments are not a JSON object: {detail}")]
    Arguments { index: usize, detail: String },
    #[error("tool call {index}: {problem}")]
    Call { index: usize, problem: &'static str },
}

/// Why a whole captured body could not be turned into a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("the events do not form a response: {0}")]
    Collect(#[from] CollectError),
}
