//! An answer in Chat Completions' shapes: SSE `chat.completion.chunk`s ending in
//! `data: [DONE]`, or one `chat.completion` body. Problems with the model's tool calls ride
//! on the choice as `tool_call_errors` (in a stream: on the chunk with the finish reason).
//! A client that sends [`CHARACTER_EVENTS_HEADER`] also gets what a character did besides
//! speaking: a chunk with no choices and a `character_event` per event in a stream,
//! `character_events` on a whole answer.

use serde_json::{Value, json};
use switchboard_wire::StreamEvent;
use switchboard_wire::openai::{ChunkEncoder, DONE, completion};

use crate::api::sse::Renderer;
use crate::error::ApiError;
use crate::pipeline::tool_checks::ToolCallProblem;
use crate::pipeline::{Answer, CharacterEvent, Output};

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    pub id: String,
    /// The model name the client asked for.
    pub model: String,
    pub created: u64,
    pub include_usage: bool,
    /// Whether the client asked for [`CharacterEvent`]s.
    pub character_events: bool,
}

/// The request header (`true`) that asks for a character's events.
pub const CHARACTER_EVENTS_HEADER: &str = "x-switchboard-character-events";

/// The whole answer as one `chat.completion` body.
pub fn completion_body(answer: &Answer, presentation: &Presentation) -> Value {
    let response = &answer.response;
    let usage = response.usage.unwrap_or_default();
    let mut body = serde_json::to_value(completion(
        response,
        presentation.id.clone(),
        presentation.model.clone(),
        presentation.created,
    ))
    .unwrap_or(Value::Null);
    body["usage"] = json!({"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total_tokens});
    attach_problems(&mut body["choices"][0], &answer.problems);
    if presentation.character_events && !answer.character_events.is_empty() {
        body["character_events"] =
            serde_json::to_value(&answer.character_events).unwrap_or(Value::Null);
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

/// Outputs as `chat.completion.chunk` SSE events.
#[derive(Debug)]
pub struct ChunkRenderer {
    encoder: ChunkEncoder,
    include_usage: bool,
    problems: Vec<ToolCallProblem>,
    /// Kept to frame character events; `None` when the client did not ask for them.
    character_events: Option<Presentation>,
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
            character_events: presentation.character_events.then_some(presentation),
        }
    }

    fn character_event(&self, event: &CharacterEvent) -> String {
        let Some(presentation) = &self.character_events else {
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
            Output::Problems(found) => {
                self.problems.extend(found);
                return String::new();
            }
            Output::Character(event) => return self.character_event(&event),
            Output::Event(event) => event,
        };
        match &event {
            StreamEvent::Usage(_) if !self.include_usage => String::new(),
            StreamEvent::Finish(_) if !self.problems.is_empty() => {
                let Some(chunk) = self.encoder.chunk(&event) else {
                    return String::new();
                };
                let mut chunk = serde_json::to_value(chunk).unwrap_or(Value::Null);
                attach_problems(&mut chunk["choices"][0], &self.problems);
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
}
