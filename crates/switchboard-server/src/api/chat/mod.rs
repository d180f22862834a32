//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request is validated as
//! OpenAI validates it, becomes the pipeline's request, and the answer is rendered as
//! `chat.completion.chunk`s or one `chat.completion`, errors in OpenAI's shape.

mod render;
mod request;
mod validate;

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use switchboard_wire::mcp::McpServerRequest;

use super::body::PathStyle;
use super::path::{self, Api, Checked, Context, Head};
use super::sse::Delivery;
use crate::api::error::ApiError;
use render::{
    CHARACTER_EVENTS_HEADER, ChunkRenderer, CompletionBody, Presentation, TOOL_EVENTS_HEADER,
};
use request::ChatBody;
use switchboard_pipeline::GatewayRequest;
use switchboard_pipeline::ids::{CallIdShape, completion_id};
use validate::check_request;

/// Chat Completions, in OpenAI's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new().route("/v1/chat/completions", post(path::serve::<ChatCompletions>)),
        )
    },
    owns: |path| path == "/v1/chat/completions",
    error: IntoResponse::into_response,
};

/// `POST /v1/chat/completions` on the one front-end path.
pub struct ChatCompletions;

impl Api for ChatCompletions {
    type Body = ChatBody;
    type Presentation = Presentation;
    type Streamed = ChunkRenderer;
    type Whole = CompletionBody;

    const ENDPOINT: &'static str = "chat_completions";
    const PATH_STYLE: PathStyle = PathStyle::Brackets;

    fn error(error: ApiError) -> Response {
        error.into_response()
    }

    async fn check(
        mut body: ChatBody,
        context: &Context<'_>,
    ) -> Result<Checked<Presentation>, ApiError> {
        let gateway_events = [TOOL_EVENTS_HEADER, CHARACTER_EVENTS_HEADER]
            .iter()
            .filter_map(|name| context.headers.get(*name))
            .any(|value| value.as_bytes().eq_ignore_ascii_case(b"true"));
        let mcp = take_mcp_tools(&mut body.tools)?;
        let validate::Checked {
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
        Ok(Checked {
            mcp,
            ..Checked::new(request, tools, CallIdShape::OpenAi, presentation)
        })
    }

    fn with_gateway_tools(
        request: &mut GatewayRequest,
        presentation: &mut Presentation,
    ) -> Result<(), ApiError> {
        presentation.gateway_tools = request.gateway.is_some();
        Ok(())
    }

    fn delivery(
        presentation: Presentation,
        streamed: Option<Head>,
    ) -> Delivery<ChunkRenderer, CompletionBody> {
        match streamed {
            Some(_) => Delivery::Streamed(ChunkRenderer::new(presentation)),
            None => Delivery::Whole(CompletionBody(presentation)),
        }
    }
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
        match McpServerRequest::from_openai(tool, &path) {
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
