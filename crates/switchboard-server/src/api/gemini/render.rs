//! An answer in Gemini's shapes: `GenerateContentResponse`s, one per SSE event
//! (`?alt=sse`) or as the elements of one JSON array streamed as it grows (Google's
//! default), or one whole `GenerateContentResponse`; errors as Google writes them,
//! `{"error": {"code", "message", "status", "details"}}`, also as the last element or
//! event of a stream that fails after its start.
//!
//! As Gemini streams: text as it comes, each function call whole in one part (its
//! arguments an object), the finish reason and `usageMetadata` on the last response.
//! One text part is held back each time, so that the last one carries the finish.

use std::borrow::Cow;
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use switchboard_wire::{FinishReason, StreamEvent, Usage};

use crate::api::error::ApiError;
use crate::api::sse::{Renderer, TOOL_KEEPALIVE, WholeBody};
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
    /// Whether the gateway runs tools for the request: its stream then says it is alive
    /// while they run.
    pub gateway_tools: bool,
}

/// What a stream sends while the gateway's tools run: a blank line. Google's clients read
/// past it (the Python SDK skips blank lines, the JS SDK's `^\s*data: ` match takes it as
/// leading space) where a comment line would break them, and it is whitespace between the
/// values of the JSON array framing.
const KEEPALIVE: &str = "\n";

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

/// One `GenerateContentResponse`, serialised from borrowed parts: an answer's text is
/// written out, never copied into a JSON tree first.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentResponse<'a> {
    candidates: [Candidate<'a>; 1],
    model_version: &'a str,
    response_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageMetadata>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<ModelContent<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'static str>,
}

#[derive(Serialize)]
struct ModelContent<'a> {
    role: &'static str,
    parts: &'a [Part<'a>],
}

/// A part of the model's turn: text (its reasoning when `thought`), or a call.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        thought: bool,
    },
    Call {
        #[serde(rename = "functionCall")]
        function_call: CallPart<'a>,
    },
}

#[derive(Debug, Serialize)]
struct CallPart<'a> {
    id: Cow<'a, str>,
    name: Cow<'a, str>,
    args: Args<'a>,
}

/// A call's arguments as an object: the model's text as it is when it is one (checked
/// JSON, written out as it came rather than rebuilt), `{}` when it is not.
#[derive(Debug)]
enum Args<'a> {
    Borrowed(&'a RawValue),
    Owned(Box<RawValue>),
    Empty,
}

fn is_object(arguments: &str) -> bool {
    arguments.trim_start().starts_with('{')
}

impl Serialize for Args<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Args::Borrowed(raw) => raw.serialize(serializer),
            Args::Owned(raw) => raw.serialize(serializer),
            Args::Empty => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

/// Google counts the model's reasoning apart from its answer: `candidatesTokenCount`
/// leaves out `thoughtsTokenCount`, which is omitted when there were none.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    total_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    thoughts_token_count: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl From<Usage> for UsageMetadata {
    fn from(usage: Usage) -> Self {
        Self {
            prompt_token_count: usage.prompt_tokens,
            candidates_token_count: usage
                .completion_tokens
                .saturating_sub(usage.reasoning_tokens),
            total_token_count: usage.total_tokens,
            thoughts_token_count: usage.reasoning_tokens,
        }
    }
}

/// A call as a `functionCall` part.
fn call_part<'a>(
    id: impl Into<Cow<'a, str>>,
    name: impl Into<Cow<'a, str>>,
    args: Args<'a>,
) -> Part<'a> {
    Part::Call {
        function_call: CallPart {
            id: id.into(),
            name: name.into(),
            args,
        },
    }
}

impl<'a> Args<'a> {
    /// A whole answer's arguments, borrowed where they are an object.
    fn borrowed(arguments: &'a str) -> Self {
        match serde_json::from_str::<&RawValue>(arguments) {
            Ok(raw) if is_object(arguments) => Args::Borrowed(raw),
            _ => Args::Empty,
        }
    }
}

impl Args<'static> {
    /// A streamed call's arguments, assembled, kept where they are an object.
    fn owned(arguments: String) -> Self {
        match is_object(&arguments).then(|| RawValue::from_string(arguments)) {
            Some(Ok(raw)) => Args::Owned(raw),
            _ => Args::Empty,
        }
    }
}

fn text_part<'a>(text: impl Into<Cow<'a, str>>, thought: bool) -> Part<'a> {
    Part::Text {
        text: text.into(),
        thought,
    }
}

/// One `GenerateContentResponse`: its parts, and on the last its finish and usage.
fn response<'a>(
    presentation: &'a Presentation,
    parts: &'a [Part<'a>],
    finish: Option<&'static str>,
    usage: Option<Usage>,
) -> GenerateContentResponse<'a> {
    GenerateContentResponse {
        candidates: [Candidate {
            index: 0,
            content: (!parts.is_empty()).then_some(ModelContent {
                role: "model",
                parts,
            }),
            finish_reason: finish,
        }],
        model_version: &presentation.model,
        response_id: &presentation.id,
        usage_metadata: usage.map(UsageMetadata::from),
    }
}

/// The whole answer as one `GenerateContentResponse`.
pub struct WholeResponse(pub Presentation);

impl WholeBody for WholeResponse {
    async fn respond(self, answer: Answer) -> Response {
        let response = &answer.response;
        let mut parts = Vec::with_capacity(2 + response.tool_calls.len());
        if self.0.include_thoughts
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
            parts.push(call_part(
                call.id.as_str(),
                call.name.as_str(),
                Args::borrowed(&call.arguments),
            ));
        }
        let malformed = !answer.problems.is_empty() && response.tool_calls.is_empty();
        let finish = finish_reason(&response.finish_reason, malformed);
        let body = self::response(
            &self.0,
            &parts,
            Some(finish),
            Some(response.usage.unwrap_or_default()),
        );
        let mut response = Json(body).into_response();
        name_dropped(&self.0.dropped_fields, response.headers_mut());
        response
    }
}

/// Outputs as a stream of `GenerateContentResponse`s.
#[derive(Debug)]
pub struct ChunkRenderer {
    presentation: Presentation,
    frames: Frames,
    /// Calls being assembled, by index: id, name, arguments so far.
    calls: Vec<(usize, String, String, String)>,
    /// The part rendered last, held so that the end can go with it.
    held: Option<Part<'static>>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Whether the finisher reported problems with the model's calls.
    problems: bool,
    /// Whether a call went out.
    called: bool,
}

/// How a stream's responses are framed, and how many went out.
#[derive(Debug)]
struct Frames {
    framing: Framing,
    written: usize,
}

impl Frames {
    /// One element or event of the stream: a response, or an error.
    fn frame(&mut self, body: &impl Serialize) -> String {
        self.written += 1;
        let (before, after) = match self.framing {
            Framing::Sse => ("data: ", "\n\n"),
            Framing::JsonArray if self.written == 1 => ("[", ""),
            Framing::JsonArray => (",\r\n", ""),
        };
        let mut text = before.as_bytes().to_vec();
        // Our own types and JSON values always serialise.
        if serde_json::to_writer(&mut text, body).is_err() {
            text.truncate(before.len());
            text.extend_from_slice(b"{}");
        }
        text.extend_from_slice(after.as_bytes());
        // serde_json writes UTF-8.
        String::from_utf8(text).unwrap_or_default()
    }

    fn close(&self) -> &'static str {
        match self.framing {
            Framing::Sse => "",
            Framing::JsonArray => "]",
        }
    }
}

impl ChunkRenderer {
    pub fn new(presentation: Presentation) -> Self {
        Self {
            frames: Frames {
                framing: presentation.framing,
                written: 0,
            },
            presentation,
            calls: Vec::new(),
            held: None,
            finish: None,
            usage: None,
            problems: false,
            called: false,
        }
    }

    /// Holds `part`, sending the one held before.
    fn hold(&mut self, part: Part<'static>) -> String {
        match self.held.replace(part) {
            None => String::new(),
            Some(previous) => self.frames.frame(&response(
                &self.presentation,
                std::slice::from_ref(&previous),
                None,
                None,
            )),
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
            StreamEvent::TextDelta(text) if !text.is_empty() => self.hold(text_part(text, false)),
            StreamEvent::ReasoningDelta(text)
                if !text.is_empty() && self.presentation.include_thoughts =>
            {
                self.hold(text_part(text, true))
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
                self.hold(call_part(id, name, Args::owned(arguments)))
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
        let held = self.held.take();
        let mut text = self.frames.frame(&response(
            &self.presentation,
            held.as_slice(),
            Some(finish),
            Some(self.usage.unwrap_or_default()),
        ));
        text.push_str(self.frames.close());
        text
    }

    fn error(&mut self, error: &ApiError) -> String {
        // What was held is sent: the client keeps what it was given.
        let mut text = match self.held.take() {
            Some(part) => self.frames.frame(&response(
                &self.presentation,
                std::slice::from_ref(&part),
                None,
                None,
            )),
            None => String::new(),
        };
        text.push_str(&self.frames.frame(&error_body(error)));
        text.push_str(self.frames.close());
        text
    }

    fn keepalive(&mut self) -> Option<(Duration, String)> {
        self.presentation
            .gateway_tools
            .then(|| (TOOL_KEEPALIVE, KEEPALIVE.to_owned()))
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
            gateway_tools: false,
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
    fn only_a_stream_whose_gateway_runs_tools_keeps_alive_with_a_blank_line() {
        for framing in [Framing::Sse, Framing::JsonArray] {
            let mut quiet = ChunkRenderer::new(presentation(framing));
            assert_eq!(quiet.keepalive(), None);
            let mut running = ChunkRenderer::new(Presentation {
                gateway_tools: true,
                ..presentation(framing)
            });
            assert_eq!(running.keepalive(), Some((TOOL_KEEPALIVE, "\n".to_owned())));
        }
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
