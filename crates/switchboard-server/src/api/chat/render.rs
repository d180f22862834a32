//! An answer in Chat Completions' shapes: SSE `chat.completion.chunk`s ending in
//! `data: [DONE]`, or one `chat.completion` body. Problems with the model's tool calls ride
//! on the choice as `tool_call_errors` (in a stream: on the chunk with the finish reason).
//! Tools the gateway ran for the model (a character's, an MCP server's) are not returned as
//! `tool_calls` (the client has nothing to do with them): the choice lists them as
//! `gateway_tool_calls` (in a stream: on the chunk with the finish reason). A client that
//! sends [`TOOL_EVENTS_HEADER`] (or its older name [`CHARACTER_EVENTS_HEADER`]) also gets
//! each event as it happens: a chunk with no choices and a `character_event` per event in a
//! stream, `character_events` on a whole answer. While the gateway runs tools a stream
//! sends an SSE comment each second it would otherwise be silent.

use std::time::Duration;

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_runtime::ToolEvent;
use switchboard_tools::truncate_message;
use switchboard_wire::StreamEvent;
use switchboard_wire::openai::{ChunkEncoder, DONE, WireUsage, completion};

use crate::api::error::ApiError;
use crate::api::sse::{Renderer, TOOL_KEEPALIVE, WholeBody};
use switchboard_pipeline::tool_checks::ToolCallProblem;
use switchboard_pipeline::{Answer, GatewayEvent, Output};

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    pub id: String,
    /// The model name the client asked for.
    pub model: String,
    pub created: u64,
    pub include_usage: bool,
    /// Whether the client asked for [`GatewayEvent`]s.
    pub gateway_events: bool,
    /// Whether the gateway may run tools while answering.
    pub gateway_tools: bool,
}

/// The request header (`true`) that asks for the gateway's tool events as they happen.
pub const TOOL_EVENTS_HEADER: &str = "x-switchboard-tool-events";
/// [`TOOL_EVENTS_HEADER`]'s first name, from when only characters ran tools.
pub const CHARACTER_EVENTS_HEADER: &str = "x-switchboard-character-events";

/// Characters of a result `gateway_tool_calls` shows: the model read it whole, the client
/// has nothing to do with it but show it.
const SHOWN_RESULT_CHARS: usize = 4096;

/// The calls the gateway ran, each once: its server (none for a character's own tool), the
/// name the model called, its arguments, and how it ended, with the start of its result.
fn gateway_tool_calls(events: &[GatewayEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|event| match event {
            GatewayEvent::Tool {
                event:
                    ToolEvent::ToolFinished {
                        id,
                        name,
                        content,
                        is_error,
                        ..
                    },
                source,
            } => {
                let arguments = events.iter().find_map(|event| match event {
                    GatewayEvent::Tool {
                        event:
                            ToolEvent::ToolStarted {
                                id: started,
                                arguments,
                                ..
                            },
                        ..
                    } if started == id => Some(arguments.as_str()),
                    _ => None,
                });
                Some(
                    json!({"id": id, "server": source.as_ref().map(|source| &source.server),
                    "name": source.as_ref().map_or(name, |source| &source.tool),
                    "arguments": arguments.unwrap_or_default(),
                    "outcome": if *is_error { "error" } else { "ok" },
                    "content": truncate_message(content.clone(), SHOWN_RESULT_CHARS)}),
                )
            }
            _ => None,
        })
        .collect()
}

/// The whole answer as one `chat.completion` body.
/// The whole answer as one `chat.completion` body.
pub struct CompletionBody(pub Presentation);

impl WholeBody for CompletionBody {
    async fn respond(self, answer: Answer) -> Response {
        Json(completion_body(&answer, &self.0)).into_response()
    }
}

fn completion_body(answer: &Answer, presentation: &Presentation) -> Value {
    let response = &answer.response;
    let usage = response.usage.unwrap_or_default();
    let mut body = serde_json::to_value(completion(
        response,
        presentation.id.clone(),
        presentation.model.clone(),
        presentation.created,
    ))
    .unwrap_or(Value::Null);
    body["usage"] = serde_json::to_value(WireUsage::from(&usage)).unwrap_or(Value::Null);
    attach_problems(&mut body["choices"][0], &answer.problems);
    attach_gateway_calls(&mut body["choices"][0], &answer.gateway_events);
    if presentation.gateway_events && !answer.gateway_events.is_empty() {
        body["character_events"] =
            serde_json::to_value(&answer.gateway_events).unwrap_or(Value::Null);
    }
    body
}

fn attach_problems(choice: &mut Value, problems: &[ToolCallProblem]) {
    if !problems.is_empty()
        && let Value::Object(choice) = choice
    {
        choice.insert(
            "tool_call_errors".into(),
            serde_json::to_value(problems).unwrap_or(Value::Null),
        );
    }
}

fn attach_gateway_calls(choice: &mut Value, events: &[GatewayEvent]) {
    let calls = gateway_tool_calls(events);
    if !calls.is_empty()
        && let Value::Object(choice) = choice
    {
        choice.insert("gateway_tool_calls".into(), Value::Array(calls));
    }
}

/// Outputs as `chat.completion.chunk` SSE events.
#[derive(Debug)]
pub struct ChunkRenderer {
    encoder: ChunkEncoder,
    include_usage: bool,
    problems: Vec<ToolCallProblem>,
    /// What the gateway did, for `gateway_tool_calls` on the last chunk.
    events: Vec<GatewayEvent>,
    /// Kept to frame character events; `None` when the client did not ask for them.
    gateway_events: Option<Presentation>,
    gateway_tools: bool,
}

impl ChunkRenderer {
    pub fn new(presentation: Presentation) -> Self {
        Self {
            encoder: ChunkEncoder::new(
                presentation.id.clone(),
                presentation.model.clone(),
                presentation.created,
            ),
            include_usage: presentation.include_usage,
            problems: Vec::new(),
            events: Vec::new(),
            gateway_tools: presentation.gateway_tools,
            gateway_events: presentation.gateway_events.then_some(presentation),
        }
    }

    fn character_event(&self, event: &GatewayEvent) -> String {
        let Some(presentation) = &self.gateway_events else {
            return String::new();
        };
        let chunk = json!({"id": presentation.id, "object": "chat.completion.chunk",
            "created": presentation.created, "model": presentation.model, "choices": [],
            "character_event": event});
        format!("data: {chunk}\n\n")
    }
}

impl Renderer for ChunkRenderer {
    fn output(&mut self, output: Output) -> String {
        let event = match output {
            Output::CallProblems(found) => {
                self.problems.extend(found);
                return String::new();
            }
            Output::Gateway(event) => {
                let text = self.character_event(&event);
                if matches!(event, GatewayEvent::Tool { .. }) {
                    self.events.push(event);
                }
                return text;
            }
            Output::Event(event) => event,
        };
        match &event {
            StreamEvent::Usage(_) if !self.include_usage => String::new(),
            StreamEvent::Finish(_) if !self.problems.is_empty() || !self.events.is_empty() => {
                let Some(chunk) = self.encoder.chunk(&event) else {
                    return String::new();
                };
                let mut chunk = serde_json::to_value(chunk).unwrap_or(Value::Null);
                attach_problems(&mut chunk["choices"][0], &self.problems);
                attach_gateway_calls(&mut chunk["choices"][0], &self.events);
                format!("data: {chunk}\n\n")
            }
            _ => self.encoder.sse(&event).unwrap_or_default(),
        }
    }

    fn end(&mut self) -> String {
        DONE.to_owned()
    }

    fn error(&mut self, error: &ApiError) -> String {
        format!("data: {}\n\n", error.body())
    }

    fn keepalive(&mut self) -> Option<(Duration, String)> {
        self.gateway_tools.then(|| {
            (
                TOOL_KEEPALIVE,
                ": the gateway is running tools\n\n".to_owned(),
            )
        })
    }
}
