//! An answer's outputs as the client asked for them: SSE `chat.completion.chunk`s ending in
//! `data: [DONE]`, or one `chat.completion` body. Problems with the model's tool calls ride
//! on the choice as `tool_call_errors`.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::stream;
use serde_json::{Value, json};
use switchboard_wire::openai::{ChunkEncoder, DONE, completion};
use switchboard_wire::{Collector, StreamEvent};

use crate::error::ApiError;
use crate::finisher::Output;
use crate::pipeline::Outputs;
use crate::tool_checks::ToolCallProblem;

/// How the answer is presented.
#[derive(Debug, Clone)]
pub struct Presentation {
    pub id: String,
    /// The model name the client asked for.
    pub model: String,
    pub created: u64,
    pub include_usage: bool,
}

/// What a finished answer amounted to, for the request's log line and metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub tool_calls: usize,
}

/// Collects the whole answer into one `chat.completion` body.
pub async fn whole(
    mut outputs: Outputs,
    presentation: &Presentation,
) -> Result<(Value, Tally), ApiError> {
    let mut collector = Collector::new();
    let mut problems = Vec::new();
    while let Some(output) = outputs.recv().await {
        match output? {
            Output::Event(event) => collector.push(&event),
            Output::Problems(found) => problems.extend(found),
        }
    }
    let response = collector.finish().map_err(|error| {
        ApiError::upstream(
            StatusCode::BAD_GATEWAY,
            format!("the backend's answer is incomplete: {error}"),
            "backend_bad_answer",
        )
    })?;
    let usage = response.usage.unwrap_or_default();
    let tally = Tally {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        tool_calls: response.tool_calls.len(),
    };
    let mut body = serde_json::to_value(completion(
        &response,
        presentation.id.clone(),
        presentation.model.clone(),
        presentation.created,
    ))
    .unwrap_or(Value::Null);
    body["usage"] = json!({"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total_tokens});
    attach_problems(&mut body["choices"][0], &problems);
    Ok((body, tally))
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

/// Streams the answer as SSE. An error before anything was sent is an ordinary error
/// response with its status; after that it is an error event, and the stream closes
/// without `[DONE]`.
pub async fn streamed(
    mut outputs: Outputs,
    presentation: Presentation,
    on_done: impl FnOnce(Tally) + Send + 'static,
) -> Response {
    let first = match outputs.recv().await {
        Some(Err(error)) => return error.into_response(),
        first => first,
    };
    let state = Streaming {
        first,
        outputs,
        encoder: ChunkEncoder::new(presentation.id, presentation.model, presentation.created),
        include_usage: presentation.include_usage,
        problems: Vec::new(),
        tally: Tally::default(),
        on_done: Some(Box::new(on_done)),
        ended: false,
    };
    let body = stream::unfold(state, |mut state| async move {
        let bytes = state.next_bytes().await?;
        Some((Ok::<_, std::convert::Infallible>(bytes), state))
    });
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

struct Streaming {
    first: Option<Result<Output, ApiError>>,
    outputs: Outputs,
    encoder: ChunkEncoder,
    include_usage: bool,
    problems: Vec<ToolCallProblem>,
    tally: Tally,
    on_done: Option<Box<dyn FnOnce(Tally) + Send>>,
    ended: bool,
}

impl Streaming {
    /// The next piece of the body; `None` once the stream is over.
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            if self.ended {
                return None;
            }
            let output = match self.first.take() {
                Some(output) => Some(output),
                None => self.outputs.recv().await,
            };
            let text = match output {
                None => {
                    self.end();
                    DONE.to_owned()
                }
                Some(Err(error)) => {
                    self.end();
                    format!("data: {}\n\n", error.body())
                }
                Some(Ok(Output::Problems(found))) => {
                    self.problems.extend(found);
                    continue;
                }
                Some(Ok(Output::Event(event))) => match self.encode(&event) {
                    Some(text) => text,
                    None => continue,
                },
            };
            return Some(Bytes::from(text));
        }
    }

    fn encode(&mut self, event: &StreamEvent) -> Option<String> {
        match event {
            StreamEvent::Usage(usage) => {
                self.tally.prompt_tokens = usage.prompt_tokens;
                self.tally.completion_tokens = usage.completion_tokens;
                if !self.include_usage {
                    return None;
                }
            }
            StreamEvent::ToolCallStart { .. } => self.tally.tool_calls += 1,
            StreamEvent::Finish(_) if !self.problems.is_empty() => {
                let chunk = self.encoder.chunk(event)?;
                let mut chunk = serde_json::to_value(chunk).unwrap_or(Value::Null);
                attach_problems(&mut chunk["choices"][0], &self.problems);
                return Some(format!("data: {chunk}\n\n"));
            }
            _ => {}
        }
        self.encoder.sse(event)
    }

    fn end(&mut self) {
        self.ended = true;
        if let Some(on_done) = self.on_done.take() {
            on_done(self.tally);
        }
    }
}
