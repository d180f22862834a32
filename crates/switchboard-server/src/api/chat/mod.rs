//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request is validated as
//! OpenAI validates it, becomes the pipeline's request, and the answer is rendered as
//! `chat.completion.chunk`s or one `chat.completion`, errors in OpenAI's shape.

mod render;
mod request;
mod validate;

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::Extension;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use switchboard_tools::Toolset;
use switchboard_wire::ChatRequest;
use switchboard_wire::mcp::McpServerRequest;
use switchboard_wire::path::typed;

use super::body::{PathStyle, read_typed};
use super::front_end::RequestId;
use super::log::RequestLog;
use super::sse::{self, Delivery};
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::Snapshot;
use render::{
    CHARACTER_EVENTS_HEADER, ChunkRenderer, CompletionBody, Presentation, TOOL_EVENTS_HEADER,
};
use request::ChatBody;
use switchboard_pipeline::ids::{CallIdShape, completion_id};
use switchboard_pipeline::{GatewayRequest, Started};
use validate::{Checked, check_request};

/// Chat Completions, in OpenAI's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| super::front_end::traced(Router::new().route("/v1/chat/completions", post(handle))),
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
    let gateway_events = [TOOL_EVENTS_HEADER, CHARACTER_EVENTS_HEADER]
        .iter()
        .filter_map(|name| headers.get(*name))
        .any(|value| value.as_bytes().eq_ignore_ascii_case(b"true"));
    match start(&caller, &log, body, gateway_events).await {
        Ok((started, delivery)) => sse::answer(started, delivery, FRONT_END.error, log).await,
        Err(error) => log.fail("-", error, FRONT_END.error),
    }
}

/// The request read, resolved, admitted and started, and how its answer goes out.
async fn start(
    caller: &Caller,
    log: &RequestLog,
    body: Body,
    gateway_events: bool,
) -> Result<(Started, Delivery<ChunkRenderer, CompletionBody>), ApiError> {
    let snapshot = caller.snapshot();
    let Parsed {
        request,
        tools,
        mut presentation,
        stream,
        mcp,
    } = parse(snapshot, body, gateway_events).await?;
    log.requested(&request.model);
    let request = gateway_request(caller, request, tools, &mcp).await?;
    presentation.gateway_tools = request.gateway.is_some();
    caller::reserve(caller, &request)?;
    let started = snapshot.pipeline.start(request)?;
    let delivery = if stream {
        Delivery::Streamed(ChunkRenderer::new(presentation))
    } else {
        Delivery::Whole(CompletionBody(presentation))
    };
    Ok((started, delivery))
}

/// The request in the pipeline's model with its tools compiled, how to present the answer,
/// whether to stream it, and the MCP servers it names for the gateway to run.
struct Parsed {
    request: ChatRequest,
    tools: Toolset,
    presentation: Presentation,
    stream: bool,
    mcp: Vec<McpServerRequest>,
}

/// The request resolved: its route or character, and the tools the gateway runs for it.
async fn gateway_request(
    caller: &Caller,
    request: ChatRequest,
    tools: Toolset,
    mcp: &[McpServerRequest],
) -> Result<GatewayRequest, ApiError> {
    let target = caller::resolve(caller, &request.model)?;
    let gateway = caller::gateway_tools(caller, &target, mcp, &request, None).await?;
    Ok(GatewayRequest {
        target,
        request,
        tools,
        call_ids: CallIdShape::OpenAi,
        gateway,
        tool_filter: caller.tool_filter(),
    })
}

/// Takes the `{"type": "mcp"}` entries out of `tools`: servers for the gateway to run, not
/// functions for the model.
fn take_mcp_tools(tools: &mut Option<Value>) -> Result<Vec<McpServerRequest>, ApiError> {
    let Some(Value::Array(list)) = tools else {
        return Ok(Vec::new());
    };
    let mut servers = Vec::new();
    let mut index = 0;
    let mut failed = None;
    list.retain(|tool| {
        let path = format!("tools[{index}]");
        index += 1;
        if tool.get("type").and_then(Value::as_str) != Some("mcp") {
            return true;
        }
        let read = typed(tool.clone(), &path, PathStyle::Brackets);
        match read.and_then(|tool| McpServerRequest::from_openai(tool, &path)) {
            Ok(server) => servers.push(server),
            Err(error) => {
                failed.get_or_insert(error);
            }
        }
        false
    });
    if list.is_empty() {
        *tools = None;
    }
    match failed {
        Some(error) => Err(ApiError::invalid_request(error.to_string(), None)),
        None => Ok(servers),
    }
}

async fn parse(snapshot: &Snapshot, body: Body, gateway_events: bool) -> Result<Parsed, ApiError> {
    let mut body: ChatBody =
        read_typed(body, snapshot.config.max_body_bytes, PathStyle::Brackets).await?;
    let mcp = take_mcp_tools(&mut body.tools)?;
    let Checked {
        request,
        include_usage,
        tools,
    } = check_request(body)?;
    let presentation = Presentation {
        id: completion_id(),
        model: request.model.clone(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs()),
        include_usage,
        gateway_events,
        gateway_tools: false,
    };
    Ok(Parsed {
        stream: request.stream,
        request,
        tools,
        presentation,
        mcp,
    })
}
