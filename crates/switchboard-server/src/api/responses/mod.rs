//! OpenAI's Responses API (`POST /v1/responses`, and `GET`/`DELETE /v1/responses/{id}` for
//! stored responses): the request, with the stored conversation it continues, becomes the
//! pipeline's request (its tools plain functions; its `mcp` tools servers the gateway runs
//! itself, with OpenAI's approval round trip; other hosted tools left out and named in the
//! `x-switchboard-dropped-tools` header; the hosted `tool_search` a search the gateway runs
//! over the tools marked `defer_loading`); the answer is rendered as Responses events or one
//! response object, calls mapped back to the kinds of tool the client offered.

mod render;
mod request;
mod validate;

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use switchboard_tools::{ToolDefinition, Toolset};
use switchboard_wire::ToolChoice;
use switchboard_wire::anthropic::tool_search::SearchKind;
use switchboard_wire::responses::{
    CallKind, Converted, EchoedTools, Encoder, Input, Item, Loadable, McpChoice, OfferedTools,
    Response as ResponseObject, ResponsesRequest, Status, parse_input, to_chat,
};

use super::body::PathStyle;
use super::path::{self, Api, Checked, Context, Head};
use super::sse::Delivery;
use crate::api::caller::Caller;
use crate::api::error::ApiError;
use crate::state::AppState;
use crate::store::{self, Conversation, StoredResponse};
use render::{Keep, ResponseRenderer};
use request::ResponsesBody;
use switchboard_pipeline::ids::{CallIdShape, response_id};
use switchboard_pipeline::tool_search::{SearchMode, ToolSearch};
use switchboard_pipeline::{ApprovalAnswer, GatewayRequest, compile_converted};
use validate::check_request;

/// On a whole answer that asked to be stored and could not be (the store failed after the
/// backend answered, or the response is larger than the store holds): why, as an error code,
/// beside `store: false` in the response.
pub const NOT_STORED_HEADER: &str = "x-switchboard-not-stored";

/// How to present and keep a request's answer, and what it answers of earlier ones.
pub struct Presentation {
    skeleton: ResponseObject,
    kinds: HashMap<String, CallKind>,
    keep: Option<Keep>,
    /// The approval requests this request answers: the calls that run for them say so.
    approval_ids: HashSet<String>,
    /// The answers themselves, for the gateway's tools to act on.
    approvals: Vec<ApprovalAnswer>,
    /// Servers whose listing the conversation already shows.
    listed: HashSet<String>,
    /// The MCP tool `tool_choice` forces, by its server's label and its name.
    forced: Option<(String, String)>,
    /// What a hosted search's output shows of each deferred tool, by the name the model
    /// calls it.
    loadable: HashMap<String, Loadable>,
    /// Labels of the MCP servers whose tools wait for the hosted search.
    deferred_servers: Vec<String>,
    /// Tools of those servers that the conversation's searches loaded: (label, tool).
    loaded_mcp: Vec<(String, String)>,
}

/// The name the model calls the hosted tool search by.
const SEARCH_NAME: &str = "tool_search";

/// OpenAI's Responses and its stored responses.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new().route("/v1/responses", post(path::serve::<Responses>)),
        )
        .route("/v1/responses/{id}", get(retrieve).delete(delete))
        .route("/v1/responses/{id}/input_items", get(input_items))
    },
    owns: |path| path == "/v1/responses" || path.starts_with("/v1/responses/"),
    error: IntoResponse::into_response,
};

/// `GET /v1/responses/{id}`
pub async fn retrieve(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    match stored(&state, &caller, &id).await {
        Ok(stored) => Json(&stored.response).into_response(),
        Err(error) => error.into_response(),
    }
}

/// `GET /v1/responses/{id}/input_items`: the conversation the response answered.
pub async fn input_items(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    match stored(&state, &caller, &id).await {
        Ok(stored) => {
            let data = &stored.input;
            let first = data.first().and_then(item_id);
            let last = data.last().and_then(item_id);
            Json(json!({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": false}))
                .into_response()
        }
        Err(error) => error.into_response(),
    }
}

/// `DELETE /v1/responses/{id}`
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    if let Err(error) = stored(&state, &caller, &id).await {
        return error.into_response();
    }
    match state.responses.delete(&id).await {
        Ok(true) => Json(json!({"id": id, "object": "response", "deleted": true})).into_response(),
        Ok(false) => not_found(&id).into_response(),
        Err(error) => store_error(error).into_response(),
    }
}

/// The stored response with this id, when the caller made it: another key's responses are
/// answered as unknown, so that ids reveal nothing across keys.
async fn stored(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<std::sync::Arc<StoredResponse>, ApiError> {
    state
        .responses
        .get(id)
        .await
        .map_err(store_error)?
        .filter(|stored| stored.belongs_to(caller.name()))
        .ok_or_else(|| not_found(id))
}

fn item_id(item: &Item) -> Option<Value> {
    serde_json::to_value(item).ok()?.get("id").cloned()
}

fn not_found(id: &str) -> ApiError {
    let error = ApiError::invalid_request(
        format!("no stored response has the id \"{id}\" (unknown, expired, deleted, or made with store: false)"),
        Some("response_id".into()),
    )
    .with_code("not_found");
    ApiError {
        status: StatusCode::NOT_FOUND,
        ..error
    }
}

fn store_error(error: store::StoreError) -> ApiError {
    ApiError::upstream(
        StatusCode::SERVICE_UNAVAILABLE,
        error.to_string(),
        store::STORE_UNAVAILABLE,
    )
}

/// `POST /v1/responses` on the one front-end path.
pub struct Responses;

impl Api for Responses {
    type Body = ResponsesBody;
    type Presentation = Presentation;
    type Streamed = ResponseRenderer;
    type Whole = ResponseRenderer;

    const ENDPOINT: &'static str = "responses";
    const PATH_STYLE: PathStyle = PathStyle::Brackets;

    fn error(error: ApiError) -> Response {
        error.into_response()
    }

    async fn check(
        body: ResponsesBody,
        context: &Context<'_>,
    ) -> Result<Checked<Presentation>, ApiError> {
        let (state, caller) = (context.state, context.caller);
        let mut request = check_request(body)?;
        // The conversion takes the items, moved into their types, beside the request.
        let items = std::mem::replace(&mut request.input, Input::Items(Vec::new()));
        let input = parse_input(items).map_err(ApiError::from)?;
        let history = match &request.previous_response_id {
            None => Conversation::default(),
            Some(id) => {
                let limit = caller.snapshot().config.max_body_bytes;
                let previous = state
                    .responses
                    .get(id)
                    .await
                    .map_err(store_error)?
                    .filter(|stored| stored.belongs_to(caller.name()))
                    .ok_or_else(|| {
                        ApiError::invalid_request(
                            format!("previous_response_id: \"{id}\" is not stored here (unknown, expired or evicted, or made with store: false)"),
                            Some("previous_response_id".into()),
                        )
                        .with_code("previous_response_not_found")
                    })?;
                // A continued conversation is sent to the backend whole: it meets the bound
                // of a request that sent it whole, checked before anything of it is copied.
                let total = previous
                    .conversation_bytes()
                    .saturating_add(context.body_bytes);
                if total > limit {
                    return Err(conversation_too_large(&previous, context.body_bytes, limit));
                }
                previous.conversation()
            }
        };
        // The skeleton echoes the request's settings; the conversion then takes the request.
        let skeleton = skeleton(&request);
        let max_tool_calls = request
            .extra
            .get("max_tool_calls")
            .and_then(Value::as_u64)
            .map(|calls| usize::try_from(calls).unwrap_or(usize::MAX));
        let (store, stream) = (
            request.store != Some(false),
            request.stream.unwrap_or(false),
        );
        let Converted {
            request: mut chat,
            tools: mut offered,
            input,
            approvals,
            listed,
        } = to_chat(request, history.iter(), input).map_err(ApiError::from)?;
        let tools = compile(&chat.tools, &offered)?;
        if offered.search.is_some() && chat.tools.iter().any(|tool| tool.name() == SEARCH_NAME) {
            return Err(ApiError::invalid_request(
                format!(
                    "tools: a tool named \"{SEARCH_NAME}\" cannot be offered beside the hosted tool_search, which the model calls by that name"
                ),
                Some("tools".into()),
            ));
        }
        let search = offered
            .search
            .map(|mode| hosted_search(mode, &offered, &mut chat));
        let keep = if store {
            // Told now, before the backend is asked, rather than after an answer not kept.
            state.responses.ready().await.map_err(store_error)?;
            Some(Keep {
                store: std::sync::Arc::clone(&state.responses),
                input: history.then(input),
                owner: caller.name().map(str::to_owned),
            })
        } else {
            None
        };
        let forced = match offered.mcp_choice.take() {
            Some(McpChoice {
                label,
                name: Some(tool),
            }) => Some((label, tool)),
            _ => None,
        };
        let presentation = Presentation {
            skeleton,
            kinds: std::mem::take(&mut offered.kinds),
            keep,
            approval_ids: approvals.iter().map(|answer| answer.id.clone()).collect(),
            approvals: approvals
                .into_iter()
                .map(|approval| ApprovalAnswer {
                    id: approval.id,
                    label: approval.server_label,
                    tool: approval.name,
                    arguments: approval.arguments,
                    approve: approval.approve,
                    reason: approval.reason,
                })
                .collect(),
            listed: listed.into_iter().collect(),
            forced,
            loadable: std::mem::take(&mut offered.loadable),
            deferred_servers: std::mem::take(&mut offered.deferred_servers),
            loaded_mcp: std::mem::take(&mut offered.loaded_mcp),
        };
        Ok(Checked {
            stream,
            mcp: std::mem::take(&mut offered.mcp),
            search,
            max_tool_calls,
            dropped: offered.dropped,
            ..Checked::new(chat, tools, CallIdShape::OpenAi, presentation)
        })
    }

    fn with_gateway_tools(
        request: &mut GatewayRequest,
        presentation: &mut Presentation,
    ) -> Result<(), ApiError> {
        let approvals = std::mem::take(&mut presentation.approvals);
        if let Some(gateway) = &mut request.gateway {
            defer_servers(gateway, presentation);
        }
        match &mut request.gateway {
            Some(gateway) => {
                // Listed once per conversation: a listing in the input stands.
                gateway
                    .listings
                    .retain(|listing| !presentation.listed.contains(&listing.label));
                gateway.approvals = approvals;
            }
            None if !approvals.is_empty() => {
                return Err(ApiError::invalid_request(
                    "input: an mcp_approval_response answers an MCP call, but the request names no MCP server (send its mcp tool again)",
                    Some("input".into()),
                ));
            }
            None => {}
        }
        if let Some((label, tool)) = &presentation.forced {
            // The one tool the model must call, by the name it is offered under.
            let forced = request
                .gateway
                .as_ref()
                .and_then(|gateway| gateway.find(label, tool))
                .ok_or_else(|| {
                    ApiError::invalid_request(
                        format!("tool_choice.name: the MCP server \"{label}\" offers this request no tool named \"{tool}\""),
                        Some("tool_choice.name".into()),
                    )
                })?;
            request.request.tool_choice = Some(ToolChoice::Function(forced.name.clone()));
        }
        Ok(())
    }

    fn delivery(
        presentation: Presentation,
        streamed: Option<Head>,
    ) -> Delivery<ResponseRenderer, ResponseRenderer> {
        let renderer = ResponseRenderer::new(
            Encoder::new(presentation.skeleton, presentation.kinds),
            presentation.keep,
            presentation.approval_ids,
            presentation.loadable,
        );
        match streamed {
            Some(_) => Delivery::Streamed(renderer),
            None => Delivery::Whole(renderer),
        }
    }
}

/// The hosted search over the request's deferred tools, which leave the tools the model
/// is offered (a forced one stays); the model reads their names and descriptions (a
/// namespace's or an MCP server's own) in the search tool's description.
fn hosted_search(
    mode: SearchKind,
    offered: &OfferedTools,
    request: &mut switchboard_wire::ChatRequest,
) -> ToolSearch {
    let forced = match &request.tool_choice {
        Some(ToolChoice::Function(name)) => Some(name.as_str()),
        _ => None,
    };
    let (hidden, shown): (Vec<ToolDefinition>, Vec<ToolDefinition>) =
        request.tools.iter().cloned().partition(|tool| {
            offered.deferred.iter().any(|name| name == tool.name()) && forced != Some(tool.name())
        });
    request.tools = shown.into();
    let mode = match mode {
        SearchKind::Regex => SearchMode::Regex,
        SearchKind::Bm25 => SearchMode::Bm25,
    };
    let mut search = ToolSearch::new(SEARCH_NAME, mode, None, hidden);
    if !offered.shown.is_empty() {
        let mut about = "Tools you can load with this search:".to_owned();
        for (name, description) in &offered.shown {
            about.push_str("\n- ");
            about.push_str(name);
            if let Some(description) = description.as_deref().filter(|text| !text.is_empty()) {
                about.push_str(": ");
                about.push_str(description);
            }
        }
        search.about = Some(about);
    }
    search
}

/// Leaves the tools of the MCP servers marked `defer_loading` to the hosted search (but
/// those the conversation's searches loaded), and notes how its output shows each.
fn defer_servers(
    gateway: &mut switchboard_pipeline::GatewayTools,
    presentation: &mut Presentation,
) {
    if presentation.deferred_servers.is_empty() {
        return;
    }
    let waits = |tool: &switchboard_pipeline::GatewayTool| {
        tool.source.as_ref().is_some_and(|source| {
            presentation.deferred_servers.contains(&source.server)
                && !presentation
                    .loaded_mcp
                    .iter()
                    .any(|(label, name)| *label == source.server && *name == source.tool)
        })
    };
    gateway.defer(waits);
    for tool in &gateway.tools {
        if let Some(source) = tool.source.as_ref().filter(|_| waits(tool)) {
            presentation.loadable.insert(
                tool.name.clone(),
                Loadable::Mcp {
                    server_label: source.server.clone(),
                    tool: source.tool.clone(),
                },
            );
        }
    }
}

fn conversation_too_large(previous: &StoredResponse, body_bytes: usize, limit: usize) -> ApiError {
    let error = ApiError::invalid_request(
        format!(
            "the conversation continued from previous_response_id ({} bytes) and this request ({body_bytes} bytes) are larger than the limit of {limit} bytes (max_body_bytes) that a request sending the whole conversation meets; start a new conversation or send a shorter one",
            previous.conversation_bytes()
        ),
        Some("previous_response_id".into()),
    )
    .with_code("conversation_too_large");
    ApiError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        ..error
    }
}

/// The offered tools compiled, to check the model's calls; a problem names the tool where
/// the client wrote it (`tools[2].tools[0].parameters…`).
fn compile(definitions: &[ToolDefinition], offered: &OfferedTools) -> Result<Toolset, ApiError> {
    if definitions.is_empty() {
        return Ok(Toolset::default());
    }
    // Kept by the definitions' own text, the OpenAI function shape they are in.
    compile_converted("openai", definitions, || {
        serde_json::to_value(definitions).unwrap_or(Value::Null)
    })
    .map_err(|found| {
        let problems: Vec<(String, String)> = found
            .0
            .iter()
            .map(|problem| (place(offered, &problem.path), problem.message.clone()))
            .collect();
        let param = problems.first().map(|(param, _)| param.clone());
        let message = problems
            .iter()
            .map(|(param, message)| format!("{param}: {message}"))
            .collect::<Vec<_>>()
            .join("; ");
        ApiError::invalid_request(message, param)
    })
}

/// `/3/function/parameters/x` of the flattened list → where tool 3 came from, `.parameters.x`.
fn place(offered: &OfferedTools, pointer: &str) -> String {
    let mut segments = pointer.trim_start_matches('/').splitn(2, '/');
    let index = segments
        .next()
        .and_then(|index| index.parse::<usize>().ok());
    let rest = segments.next().unwrap_or_default();
    match index.and_then(|index| offered.sources.get(index)) {
        Some(source) => {
            let rest = rest.strip_prefix("function").unwrap_or(rest);
            PathStyle::Brackets.pointer(source, rest)
        }
        None => PathStyle::Brackets.pointer("tools", pointer),
    }
}

/// The response object before any output: the request's settings echoed.
fn skeleton(request: &ResponsesRequest) -> ResponseObject {
    let reasoning = request.reasoning.as_ref();
    let text = request.text.as_ref();
    let mut text_echo = Map::new();
    text_echo.insert(
        "format".into(),
        text.and_then(|text| text.format.clone())
            .unwrap_or_else(|| json!({"type": "text"})),
    );
    if let Some(verbosity) = text.and_then(|text| text.verbosity.clone()) {
        text_echo.insert("verbosity".into(), Value::from(verbosity));
    }
    ResponseObject {
        id: response_id(),
        object: "response".into(),
        created_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs()),
        status: Status::InProgress,
        error: None,
        incomplete_details: None,
        instructions: request.instructions.clone().map(Value::from),
        max_output_tokens: request.max_output_tokens,
        model: request.model.clone(),
        output: Vec::new(),
        parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
        previous_response_id: request.previous_response_id.clone(),
        reasoning: json!({"effort": reasoning.and_then(|reasoning| reasoning.effort.clone()),
            "summary": reasoning.and_then(|reasoning| reasoning.summary.clone())}),
        store: request.store != Some(false),
        temperature: request.temperature,
        text: Value::Object(text_echo),
        tool_choice: request
            .tool_choice
            .clone()
            .filter(|choice| !choice.is_null())
            .unwrap_or_else(|| Value::from("auto")),
        tools: EchoedTools::new(request.tools.as_deref().unwrap_or_default()),
        top_p: request.top_p,
        truncation: request
            .extra
            .get("truncation")
            .and_then(Value::as_str)
            .unwrap_or("disabled")
            .to_owned(),
        usage: None,
        user: request.user.clone(),
        metadata: request.metadata.clone().unwrap_or_default(),
        tool_call_errors: None,
    }
}
