//! Why a call to an upstream did not produce a tool result. Each message names the server,
//! so a model or an operator reading it knows which one failed. None of them carries the
//! configured HTTP headers: they hold credentials.

use std::time::Duration;

/// Why a call (or the upstream) failed. A tool that ran and reported a failure is not one of
/// these: that is a [`crate::CallOutput`] with `is_error` set, which the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The server is down, restarting, or was lost mid-call; calls fail at once rather than
    /// wait for it.
    #[error("tool server {name} is unavailable: {why}")]
    Unavailable { name: String, why: String },
    /// The call's deadline passed. The server was told to cancel the request.
    #[error("tool server {name} did not answer within {}", seconds(*timeout))]
    Timeout { name: String, timeout: Duration },
    /// The tool is not offered: the server does not list it or the allow-list leaves it out.
    #[error("tool server {name} has no tool named {tool:?}")]
    UnknownTool { name: String, tool: String },
    /// The server answered with a JSON-RPC error, or with something that is not a result.
    #[error("tool server {name} rejected the call: {why}")]
    Rejected { name: String, why: String },
    /// The configuration cannot work (an empty command, a header that is not one).
    #[error("tool server {name} is misconfigured: {why}")]
    Config { name: String, why: String },
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}
