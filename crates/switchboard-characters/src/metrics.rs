//! The Prometheus metrics of character tools, under the names the original system used so
//! that its dashboards carry over. Every outcome is recorded, failures and timeouts included;
//! the exporter (installed elsewhere) owns the histogram buckets.

use std::time::Duration;

/// Buckets, in seconds, for `character_tool_latency_seconds`: 1 ms to 250 ms.
pub const TOOL_LATENCY_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

pub(crate) const TOOLS_LOADED: &str = "character_tools_loaded_total";
pub(crate) const VALIDATION_ERRORS: &str = "character_tool_validation_errors_total";
pub(crate) const TOOL_CALLS: &str = "character_tool_calls_total";
pub(crate) const TOOL_ERRORS: &str = "character_tool_errors_total";
pub(crate) const TOOL_LATENCY: &str = "character_tool_latency_seconds";

/// The tool label of calls to a name the character does not declare: the model chooses the
/// name, and labels must not grow without bound.
pub(crate) const UNKNOWN_TOOL_LABEL: &str = "(unknown)";

pub(crate) fn tools_loaded(character: &str, count: usize) {
    metrics::counter!(TOOLS_LOADED, "character_name" => character.to_owned())
        .increment(count as u64);
}

pub(crate) fn validation_error(error_type: &'static str) {
    metrics::counter!(VALIDATION_ERRORS, "error_type" => error_type).increment(1);
}

/// One finished call: counted, timed, and counted again as an error when it failed.
pub(crate) fn tool_call(
    character: &str,
    tool: &str,
    elapsed: Duration,
    error_type: Option<&'static str>,
) {
    metrics::counter!(TOOL_CALLS, "character_name" => character.to_owned(), "tool_name" => tool.to_owned())
        .increment(1);
    metrics::histogram!(TOOL_LATENCY, "tool_name" => tool.to_owned()).record(elapsed.as_secs_f64());
    if let Some(error_type) = error_type {
        metrics::counter!(TOOL_ERRORS, "error_type" => error_type).increment(1);
    }
}
