//! An answer in Chat Completions' shapes: SSE `chat.completion.chunk`s ending in
//! `data: [DONE]`, or one `chat.completion` body. Problems with the model's tool calls ride
//! on the choice as `tool_call_errors` (in a stream: on the chunk with the finish reason).

use serde_json::{Value, json};
use switchboard_wire::StreamEvent;
use switchboard_wire::openai::{ChunkEncoder, DONE, completion};

use crate::api::sse::Renderer;
use crate::error::ApiError;
use crate::pipeline::tool_checks::ToolCallProblem;
use crate::pipeline::{Answer, Output};

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    pub id: String,
    /// The model name the client asked for.
    pub model: String,
    pub created: u64,
    pub include_usage: bool,
}

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
}

impl ChunkRenderer {
    pub fn new(presentation: Presentation) -> Self {
        Self {
            encoder: ChunkEncoder::new(presentation.id, presentation.model, presentation.created),
            include_usage: presentation.include_usage,
            problems: Vec::new(),
        }
    }
}

impl Renderer for ChunkRenderer {
    fn output(&mut self, output: Output) -> String {
        let event = match output {
            Output::Problems(found) => {
                self.problems.extend(found);
                return String::new();
            }
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
