//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request is validated as
//! OpenAI validates it, becomes the pipeline's request, and the answer is rendered as
//! `chat.completion.chunk`s or one `chat.completion`, errors in OpenAI's shape.

mod render;
pub(crate) mod validate;

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::Extension;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use switchboard_tools::Toolset;
use switchboard_wire::ChatRequest;
use switchboard_wire::openai::{ChatCompletionRequest, parse_request};

use super::RequestId;
use super::body::read_json;
use super::log::{RequestLog, Tally};
use super::sse;
use crate::api::caller::{self, Caller};
use crate::error::ApiError;
use crate::ids::{CallIdShape, completion_id};
use crate::pipeline::{GatewayRequest, collect};
use crate::state::Snapshot;
use render::{CHARACTER_EVENTS_HEADER, ChunkRenderer, Presentation, completion_body};
use validate::check_request;

/// Chat Completions, in OpenAI's error shape.
pub const FRONT_END: super::FrontEnd = super::FrontEnd {
    routes: |_| super::traced(Router::new().route("/v1/chat/completions", post(handle))),
    owns: |path| path == "/v1/chat/completions",
    error: IntoResponse::into_response,
};

/// `POST /v1/chat/completions`
pub async fn handle(
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let log = RequestLog::new(request_id, "chat_completions").with_caller(&caller);
    let character_events = headers
        .get(CHARACTER_EVENTS_HEADER)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"true"));
    let live = caller.snapshot();
    let (request, tools, presentation, stream) = match parse(live, body, character_events).await {
        Ok(parsed) => parsed,
        Err(error) => return log.fail("-", error, FRONT_END.error),
    };
    log.requested(&request.model);
    let request = match caller::resolve(&caller, &request.model) {
        Ok(target) => GatewayRequest {
            target,
            request,
            tools,
            call_ids: CallIdShape::OpenAi,
        },
        Err(error) => return log.fail("-", error, FRONT_END.error),
    };
    if let Err(error) = caller::reserve(&caller, &request) {
        return log.fail("-", error, FRONT_END.error);
    }
    let started = match live.pipeline.start(request) {
        Ok(started) => started,
        Err(error) => return log.fail("-", error, FRONT_END.error),
    };
    if stream {
        let renderer = ChunkRenderer::new(presentation);
        return sse::stream(started, renderer, IntoResponse::into_response, log).await;
    }
    log.answering(&started, false);
    let mut response = match collect(started.outputs).await {
        Ok(answer) => {
            log.finish(
                &started.label,
                axum::http::StatusCode::OK,
                Tally::of(&answer),
                false,
            );
            Json(completion_body(&answer, &presentation)).into_response()
        }
        Err(error) => log.fail(&started.label, error, FRONT_END.error),
    };
    super::upstream_headers(&mut response, &started.trail);
    response
}

/// The request in the pipeline's model with its tools compiled, how to present the answer,
/// and whether to stream it.
async fn parse(
    live: &Snapshot,
    body: Body,
    character_events: bool,
) -> Result<(ChatRequest, Toolset, Presentation, bool), ApiError> {
    let value = read_json(body, live.config.max_body_bytes).await?;
    let checked = check_request(&value)?;
    let wire: ChatCompletionRequest = serde_json::from_value(value).map_err(|error| {
        ApiError::invalid_request(
            format!("the request does not match the chat completions format: {error}"),
            None,
        )
    })?;
    let request =
        parse_request(wire).map_err(|error| ApiError::invalid_request(error.to_string(), None))?;
    let presentation = Presentation {
        id: completion_id(),
        model: checked.model.clone(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs()),
        include_usage: checked.include_usage,
        character_events,
    };
    Ok((request, checked.tools, presentation, checked.stream))
}
