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
mod count_tokens;
mod render;
mod request;
mod tools;
mod validate;

use axum::Router;
use axum::http::HeaderValue;
use axum::response::Response;
use axum::routing::post;
use switchboard_tools::{Content, Message, ToolDefinition};
use switchboard_wire::{ChatRequest, Format, ToolChoice};

use super::body::PathStyle;
use super::path::{self, Api, Checked, Context, Head};
use super::sse::Delivery;
use crate::api::error::ApiError;
pub use render::error_response;
use render::{EventRenderer, Presentation, WholeMessage};
use request::MessagesBody;
use switchboard_pipeline::Target;
use switchboard_pipeline::ids::{CallIdShape, message_id};
use switchboard_pipeline::tool_search::{DEFAULT_MAX_RESULTS, SearchMode, ToolSearch};
use switchboard_wire::anthropic::tool_search::SearchKind;
use validate::{Endpoint, check_request};

/// What Claude Code puts first in its system prompt: a version stamp that changes with
/// every release.
const BILLING_HEADER: &str = "x-anthropic-billing-header:";

/// Anthropic's Messages and its token count, in Anthropic's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new()
                .route("/v1/messages", post(path::serve::<Messages>))
                .route("/v1/messages/count_tokens", post(path::count::<Messages>)),
        )
    },
    owns: |path| path == "/v1/messages" || path.starts_with("/v1/messages/"),
    error: error_response,
};

/// `POST /v1/messages` (and its token count) on the one front-end path.
pub struct Messages;

impl Api for Messages {
    type Body = MessagesBody;
    type Presentation = Presentation;
    type Streamed = EventRenderer;
    type Whole = WholeMessage;

    const ENDPOINT: &'static str = "messages";
    const PATH_STYLE: PathStyle = PathStyle::Dots;
    // The stream's head announces the prompt's size: counted by the backend's tokenizer
    // while the backend works on the answer, so the head and the end agree.
    const HEAD_COUNT: bool = true;

    fn error(error: ApiError) -> Response {
        error_response(error)
    }

    async fn check(
        body: MessagesBody,
        context: &Context<'_>,
    ) -> Result<Checked<Presentation>, ApiError> {
        let endpoint = if context.uri.path().ends_with("/count_tokens") {
            Endpoint::CountTokens
        } else {
            Endpoint::Messages
        };
        // The newest MCP connector beta shows each server's tool listing as a block.
        let tool_listing = context
            .headers
            .get_all("anthropic-beta")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .any(|beta| beta.trim() == LISTING_BETA);
        let checked = check_request(body, endpoint)?;
        let mut request = checked.request;
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
            // Fixed, as Anthropic's.
            ToolSearch::new(name, mode, Some(DEFAULT_MAX_RESULTS), hidden.collect())
        });
        if request.tools.iter().any(deferred) {
            request.tools = request
                .tools
                .iter()
                .filter(|tool| !deferred(tool))
                .cloned()
                .collect();
        }
        let presentation = Presentation {
            id: message_id(),
            model: request.model.clone(),
            input_estimate: 0,
            tool_listing,
        };
        let stream = request.stream && endpoint == Endpoint::Messages;
        Ok(Checked {
            mcp: checked.mcp,
            search,
            stream,
            dropped: checked.dropped,
            ..Checked::new(request, checked.tools, CallIdShape::Anthropic, presentation)
        })
    }

    fn fit(
        request: &mut ChatRequest,
        target: &Target,
        _presentation: &mut Presentation,
    ) -> Result<(), ApiError> {
        let anthropic_backend =
            matches!(target, Target::Route(route) if route.format == Format::Anthropic);
        if !anthropic_backend {
            for_model_servers(request);
        }
        Ok(())
    }

    fn delivery(
        mut presentation: Presentation,
        streamed: Option<Head>,
    ) -> Delivery<EventRenderer, WholeMessage> {
        match streamed {
            Some(head) => {
                // Only a stream announces usage before the end.
                presentation.input_estimate = head.estimate;
                Delivery::Streamed(EventRenderer::new(&presentation, head.count))
            }
            None => Delivery::Whole(WholeMessage::new(&presentation)),
        }
    }

    /// The request's id as `request-id`, where Anthropic's SDKs read it.
    fn decorate(response: &mut Response, request_id: &str) {
        if let Ok(value) = HeaderValue::from_str(request_id) {
            response.headers_mut().insert("request-id", value);
        }
    }
}

/// The MCP connector beta whose answers carry `mcp_tool_listing` blocks.
const LISTING_BETA: &str = "mcp-client-2026-09-15";

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
