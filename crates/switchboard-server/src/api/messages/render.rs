//! An answer in the Messages API's shapes: SSE events in Anthropic's order (`message_start`,
//! content blocks, `message_delta`, `message_stop`, `ping`s while the backend is silent), or
//! one `message` body that is those same events folded. Problems with the model's tool calls
//! ride on the message as `tool_call_errors` (in a stream: on `message_delta`); errors take
//! Anthropic's shape, with its types for each status.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_runtime::ToolEvent;
use switchboard_wire::anthropic::{MessageBuilder, SseEncoder, StreamPayload, push_sse_event};
use switchboard_wire::ids::IdMap;
use tokio_util::task::AbortOnDropHandle;

use crate::api::error::ApiError;
use crate::api::sse::{Renderer, WholeBody};
use switchboard_pipeline::tool_checks::ToolCallProblem;
use switchboard_pipeline::{Answer, GatewayEvent, Output, TokenCount};

/// Says where a prompt count came from: `backend` (its tokenizer) or `estimate`.
pub const TOKEN_COUNT: &str = "x-switchboard-token-count";
/// How long a stream may stay silent before a `ping` keeps the client's idle timer alive.
const PING_EVERY: Duration = Duration::from_secs(5);
/// Anthropic's `ping` event, written once rather than serialised for every wait.
const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    /// `msg_…`
    pub id: String,
    /// The model name the client asked for.
    pub model: String,
    /// `message_start`'s input tokens where no count of the backend's arrives in time.
    pub input_estimate: u64,
    /// Show each MCP server's tool listing (`mcp_tool_listing`, the 2026-09-15 beta).
    pub tool_listing: bool,
}

impl Presentation {
    fn encoder(&self) -> SseEncoder {
        SseEncoder::new(self.id.clone(), self.model.clone(), IdMap::new())
            .with_input_estimate(self.input_estimate)
    }
}

/// How long the head of a stream waits, once the answer has begun, for a prompt count
/// still on its way: a tokenizer answers well before a model's first token, so a count this
/// late means a tokenizer in trouble, and the head goes out with the estimate instead.
const COUNT_WAIT: Duration = Duration::from_millis(250);

/// Outputs as Messages SSE events.
#[derive(Debug)]
pub struct EventRenderer {
    encoder: SseEncoder,
    tool_listing: bool,
    problems: Vec<ToolCallProblem>,
    /// The prompt's count, being taken beside the answer; `None` once used or where none
    /// is taken.
    count: Option<AbortOnDropHandle<TokenCount>>,
    /// Where `message_start`'s `input_tokens` came from, for `x-switchboard-token-count`.
    source: &'static str,
}

impl EventRenderer {
    /// `count` is the prompt's count, taken beside the answer, for `message_start`, which
    /// otherwise announces the presentation's estimate.
    pub fn new(presentation: &Presentation, count: Option<BoxFuture<'static, TokenCount>>) -> Self {
        Self {
            encoder: presentation.encoder(),
            tool_listing: presentation.tool_listing,
            problems: Vec::new(),
            count: count.map(|count| AbortOnDropHandle::new(tokio::spawn(count))),
            source: "estimate",
        }
    }
}

impl Renderer for EventRenderer {
    async fn before_start(&mut self) {
        let Some(count) = self.count.take() else {
            return;
        };
        if let Ok(Ok(count)) = tokio::time::timeout(COUNT_WAIT, count).await {
            self.encoder.set_input_estimate(count.tokens);
            self.source = count.source;
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        headers.insert(TOKEN_COUNT, HeaderValue::from_static(self.source));
    }

    fn output(&mut self, output: Output) -> String {
        // The first output always opens the message, whatever it is: clients fall back to
        // a non-streaming retry when the stream does not begin with `message_start`.
        let mut payloads = self.encoder.start();
        match output {
            Output::CallProblems(found) => self.problems.extend(found),
            Output::Event(event) => payloads.extend(self.encoder.event(&event)),
            Output::Gateway(event) => payloads.extend(connector_blocks(
                &mut self.encoder,
                &event,
                self.tool_listing,
            )),
        }
        sse(&payloads, &self.problems)
    }

    fn end(&mut self) -> String {
        sse(&self.encoder.finish(), &self.problems)
    }

    fn error(&mut self, error: &ApiError) -> String {
        let mut text = String::new();
        push_sse_event(&mut text, "error", &error_body(error).to_string());
        text
    }

    fn keepalive(&mut self) -> Option<(Duration, String)> {
        Some((PING_EVERY, PING.to_owned()))
    }
}

/// The payloads as SSE text, `tool_call_errors` on `message_delta` when there are any.
fn sse(payloads: &[StreamPayload], problems: &[ToolCallProblem]) -> String {
    if problems.is_empty() {
        return SseEncoder::sse(payloads);
    }
    let mut text = String::new();
    for payload in payloads {
        if let StreamPayload::MessageDelta { .. } = payload {
            let mut data = serde_json::to_value(payload).unwrap_or(Value::Null);
            data["tool_call_errors"] = serde_json::to_value(problems).unwrap_or(Value::Null);
            push_sse_event(&mut text, payload.event_name(), &data.to_string());
        } else {
            text.push_str(&SseEncoder::sse(std::slice::from_ref(payload)));
        }
    }
    text
}

/// A call the gateway ran on an MCP server, as the MCP connector's blocks; Messages has no
/// place for the rest of what the gateway did (a character's own tools, its prompt).
fn connector_blocks(
    encoder: &mut SseEncoder,
    event: &GatewayEvent,
    tool_listing: bool,
) -> Vec<StreamPayload> {
    match event {
        GatewayEvent::ToolList(listing) if tool_listing => {
            let tools = listing
                .tools
                .iter()
                .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}))
                .collect();
            encoder.mcp_tool_listing(&listing.label, Value::Array(tools))
        }
        GatewayEvent::Tool {
            event: ToolEvent::ToolStarted { id, arguments, .. },
            source: Some(source),
        } => encoder.mcp_tool_use(id, &source.tool, &source.server, arguments),
        GatewayEvent::Tool {
            event:
                ToolEvent::ToolFinished {
                    id,
                    content,
                    is_error,
                    ..
                },
            source: Some(_),
        } => encoder.mcp_tool_result(id, content, *is_error),
        GatewayEvent::ToolSearch {
            id,
            name,
            arguments,
            found,
        } => encoder.tool_search(id, name, arguments, found.as_deref().map_err(|_| ())),
        _ => Vec::new(),
    }
}

/// The whole answer as one `message` body: the stream's events, folded as they come.
#[derive(Debug)]
pub struct WholeMessage {
    encoder: SseEncoder,
    tool_listing: bool,
    builder: MessageBuilder,
}

impl WholeMessage {
    pub fn new(presentation: &Presentation) -> Self {
        Self {
            encoder: presentation.encoder(),
            tool_listing: presentation.tool_listing,
            builder: MessageBuilder::new(),
        }
    }

    fn push(&mut self, output: &Output) {
        let payloads = match output {
            Output::Event(event) => self.encoder.event(event),
            Output::Gateway(event) => connector_blocks(&mut self.encoder, event, self.tool_listing),
            Output::CallProblems(_) => Vec::new(),
        };
        for payload in payloads {
            self.builder.push(&payload);
        }
    }

    fn finish(mut self, problems: &[ToolCallProblem]) -> Value {
        for payload in self.encoder.finish() {
            self.builder.push(&payload);
        }
        let mut body = serde_json::to_value(self.builder.finish()).unwrap_or(Value::Null);
        if !problems.is_empty() {
            body["tool_call_errors"] = serde_json::to_value(problems).unwrap_or(Value::Null);
        }
        body
    }
}

impl WholeBody for WholeMessage {
    fn take(&mut self, output: &Output) {
        self.push(output);
    }

    async fn respond(self, answer: Answer) -> Response {
        Json(self.finish(&answer.problems)).into_response()
    }
}

/// The status and Anthropic error type an error is answered with. A busy backend is
/// Anthropic's 529 `overloaded_error`, which clients retry, as they retry 429.
fn status_and_type(error: &ApiError) -> (StatusCode, &'static str) {
    if error.code.as_deref() == Some("backend_overloaded") {
        return (
            StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            "overloaded_error",
        );
    }
    let kind = match error.status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    };
    (error.status, kind)
}

/// `{"type": "error", "error": {"type", "message"}}`
pub fn error_body(error: &ApiError) -> Value {
    let (_, kind) = status_and_type(error);
    json!({"type": "error", "error": {"type": kind, "message": error.message}})
}

/// An error response in Anthropic's shape.
pub fn error_response(error: ApiError) -> Response {
    let (status, _) = status_and_type(&error);
    (status, Json(error_body(&error))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ping_is_anthropics_ping_event() {
        assert_eq!(PING, SseEncoder::sse(&[StreamPayload::Ping]));
    }

    #[test]
    fn statuses_get_anthropic_error_types() {
        let with_status = |status: u16| ApiError {
            status: StatusCode::from_u16(status).unwrap(),
            ..ApiError::invalid_request("x", None)
        };
        for (status, kind) in [
            (400, "invalid_request_error"),
            (401, "authentication_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
            (413, "request_too_large"),
            (429, "rate_limit_error"),
            (500, "api_error"),
            (502, "api_error"),
            (504, "api_error"),
        ] {
            assert_eq!(
                error_body(&with_status(status))["error"]["type"],
                kind,
                "{status}"
            );
        }
        let busy = ApiError::upstream(StatusCode::BAD_GATEWAY, "busy", "backend_overloaded");
        assert_eq!(error_response(busy).status().as_u16(), 529);
    }
}
