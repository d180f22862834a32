//! One structured log line and the request metrics for every request, whatever API it came
//! through and however it ended: answered, failed, or abandoned by its client (a request
//! whose handler is dropped before its line was written is logged as `client_closed`).
//! Labels are the endpoint and the resolved route or character, never the raw client
//! string. The same facts go on the request's span (see `traces`) when spans are exported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::http::StatusCode;
use opentelemetry::trace::Status;
use switchboard_wire::{FinishReason, StreamEvent};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::api::caller::Caller;
use crate::api::error::ApiError;
use crate::traces;
use switchboard_pipeline::{Answer, Output, Started};
use switchboard_upstream::UpstreamRecord;

/// What a finished answer amounted to.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub tool_calls: usize,
    pub finish_reason: Option<FinishReason>,
    /// Bytes of text (words, reasoning, calls) the answer carried so far: what an answer
    /// without its usage is charged by.
    pub output_bytes: u64,
}

impl Tally {
    /// What a whole answer amounted to.
    pub fn of(answer: &Answer) -> Self {
        let response = &answer.response;
        let usage = response.usage.unwrap_or_default();
        let texts = [&response.content, &response.reasoning_content]
            .into_iter()
            .flatten()
            .map(String::len);
        let calls = response
            .tool_calls
            .iter()
            .map(|call| call.name.len() + call.arguments.len());
        Self {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            tool_calls: response.tool_calls.len(),
            finish_reason: Some(response.finish_reason.clone()),
            output_bytes: texts.chain(calls).sum::<usize>() as u64,
        }
    }

    /// Counts what one output adds.
    pub fn add(&mut self, output: &Output) {
        if let Output::Event(event) = output {
            self.output_bytes += event.text_len() as u64;
        }
        match output {
            Output::Event(StreamEvent::Usage(usage)) => {
                self.prompt_tokens = usage.prompt_tokens;
                self.completion_tokens = usage.completion_tokens;
            }
            Output::Event(StreamEvent::ToolCallStart { .. }) => self.tool_calls += 1,
            Output::Event(StreamEvent::Finish(reason)) => {
                self.finish_reason = Some(reason.clone());
            }
            _ => {}
        }
    }
}

/// A request being served, until its line is written (at most once).
#[derive(Debug)]
pub struct RequestLog {
    pub request_id: String,
    /// The API, e.g. `chat_completions`.
    pub endpoint: &'static str,
    pub started: Instant,
    written: AtomicBool,
    /// The route answering, and whether the answer streams, once known: the labels of the
    /// line written if the client leaves.
    answering: OnceLock<(String, bool)>,
    /// The kind of route and what its backends took, once the request reached one: the
    /// gateway's own share of the time is the rest.
    upstream: OnceLock<(&'static str, Arc<UpstreamRecord>)>,
    /// The model as the client named it, once its body was read.
    model: OnceLock<String>,
    /// Who asked: named in the line, and charged the answer's tokens.
    pub caller: Option<Caller>,
    /// The request's span, made around the handler by `traces::request`; disabled unless
    /// spans are exported.
    span: Span,
}

impl RequestLog {
    pub fn new(request_id: String, endpoint: &'static str) -> Self {
        let span = if traces::enabled() {
            Span::current()
        } else {
            Span::none()
        };
        if !span.is_disabled() {
            span.record("switchboard.endpoint", endpoint);
            span.record("switchboard.request_id", request_id.as_str());
            let operation = traces::operation(endpoint);
            span.record("gen_ai.operation.name", operation);
            traces::rename(&span, operation.unwrap_or(endpoint));
        }
        Self {
            request_id,
            endpoint,
            started: Instant::now(),
            written: AtomicBool::new(false),
            answering: OnceLock::new(),
            upstream: OnceLock::new(),
            model: OnceLock::new(),
            caller: None,
            span,
        }
    }

    /// The model the client asked for, as it asked: the span's `gen_ai.request.model`, and
    /// the line's `model` (so that a 404 shows which name clients asked for).
    pub fn requested(&self, model: &str) {
        let _ = self.model.set(model.to_owned());
        if !self.span.is_disabled() {
            let operation = traces::operation(self.endpoint).unwrap_or(self.endpoint);
            self.span.record("gen_ai.request.model", model);
            traces::rename(&self.span, format!("{operation} {model}"));
        }
    }

    /// Names the route answering, for the line written should the client leave before the
    /// answer is complete.
    pub fn answering(&self, started: &Started, streamed: bool) {
        let _ = self.answering.set((started.label.clone(), streamed));
        let _ = self
            .upstream
            .set((started.kind, Arc::clone(&started.upstreams)));
    }

    /// Names the caller's key in the line and charges the answer's tokens to it (settling
    /// what the request reserved).
    pub fn with_caller(mut self, caller: &Caller) -> Self {
        self.caller = Some(caller.clone());
        self
    }

    /// A streamed answer whose client left before its end.
    pub fn client_closed(&self, route: &str, tally: Tally) {
        self.write(route, "client_closed", tally, true);
    }

    /// Writes the line and counts the request. `route` is `-` when the request never
    /// reached one.
    pub fn finish(&self, route: &str, status: StatusCode, tally: Tally, streamed: bool) {
        self.write(route, status.as_str(), tally, streamed);
    }

    /// Writes the line of a request that failed (`route` is `-` before one was resolved)
    /// and answers the error in the API's shape (its front-end's `FrontEnd::error`).
    pub fn fail(
        &self,
        route: &str,
        error: ApiError,
        shape: fn(ApiError) -> axum::response::Response,
    ) -> axum::response::Response {
        self.finish(route, error.status, Tally::default(), false);
        shape(error)
    }

    /// `outcome` is the HTTP status, or `client_closed`.
    fn write(&self, route: &str, outcome: &str, tally: Tally, streamed: bool) {
        if self.written.swap(true, Ordering::Relaxed) {
            return;
        }
        let latency = self.started.elapsed();
        if !self.span.is_disabled() {
            self.trace(route, outcome, &tally);
        }
        if let Some(caller) = &self.caller {
            let used = tally.prompt_tokens.saturating_add(tally.completion_tokens);
            // An answer delivered, even in part, without its usage (its client left, or
            // it failed part way) is estimated rather than free.
            if used == 0 && (outcome == "client_closed" || tally.output_bytes > 0) {
                caller.charge_estimate(tally.output_bytes);
            } else {
                caller.charge(used);
            }
        }
        tracing::info!(
            target: "switchboard::request",
            request_id = %self.request_id,
            endpoint = self.endpoint,
            key = self.caller.as_ref().and_then(Caller::name).unwrap_or("-"),
            model = self.model.get().map_or("-", String::as_str),
            route,
            upstream = self
                .upstream
                .get()
                .and_then(|(_, upstreams)| upstreams.answered())
                .map_or("-", |(_, upstream)| upstream),
            outcome,
            latency_ms = latency.as_secs_f64() * 1000.0,
            prompt_tokens = tally.prompt_tokens,
            completion_tokens = tally.completion_tokens,
            tool_calls = tally.tool_calls,
            streamed,
            "request"
        );
        let labels = [
            ("endpoint", self.endpoint.to_owned()),
            ("route", route.to_owned()),
            ("status", outcome.to_owned()),
        ];
        metrics::counter!("gateway_requests_total", &labels).increment(1);
        metrics::histogram!("gateway_request_duration_seconds", "endpoint" => self.endpoint, "route" => route.to_owned())
            .record(latency.as_secs_f64());
        if let Some((kind, upstreams)) = self.upstream.get() {
            let own = latency.saturating_sub(upstreams.waited());
            metrics::histogram!("gateway_overhead_seconds", "endpoint" => self.endpoint, "kind" => *kind)
                .record(own.as_secs_f64());
        }
        metrics::counter!("gateway_tokens_total", "route" => route.to_owned(), "direction" => "in")
            .increment(tally.prompt_tokens);
        metrics::counter!("gateway_tokens_total", "route" => route.to_owned(), "direction" => "out")
            .increment(tally.completion_tokens);
        metrics::counter!("gateway_tool_calls_total", "route" => route.to_owned())
            .increment(tally.tool_calls as u64);
    }

    /// The outcome on the request's span.
    fn trace(&self, route: &str, outcome: &str, tally: &Tally) {
        let span = &self.span;
        span.record("switchboard.route", route);
        span.record(
            "gen_ai.usage.input_tokens",
            traces::int(tally.prompt_tokens),
        );
        span.record(
            "gen_ai.usage.output_tokens",
            traces::int(tally.completion_tokens),
        );
        if let Some(reason) = &tally.finish_reason {
            traces::record_finish_reason(span, reason);
        }
        match outcome.parse::<u16>() {
            Ok(status) => {
                span.record("http.response.status_code", i64::from(status));
                // Server spans are errors for the server's failures only, not the client's.
                if status >= 500 {
                    span.record("error.type", outcome);
                    span.set_status(Status::error(format!("HTTP {status}")));
                }
            }
            Err(_) => {
                span.record("error.type", outcome);
            }
        }
    }
}

impl Drop for RequestLog {
    /// The handler was dropped before the line was written: its client went away (hyper
    /// drops a request's future when its connection closes).
    fn drop(&mut self) {
        if !self.written.load(Ordering::Relaxed) {
            let (route, streamed) = self
                .answering
                .get()
                .map_or(("-", false), |(route, streamed)| {
                    (route.as_str(), *streamed)
                });
            self.write(route, "client_closed", Tally::default(), streamed);
        }
    }
}
