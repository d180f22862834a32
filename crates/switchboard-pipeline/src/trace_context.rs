//! The trace context as the pipeline passes it on where no HTTP header can carry it (an MCP
//! call's `_meta.traceparent`), and the switch every exported span obeys. Spans meant for
//! OpenTelemetry are ordinary `tracing` spans under [`TARGET`] at `TRACE` level; whether
//! anything exports them is the binary's choice.

use std::collections::HashMap;

use opentelemetry::global;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span meant for OpenTelemetry, all at `TRACE` level (the characters
/// crate names it too, for its tool spans). The binary's log output leaves it out, even at
/// `RUST_LOG=trace`, and its OpenTelemetry layer takes nothing else.
pub const TARGET: &str = "switchboard::otel";

/// Whether an OpenTelemetry layer wants these spans.
pub fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::TRACE)
}

/// The current span's `traceparent`; `None` while spans are not exported.
pub fn current_traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    let context = Span::current().context();
    let mut fields = HashMap::new();
    global::get_text_map_propagator(|propagator| propagator.inject_context(&context, &mut fields));
    fields.remove("traceparent")
}
