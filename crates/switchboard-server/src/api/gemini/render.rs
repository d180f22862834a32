//! An answer in Gemini's shapes: `GenerateContentResponse`s, one per SSE event
//! (`?alt=sse`) or as the elements of one JSON array streamed as it grows (Google's
//! default), or one whole `GenerateContentResponse`; errors as Google writes them,
//! `{"error": {"code", "message", "status", "details"}}`, also as the last element or
//! event of a stream that fails after its start.
//!
//! As Gemini streams: text as it comes, each function call whole in one part (its
//! arguments an object), the finish reason and `usageMetadata` on the last response.
//! One text part is held back each time, so that the last one carries the finish.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use switchboard_wire::{FinishReason, StreamEvent, Usage};

use crate::api::error::ApiError;
use crate::api::sse::{Renderer, WholeBody};
use switchboard_pipeline::{Answer, Output};

/// How an answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    /// `responseId`.
    pub id: String,
    /// `modelVersion`: the model name the client asked for.
    pub model: String,
    /// Whether the model's reasoning is shown, as `thought` parts.
    pub include_thoughts: bool,
    /// How a stream is framed.
    pub framing: Framing,
    /// The request's settings no backend here honours, named in [`DROPPED_FIELDS`].
    pub dropped_fields: Vec<String>,
}

/// Names the request's settings that no backend here honours.
pub const DROPPED_FIELDS: &str = "x-switchboard-dropped-fields";

/// Names `dropped` in [`DROPPED_FIELDS`], if any.
pub fn name_dropped(dropped: &[String], headers: &mut HeaderMap) {
    if !dropped.is_empty()
        && let Ok(value) = HeaderValue::from_str(&dropped.join(", "))
    {
        headers.insert(DROPPED_FIELDS, value);
    }
}

/// How a stream is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `?alt=sse`: `data: {…}` events.
    Sse,
    /// Google's default: one JSON array, an element per response.
    JsonArray,
}

/// Google's status name for an HTTP status.
pub fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 413 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        408 | 504 => "DEADLINE_EXCEEDED",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        502 | 503 => "UNAVAILABLE",
        400..=499 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// The error's body in Google's shape: the field at fault as a `BadRequest` detail, the
/// gateway's own code as an `ErrorInfo`.
pub fn error_body(error: &ApiError) -> Value {
    let mut details = Vec::new();
    if let Some(param) = &error.param {
        details.push(json!({"@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": param, "description": error.message}]}));
    }
    if let Some(code) = &error.code {
        details.push(json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": code, "domain": "switchboard"}));
    }
    json!({"error": {"code": error.status.as_u16(), "message": error.message,
        "status": status_name(error.status), "details": details}})
}

/// An error response in Google's shape.
pub fn error_response(error: ApiError) -> Response {
    (error.status, Json(error_body(&error))).into_response()
}

/// Gemini's name for why the answer ended; a call the model could not make right (the
/// finisher gave up on it) is `MALFORMED_FUNCTION_CALL`.
fn finish_reason(reason: &FinishReason, malformed: bool) -> &'static str {
    if malformed {
        return "MALFORMED_FUNCTION_CALL";
    }
    match reason {
        FinishReason::Stop | FinishReason::StopSequence(_) | FinishReason::ToolCalls => "STOP",
        FinishReason::Length | FinishReason::ToolLimit => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
        FinishReason::Other(_) => "OTHER",
    }
}

fn usage_metadata(usage: Usage) -> Value {
    json!({"promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": usage.completion_tokens,
        "totalTokenCount": usage.total_tokens})
}

/// A call as a `functionCall` part: its arguments an object (`{}` when the model's text
/// was not one).
fn call_part(id: &str, name: &str, arguments: &str) -> Value {
    let args = serde_json::from_str::<Map<String, Value>>(arguments).unwrap_or_default();
    json!({"functionCall": {"id": id, "name": name, "args": args}})
}

fn text_part(text: &str, thought: bool) -> Value {
    if thought {
        json!({"text": text, "thought": true})
    } else {
        json!({"text": text})
    }
}

/// One `GenerateContentResponse`: its parts, and on the last its finish and usage.
fn response(
    presentation: &Presentation,
    parts: Vec<Value>,
    finish: Option<&'static str>,
    usage: Option<Usage>,
) -> Value {
    let mut candidate = json!({"index": 0});
    if !parts.is_empty() {
        candidate["content"] = json!({"role": "model", "parts": parts});
    }
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    let mut body = json!({"candidates": [candidate], "modelVersion": presentation.model,
        "responseId": presentation.id});
    if let Some(usage) = usage {
        body["usageMetadata"] = usage_metadata(usage);
    }
    body
}

/// The whole answer as one `GenerateContentResponse`.
pub struct WholeResponse(pub Presentation);

impl WholeBody for WholeResponse {
    async fn respond(self, answer: Answer) -> Response {
        let mut response = Json(whole_body(&answer, &self.0)).into_response();
        name_dropped(&self.0.dropped_fields, response.headers_mut());
        response
    }
}

fn whole_body(answer: &Answer, presentation: &Presentation) -> Value {
    let response = &answer.response;
    let mut parts = Vec::new();
    if presentation.include_thoughts
        && let Some(reasoning) = response
            .reasoning_content
            .as_deref()
            .filter(|r| !r.is_empty())
    {
        parts.push(text_part(reasoning, true));
    }
    if let Some(text) = response.content.as_deref().filter(|text| !text.is_empty()) {
        parts.push(text_part(text, false));
    }
    for call in &response.tool_calls {
        parts.push(call_part(&call.id, &call.name, &call.arguments));
    }
    let malformed = !answer.problems.is_empty() && response.tool_calls.is_empty();
    let finish = finish_reason(&response.finish_reason, malformed);
    self::response(
        presentation,
        parts,
        Some(finish),
        Some(response.usage.unwrap_or_default()),
    )
}

/// Outputs as a stream of `GenerateContentResponse`s.
#[derive(Debug)]
pub struct ChunkRenderer {
    presentation: Presentation,
    /// Calls being assembled, by index: id, name, arguments so far.
    calls: Vec<(usize, String, String, String)>,
    /// The part rendered last, held so that the end can go with it.
    held: Option<Value>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Whether the finisher reported problems with the model's calls.
    problems: bool,
    /// Whether a call went out.
    called: bool,
    /// Responses written so far.
    written: usize,
}

impl ChunkRenderer {
    pub fn new(presentation: Presentation) -> Self {
        Self {
            presentation,
            calls: Vec::new(),
            held: None,
            finish: None,
            usage: None,
            problems: false,
            called: false,
            written: 0,
        }
    }

    /// One element or event of the stream.
    fn frame(&mut self, body: &Value) -> String {
        self.written += 1;
        match self.presentation.framing {
            Framing::Sse => format!("data: {body}\n\n"),
            Framing::JsonArray if self.written == 1 => format!("[{body}"),
            Framing::JsonArray => format!(",\r\n{body}"),
        }
    }

    /// Holds `part`, sending the one held before.
    fn hold(&mut self, part: Value) -> String {
        match self.held.replace(part) {
            None => String::new(),
            Some(previous) => {
                let body = response(&self.presentation, vec![previous], None, None);
                self.frame(&body)
            }
        }
    }

    fn close(&self) -> &'static str {
        match self.presentation.framing {
            Framing::Sse => "",
            Framing::JsonArray => "]",
        }
    }
}

impl Renderer for ChunkRenderer {
    fn headers(&self, headers: &mut HeaderMap) {
        name_dropped(&self.presentation.dropped_fields, headers);
    }

    fn content_type(&self) -> &'static str {
        match self.presentation.framing {
            Framing::Sse => "text/event-stream",
            Framing::JsonArray => "application/json; charset=UTF-8",
        }
    }

    fn output(&mut self, output: Output) -> String {
        let event = match output {
            Output::CallProblems(found) => {
                self.problems |= !found.is_empty();
                return String::new();
            }
            // The gateway's own tool runs are its business: the client sees the answer.
            Output::Gateway(_) => return String::new(),
            Output::Event(event) => event,
        };
        match event {
            StreamEvent::TextDelta(text) if !text.is_empty() => self.hold(text_part(&text, false)),
            StreamEvent::ReasoningDelta(text)
                if !text.is_empty() && self.presentation.include_thoughts =>
            {
                self.hold(text_part(&text, true))
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                self.calls.push((index, id, name, String::new()));
                String::new()
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                if let Some(call) = self.calls.iter_mut().find(|call| call.0 == index) {
                    call.3.push_str(&delta);
                }
                String::new()
            }
            StreamEvent::ToolCallEnd { index } => {
                let Some(at) = self.calls.iter().position(|call| call.0 == index) else {
                    return String::new();
                };
                let (_, id, name, arguments) = self.calls.remove(at);
                self.called = true;
                self.hold(call_part(&id, &name, &arguments))
            }
            StreamEvent::Usage(usage) => {
                self.usage = Some(usage);
                String::new()
            }
            StreamEvent::Finish(reason) => {
                self.finish = Some(reason);
                String::new()
            }
            _ => String::new(),
        }
    }

    fn end(&mut self) -> String {
        let malformed = self.problems && !self.called;
        let finish = finish_reason(
            self.finish.as_ref().unwrap_or(&FinishReason::Stop),
            malformed,
        );
        let parts = self.held.take().into_iter().collect();
        let body = response(
            &self.presentation,
            parts,
            Some(finish),
            Some(self.usage.unwrap_or_default()),
        );
        let mut text = self.frame(&body);
        text.push_str(self.close());
        text
    }

    fn error(&mut self, error: &ApiError) -> String {
        // What was held is sent: the client keeps what it was given.
        let mut text = match self.held.take() {
            Some(part) => {
                let body = response(&self.presentation, vec![part], None, None);
                self.frame(&body)
            }
            None => String::new(),
        };
        text.push_str(&self.frame(&error_body(error)));
        text.push_str(self.close());
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn presentation(framing: Framing) -> Presentation {
        Presentation {
            id: "r1".into(),
            model: "m".into(),
            include_thoughts: false,
            framing,
            dropped_fields: Vec::new(),
        }
    }

    fn streamed(framing: Framing, events: Vec<StreamEvent>) -> String {
        let mut renderer = ChunkRenderer::new(presentation(framing));
        let mut text: String = events
            .into_iter()
            .map(|event| renderer.output(Output::Event(event)))
            .collect();
        text.push_str(&renderer.end());
        text
    }

    fn events() -> Vec<StreamEvent> {
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
            StreamEvent::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "w".into(),
            },
            StreamEvent::ToolCallArguments {
                index: 0,
                delta: r#"{"c":"#.into(),
            },
            StreamEvent::ToolCallArguments {
                index: 0,
                delta: r#""P"}"#.into(),
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Usage(Usage::new(3, 4)),
            StreamEvent::Finish(FinishReason::ToolCalls),
        ]
    }

    #[test]
    fn a_json_array_stream_is_one_array_ending_with_the_finish() {
        let text = streamed(Framing::JsonArray, events());
        let array: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(array.len(), 3);
        assert_eq!(
            array[0]["candidates"][0]["content"]["parts"][0]["text"],
            "Hel"
        );
        let last = &array[2]["candidates"][0];
        assert_eq!(
            last["content"]["parts"][0]["functionCall"],
            json!({"id": "call_1", "name": "w", "args": {"c": "P"}})
        );
        assert_eq!(last["finishReason"], "STOP");
        assert_eq!(array[2]["usageMetadata"]["totalTokenCount"], 7);
    }

    #[test]
    fn sse_events_carry_one_response_each_and_an_error_ends_the_stream() {
        let text = streamed(Framing::Sse, events());
        assert_eq!(text.matches("data: ").count(), 3);
        let mut renderer = ChunkRenderer::new(presentation(Framing::JsonArray));
        let mut text = renderer.output(Output::Event(StreamEvent::TextDelta("a".into())));
        text.push_str(
            &renderer.error(&ApiError::request_timeout(std::time::Duration::from_secs(
                1,
            ))),
        );
        let array: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(array[1]["error"]["status"], "DEADLINE_EXCEEDED");
        assert_eq!(array[1]["error"]["code"], 504);
    }

    #[test]
    fn a_call_the_finisher_gave_up_on_is_a_malformed_function_call() {
        let mut renderer = ChunkRenderer::new(presentation(Framing::Sse));
        let problem = switchboard_pipeline::tool_checks::ToolCallProblem {
            index: 0,
            code: "invalid_arguments",
            message: "city: required".into(),
        };
        renderer.output(Output::CallProblems(vec![problem]));
        renderer.output(Output::Event(StreamEvent::Finish(FinishReason::Stop)));
        let text = renderer.end();
        assert!(
            text.contains(r#""finishReason":"MALFORMED_FUNCTION_CALL""#),
            "{text}"
        );
    }

    #[test]
    fn errors_take_googles_shape() {
        let body = error_body(&ApiError::invalid_request(
            "contents[0].role: bad",
            Some("contents[0].role".into()),
        ));
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(body["error"]["code"], 400);
        assert_eq!(
            body["error"]["details"][0]["fieldViolations"][0]["field"],
            "contents[0].role"
        );
    }
}
