//! Anthropic Messages (`POST /v1/messages`, and `/v1/messages/count_tokens`): what Claude
//! Code and the anthropic SDKs speak, on every route. The request is read once into the
//! front-end's own types (`request.rs`), checked, and becomes the pipeline's request through
//! the wire crate's one Anthropic translation, and the answer
//! is rendered as Messages events or one `message` body, errors in Anthropic's shape.
//! Anthropic's tool search tools run in the gateway, over the request's deferred tools
//! (`switchboard_pipeline::tool_search`); Anthropic's other server tools cannot run here:
//! they are left out and named in the `x-switchboard-dropped-tools` header (forcing one is
//! a 400).

mod blocks;
pub mod count_tokens;
mod render;
mod request;
mod tools;
mod validate;

use axum::Router;
use axum::body::Body;
use axum::extract::Extension;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use axum::routing::post;
use switchboard_tools::{Content, Message, ToolDefinition};
use switchboard_wire::anthropic::parse_request;
use switchboard_wire::ids::IdMap;
use switchboard_wire::mcp::McpServerRequest;
use switchboard_wire::{ChatRequest, ConvertError, Format, ToolChoice};

use super::body::{PathStyle, read_typed};
use super::front_end::RequestId;
use super::log::RequestLog;
use super::sse::{self, Delivery};
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
pub use render::error_response;
use render::{EventRenderer, Presentation, WholeMessage};
use switchboard_pipeline::ids::{CallIdShape, message_id};
use switchboard_pipeline::tool_search::{DEFAULT_MAX_RESULTS, SearchMode, ToolSearch};
use switchboard_pipeline::{GatewayRequest, GatewayTools, Started, Target, estimate_tokens};
use switchboard_wire::anthropic::tool_search::SearchKind;
use validate::{Endpoint, check_request};

/// Names the request's server tools, which were left out.
const DROPPED_TOOLS: &str = "x-switchboard-dropped-tools";

/// What Claude Code puts first in its system prompt: a version stamp that changes with
/// every release.
const BILLING_HEADER: &str = "x-anthropic-billing-header:";

/// Anthropic's Messages and its token count, in Anthropic's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new()
                .route("/v1/messages", post(handle))
                .route("/v1/messages/count_tokens", post(count_tokens::handle)),
        )
    },
    owns: |path| path == "/v1/messages" || path.starts_with("/v1/messages/"),
    error: error_response,
};

/// `POST /v1/messages`
pub async fn handle(
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let log = RequestLog::new(request_id.clone(), "messages").with_caller(&caller);
    // The newest MCP connector beta shows each server's tool listing as a block.
    let tool_listing = headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|beta| beta.trim() == LISTING_BETA);
    let response = match start(&caller, &log, body, tool_listing).await {
        Ok((started, delivery, dropped)) => {
            let response = sse::answer(started, delivery, FRONT_END.error, log).await;
            return with_headers(response, &request_id, &dropped);
        }
        Err(error) => log.fail("-", error, FRONT_END.error),
    };
    with_headers(response, &request_id, &[])
}

/// The request read, resolved, admitted and started, how its answer goes out, and the
/// server tools it named that were left out.
async fn start(
    caller: &Caller,
    log: &RequestLog,
    body: Body,
    tool_listing: bool,
) -> Result<(Started, Delivery<EventRenderer, WholeMessage>, Vec<String>), ApiError> {
    let parsed = parse(caller, body, Endpoint::Messages).await?;
    log.requested(&parsed.request.request.model);
    caller::reserve(caller, &parsed.request)?;
    let presentation = Presentation {
        id: message_id(),
        model: parsed.request.request.model.clone(),
        // Only a stream announces usage before the end.
        input_estimate: if parsed.stream {
            estimate_tokens(&parsed.request.request)
        } else {
            0
        },
        tool_listing,
    };
    // The stream's head announces the prompt's size: counted by the backend's tokenizer
    // while the backend works on the answer, so the head and the end agree.
    let count = if parsed.stream {
        caller.snapshot().pipeline.count_beside(&parsed.request)
    } else {
        None
    };
    let started = caller.snapshot().pipeline.start(parsed.request)?;
    let delivery = if parsed.stream {
        Delivery::Streamed(EventRenderer::new(&presentation, count))
    } else {
        Delivery::Whole(WholeMessage::new(&presentation))
    };
    Ok((started, delivery, parsed.dropped))
}

/// The request's id as `request-id` (where Anthropic's SDKs read it), and the server tools
/// left out.
fn with_headers(mut response: Response, request_id: &str, dropped: &[String]) -> Response {
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("request-id", value);
    }
    if !dropped.is_empty()
        && let Ok(value) = HeaderValue::from_str(&dropped.join(", "))
    {
        headers.insert(DROPPED_TOOLS, value);
    }
    response
}

/// The MCP connector beta whose answers carry `mcp_tool_listing` blocks.
const LISTING_BETA: &str = "mcp-client-2026-09-15";

/// A request ready for the pipeline.
#[derive(Debug)]
struct Parsed {
    request: GatewayRequest,
    stream: bool,
    /// Server tools left out.
    dropped: Vec<String>,
}

/// The request in the pipeline's model, prepared for the kind of backend that will answer.
async fn parse(caller: &Caller, body: Body, endpoint: Endpoint) -> Result<Parsed, ApiError> {
    let live = caller.snapshot();
    let body = read_typed(body, live.config.max_body_bytes, PathStyle::Dots).await?;
    let checked = check_request(body, endpoint)?;
    // The MCP connector, for the gateway to run.
    let mcp = McpServerRequest::from_anthropic(&checked.mcp_servers, &checked.toolsets)
        .map_err(convert_error)?;
    let target = caller::resolve(caller, &checked.request.model)?;
    let mut request = parse_request(checked.request, &IdMap::new()).map_err(convert_error)?;
    let forced = match &request.tool_choice {
        Some(ToolChoice::Function(name)) => Some(name.clone()),
        _ => None,
    };
    let deferred = |tool: &ToolDefinition| {
        let name = &tool.function.name;
        checked.deferred.contains(name) && forced.as_ref() != Some(name)
    };
    let search = checked.search.as_ref().map(|(name, kind)| {
        let mode = match kind {
            SearchKind::Regex => SearchMode::Regex,
            SearchKind::Bm25 => SearchMode::Bm25,
        };
        let hidden = request.tools.iter().filter(|tool| deferred(tool)).cloned();
        ToolSearch::new(name, mode, DEFAULT_MAX_RESULTS, hidden.collect())
    });
    if request.tools.iter().any(deferred) {
        request.tools = request
            .tools
            .iter()
            .filter(|tool| !deferred(tool))
            .cloned()
            .collect();
    }
    let anthropic_backend =
        matches!(&target, Target::Route(route) if route.format == Format::Anthropic);
    if !anthropic_backend {
        for_model_servers(&mut request);
    }
    // Counting tokens runs nothing, but counts the search tool the model would see.
    let gateway = match endpoint {
        Endpoint::Messages => caller::gateway_tools(caller, &target, &mcp, &request, None).await?,
        Endpoint::CountTokens => {
            if let Some(search) = &search {
                let mut tools = request.tools.to_vec();
                tools.push(search.definition());
                request.tools = tools.into();
            }
            None
        }
    };
    let gateway = match (search, &target, endpoint) {
        (Some(search), Target::Route(route), Endpoint::Messages) => {
            Some(GatewayTools::with_search(gateway, &route.tool_loop, search))
        }
        _ => gateway,
    };
    let stream = request.stream && endpoint == Endpoint::Messages;
    Ok(Parsed {
        request: GatewayRequest {
            target,
            request,
            tools: checked.tools,
            call_ids: CallIdShape::Anthropic,
            gateway,
            tool_filter: caller.tool_filter(),
        },
        stream,
        dropped: checked.dropped,
    })
}

fn convert_error(error: ConvertError) -> ApiError {
    match error {
        ConvertError::Invalid { path, message } => {
            ApiError::invalid_request(format!("{path}: {message}"), Some(path))
        }
        other => ApiError::invalid_request(other.to_string(), None),
    }
}

/// A Messages request's system prompt as model servers take it best: Claude Code's
/// per-release billing stamp left out (it would defeat the server's prompt cache), and the
/// system blocks as one system message (many chat templates accept only one, first).
fn for_model_servers(request: &mut ChatRequest) {
    request.messages.retain(|message| {
        !matches!(message, Message::System { content, .. } if content.text().starts_with(BILLING_HEADER))
    });
    let leading = request
        .messages
        .iter()
        .take_while(|message| matches!(message, Message::System { .. }))
        .count();
    if leading > 1 {
        let joined = request
            .messages
            .drain(..leading)
            .map(|message| match message {
                Message::System { content, .. } => content.text(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        request.messages.insert(
            0,
            Message::System {
                content: Content::Text(joined),
                name: None,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_servers_get_one_system_message_without_the_billing_stamp() {
        let mut request = ChatRequest::new(
            "m",
            vec![
                Message::system("x-anthropic-billing-header: cc_version=2.1.0;"),
                Message::system("You are Claude Code."),
                Message::system("Be brief."),
                Message::user("hi"),
                Message::system("# Environment"),
            ],
        );
        for_model_servers(&mut request);
        assert_eq!(
            request.messages,
            [
                Message::system("You are Claude Code.\n\nBe brief."),
                Message::user("hi"),
                Message::system("# Environment"),
            ]
        );
    }
}
