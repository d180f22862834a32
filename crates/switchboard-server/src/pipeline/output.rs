//! The pipeline's output vocabulary, shared by its stages and read by every front-end: what
//! an answer is made of ([`Output`]), the channel it travels in, what a character did
//! besides speaking, and a backend's failure as the error a client is answered with.

use axum::http::StatusCode;
use serde::Serialize;
use switchboard_providers::{BackendError, ConnectionFailure};
use switchboard_wire::{DecodeErrorKind, StreamEvent};
use tokio::sync::mpsc;

use super::tool_checks::ToolCallProblem;
use crate::error::ApiError;

/// What the pipeline hands the responder.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Event(StreamEvent),
    /// Problems with the model's calls; sent just before the finish.
    Problems(Vec<ToolCallProblem>),
    /// What a character did besides speaking (its prompt, its own tool calls); front-ends
    /// show it only to clients that ask.
    Character(CharacterEvent),
}

/// The outputs of one answer, in order, ending with an error where it failed.
pub type Outputs = mpsc::UnboundedReceiver<Result<Output, ApiError>>;
/// The stages' end of [`Outputs`].
pub type Sender = mpsc::UnboundedSender<Result<Output, ApiError>>;

/// Sends outputs in order; an error once the receiver (the client) is gone.
pub async fn send(sender: &Sender, outputs: Vec<Output>) -> Result<(), ApiError> {
    for output in outputs {
        if sender.send(Ok(output)).is_err() {
            return Err(ApiError::invalid_request("the client went away", None));
        }
    }
    Ok(())
}

/// Something a character did during a turn besides speaking, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CharacterEvent {
    /// The system prompt the character built for this turn's conversation.
    SystemPrompt { content: String },
    /// A complete tool call the model made, about to run.
    ToolStarted {
        id: String,
        name: String,
        arguments: String,
    },
    /// The call's result as the model reads it (an `Error: …` string when it failed).
    ToolFinished {
        id: String,
        name: String,
        content: String,
        is_error: bool,
        duration_ms: f64,
    },
}

/// A backend failure in OpenAI's error shape, with the status the provider layer chose.
/// Each `BackendError` variant gets its own code here: a new variant gets its line below.
pub fn backend_error(error: BackendError) -> ApiError {
    // A backend refusing the route's key tends to quote the key back (masked or not): that
    // text is the operator's business, never the client's.
    if let BackendError::Http {
        status: status @ (401 | 403),
        ..
    } = &error
    {
        return ApiError::upstream(
            StatusCode::BAD_GATEWAY,
            format!(
                "the backend refused the gateway's credentials for this route (HTTP {status}); the route's api_key_env needs attention"
            ),
            "backend_auth_failed",
        );
    }
    let code = match &error {
        BackendError::Decode(decode) if matches!(decode.kind, DecodeErrorKind::TooLarge { .. }) => {
            return ApiError::answer_too_large(decode);
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
    };
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_GATEWAY);
    ApiError::upstream(status, error.to_string(), code)
}
