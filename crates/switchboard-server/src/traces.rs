//! The spans OpenTelemetry exports: one per model request (the GenAI semantic conventions'
//! attributes), one per backend attempt beneath it, and the character tool executions the
//! characters crate opens under the same target. The binary decides whether anything
//! exports them; here they are ordinary `tracing` spans under [`TARGET`] at `TRACE` level,
//! which no layer wants unless an OpenTelemetry layer was installed for it (a log
//! subscriber at its usual levels never sees them, nor their fields in its lines). With
//! tracing off every such span is disabled at its call site and nothing else here runs: no
//! middleware, no header read, no backend wrapped, no header hook.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use futures::future::BoxFuture;
use opentelemetry::trace::{Status, TraceContextExt};
use opentelemetry::{Array, StringValue, Value, global};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use switchboard_providers::{Backend, BackendError, EventStream, HeaderHook};
use switchboard_wire::{ChatRequest, FinishReason, StreamEvent};
use tracing::field::Empty;
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use switchboard_pipeline::trace_context::{TARGET, enabled};

/// Middleware (installed while spans are exported) that runs one model request inside its
/// span, continuing the client's W3C `traceparent` when it sent one. The front-end's
/// `RequestLog` takes the span as the current one and fills in what the request turns out
/// to be.
pub(crate) async fn request(request: Request, next: Next) -> Response {
    let span = tracing::trace_span!(
        target: TARGET,
        "request",
        otel.kind = "server",
        http.request.method = %request.method(),
        http.route = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.request.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        switchboard.endpoint = Empty,
        switchboard.request_id = Empty,
        switchboard.route = Empty,
    );
    if span.is_disabled() {
        return next.run(request).await;
    }
    let parent = global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(request.headers()))
    });
    // Fails only when no OpenTelemetry layer is installed, and then the span is disabled.
    let _ = span.set_parent(parent);
    if let Some(route) = request.extensions().get::<MatchedPath>() {
        span.record("http.route", route.as_str());
    }
    next.run(request).instrument(span).await
}

/// The OpenTelemetry operation name of an endpoint's requests: every chat API is `chat`.
pub(crate) fn operation(endpoint: &str) -> Option<&'static str> {
    match endpoint {
        "chat_completions" | "messages" | "responses" | "generate_content" | "ollama_chat"
        | "ollama_generate" => Some("chat"),
        "character_tool" => Some("execute_tool"),
        _ => None,
    }
}

/// Names the span once what it does is known (the GenAI conventions' `chat {model}`). The
/// span has started by then, and `tracing`'s `otel.name` field names only spans not yet
/// started, so the name goes to the OpenTelemetry span itself.
pub(crate) fn rename(span: &Span, name: impl Into<Cow<'static, str>>) {
    span.context().span().update_name(name);
}

/// A count as an attribute: OpenTelemetry's integers are signed, and an unsigned `tracing`
/// value would be exported as text.
pub(crate) fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// `gen_ai.response.finish_reasons`, a string array: `tracing` fields cannot carry one, so it
/// goes to the OpenTelemetry span directly.
pub(crate) fn record_finish_reason(span: &Span, reason: &FinishReason) {
    let reasons = vec![StringValue::from(reason.as_openai().to_owned())];
    span.set_attribute(
        "gen_ai.response.finish_reasons",
        Value::Array(Array::String(reasons)),
    );
}

/// Puts the current span's trace context on a backend request as `traceparent` (and
/// `tracestate`): set on routes only while spans are exported.
pub(crate) fn header_hook() -> Option<HeaderHook> {
    enabled().then(|| Arc::new(inject_current) as HeaderHook)
}

fn inject_current(headers: &mut HeaderMap) {
    let context = Span::current().context();
    global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// The route's backend, with a span around each request made to it (while spans are
/// exported; otherwise the backend itself).
pub(crate) fn traced_backend(
    backend: Arc<dyn Backend>,
    route: &str,
    url: &str,
) -> Arc<dyn Backend> {
    if !enabled() {
        return backend;
    }
    let uri = url.parse::<Uri>().ok();
    Arc::new(TracedBackend {
        inner: backend,
        route: route.to_owned(),
        host: uri
            .as_ref()
            .and_then(Uri::host)
            .unwrap_or_default()
            .to_owned(),
        port: uri.as_ref().and_then(Uri::port_u16),
    })
}

/// A backend whose every attempt is a span: from sending the request until its answer's
/// stream is dropped, with the answer's finish reason and usage, or the failure.
struct TracedBackend {
    inner: Arc<dyn Backend>,
    route: String,
    host: String,
    port: Option<u16>,
}

impl std::fmt::Debug for TracedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedBackend")
            .field("route", &self.route)
            .finish_non_exhaustive()
    }
}

impl Backend for TracedBackend {
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>> {
        let span = tracing::trace_span!(
            target: TARGET,
            "backend",
            otel.name = %format_args!("chat {}", request.model),
            otel.kind = "client",
            error.type = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %request.model,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            server.address = %self.host,
            server.port = self.port.map(i64::from),
            switchboard.route = %self.route,
        );
        let sent = self.inner.chat(request).instrument(span.clone());
        Box::pin(async move {
            match sent.await {
                Ok(events) => Ok(watched(events, span)),
                Err(error) => {
                    failed(&span, &error);
                    Err(error)
                }
            }
        })
    }

    fn count_tokens(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<Option<u64>, BackendError>> {
        self.inner.count_tokens(request)
    }

    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        self.inner.check()
    }
}

/// The answer's events, noted on the attempt's span, which ends when they are dropped.
fn watched(events: EventStream, span: Span) -> EventStream {
    events
        .inspect(move |event| match event {
            Ok(StreamEvent::Finish(reason)) => record_finish_reason(&span, reason),
            Ok(StreamEvent::Usage(usage)) => {
                span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
                span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
            }
            Err(error) => failed(&span, error),
            Ok(_) => {}
        })
        .boxed()
}

fn failed(span: &Span, error: &BackendError) {
    span.record("error.type", error.kind().as_ref());
    span.set_status(Status::error(error.to_string()));
}
