//! The one path every model API runs ([`serve`]), in a fixed order of named phases, so that
//! what one API does before or after another phase every API does there too:
//!
//! ```text
//!  body       the body read once under max_body_bytes into the API's own types
//!   |
//!  check      Api::check: typed body -> the pipeline's request, its tools compiled, the MCP
//!   |         servers it names, what its renderers need          (log: the model asked for)
//!  admit      resolve the model (route, alias, character), authorize the key, reserve its
//!   |         tokens; then Api::fit to the target that answers
//!  tools      the tools the gateway runs for it (MCP servers: may connect), Api::with_gateway_tools
//!   |
//!  count      a streamed head's prompt count, gateway tools included (Api::HEAD_COUNT)
//!   |
//!  start      Pipeline::start
//!   |
//!  answer     sse::answer: streamed through Api::Streamed or folded into Api::Whole
//! ```
//!
//! Admission comes before the gateway's tools: a request refused for its key's tokens never
//! waits on MCP servers it would not use. An API is one [`Api`] impl (its parser, checks
//! and renderers); the request log is written here, the same way for all. A token count
//! ([`count`]) runs body, check, admit (reserving nothing) and tools, then counts.

use std::future::Future;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::response::Response;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use switchboard_pipeline::ids::CallIdShape;
use switchboard_pipeline::tool_search::ToolSearch;
use switchboard_pipeline::{GatewayRequest, Started, Target, TokenCount, estimate_tokens};
use switchboard_tools::Toolset;
use switchboard_wire::ChatRequest;
use switchboard_wire::mcp::McpServerRequest;

use super::body::{PathStyle, parse_typed, read_bytes};
use super::front_end::RequestId;
use super::log::{RequestLog, Tally};
use super::sse::{self, Delivery, Renderer, WholeBody};
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::AppState;

/// Names the tools a request offered that cannot run here and were left out.
pub const DROPPED_TOOLS_HEADER: &str = "x-switchboard-dropped-tools";

/// One model API: its body, its checks and its renderers.
pub trait Api: Send + Sync + 'static {
    /// The body, read once from its bytes.
    type Body: DeserializeOwned + Send;
    /// What the renderers need besides the outputs (ids, the model's name as asked…).
    type Presentation: Send;
    /// A streamed answer's renderer.
    type Streamed: Renderer;
    /// A whole answer's body.
    type Whole: WholeBody;

    /// The endpoint's label in log lines, metrics and spans (`chat_completions`).
    const ENDPOINT: &'static str;
    /// How a field's path is written in the API's errors.
    const PATH_STYLE: PathStyle;
    /// Whether a streamed answer's head announces the prompt's token count.
    const HEAD_COUNT: bool = false;

    /// An error in the API's shape.
    fn error(error: ApiError) -> Response;

    /// The typed body checked and moved into the pipeline's request.
    fn check(
        body: Self::Body,
        context: &Context<'_>,
    ) -> impl Future<Output = Result<Checked<Self::Presentation>, ApiError>> + Send;

    /// The request fitted to the route or character that answers it; nothing by default.
    fn fit(
        _request: &mut ChatRequest,
        _target: &Target,
        _presentation: &mut Self::Presentation,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// What the API does once the gateway's own tools are known (approvals, a forced MCP
    /// tool, whether the answer shows them); nothing by default.
    fn with_gateway_tools(
        _request: &mut GatewayRequest,
        _presentation: &mut Self::Presentation,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// The answer itself, where the API gives one without asking the model once the
    /// request is admitted (Ollama's load and unload requests); none by default.
    fn answered(_presentation: &Self::Presentation) -> Option<Response> {
        None
    }

    /// How the answer goes out: streamed with `head` (the prompt's size, for APIs that
    /// announce it), or whole.
    fn delivery(
        presentation: Self::Presentation,
        streamed: Option<Head>,
    ) -> Delivery<Self::Streamed, Self::Whole>;

    /// Headers every response of the API carries, whatever its outcome (the request id
    /// where the API's SDKs read it); nothing by default.
    fn decorate(_response: &mut Response, _request_id: &str) {}
}

/// What a check may read besides the body.
pub struct Context<'a> {
    pub caller: &'a Caller,
    pub state: &'a AppState,
    pub headers: &'a HeaderMap,
    pub uri: &'a Uri,
    /// The body's size in bytes.
    pub body_bytes: usize,
}

/// A request checked: the pipeline's request and what else the path needs of it.
pub struct Checked<P> {
    pub request: ChatRequest,
    /// The request's tools compiled, to check the model's calls against.
    pub tools: Toolset,
    pub call_ids: CallIdShape,
    /// The MCP servers the request names, for the gateway to run.
    pub mcp: Vec<McpServerRequest>,
    /// The tool search the gateway runs over the request's deferred tools.
    pub search: Option<ToolSearch>,
    /// Calls the gateway's tools may take in all (OpenAI's `max_tool_calls`).
    pub max_tool_calls: Option<usize>,
    pub stream: bool,
    /// Tools left out (hosted tools that cannot run here), named in a header.
    pub dropped: Vec<String>,
    pub presentation: P,
}

impl<P> Checked<P> {
    /// A request for a model to answer: the gateway runs its tools, nothing dropped, no
    /// bound on calls but the route's.
    pub fn new(
        request: ChatRequest,
        tools: Toolset,
        call_ids: CallIdShape,
        presentation: P,
    ) -> Self {
        Self {
            stream: request.stream,
            request,
            tools,
            call_ids,
            mcp: Vec::new(),
            search: None,
            max_tool_calls: None,
            dropped: Vec::new(),
            presentation,
        }
    }
}

/// A streamed head's prompt size: estimated now, and counted by the backend's tokenizer
/// beside the answer where it has one.
pub struct Head {
    pub estimate: u64,
    pub count: Option<BoxFuture<'static, TokenCount>>,
}

/// The handler of an API's model endpoint: every phase, in order, then the answer.
pub async fn serve<A: Api>(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let log = RequestLog::new(request_id.clone(), A::ENDPOINT).with_caller(&caller);
    let context = Context {
        caller: &caller,
        state: &state,
        headers: &headers,
        uri: &uri,
        body_bytes: 0,
    };
    let (response, dropped) = match start::<A>(context, &log, body).await {
        Ok(Ready::Started(started, delivery, dropped)) => {
            (sse::answer(started, delivery, A::error, log).await, dropped)
        }
        Ok(Ready::Answered(label, response)) => {
            // Nothing was asked of a model: no tokens are tallied.
            log.finish(&label, axum::http::StatusCode::OK, Tally::default(), false);
            (response, Vec::new())
        }
        Err(error) => (log.fail("-", error, A::error), Vec::new()),
    };
    decorated::<A>(response, &dropped, &request_id)
}

/// The headers every answer of the API carries: the tools left out, and the API's own.
fn decorated<A: Api>(mut response: Response, dropped: &[String], request_id: &str) -> Response {
    if !dropped.is_empty()
        && let Ok(value) = HeaderValue::from_str(&dropped.join(", "))
    {
        response.headers_mut().insert(DROPPED_TOOLS_HEADER, value);
    }
    A::decorate(&mut response, request_id);
    response
}

/// Where the phases up to the answer end: an answer started, with how it goes out and the
/// tools left out, or the API's own answer (`Api::answered`), with what the request
/// resolved to.
enum Ready<A: Api> {
    Started(Started, Delivery<A::Streamed, A::Whole>, Vec<String>),
    Answered(String, Response),
}

/// The phases up to the started answer.
async fn start<A: Api>(
    mut context: Context<'_>,
    log: &RequestLog,
    body: Body,
) -> Result<Ready<A>, ApiError> {
    let caller = context.caller;
    let (checked, target) = checked_and_admitted::<A>(&mut context, log, body, true).await?;
    if let Some(response) = A::answered(&checked.presentation) {
        return Ok(Ready::Answered(target.label(), response));
    }
    // tools
    let Equipped {
        request,
        stream,
        dropped,
        presentation,
    } = equipped::<A>(caller, target, checked).await?;
    // count
    let pipeline = &caller.snapshot().pipeline;
    let head = stream.then(|| Head {
        estimate: if A::HEAD_COUNT {
            estimate_tokens(&request.offered())
        } else {
            0
        },
        count: if A::HEAD_COUNT {
            pipeline.count_beside(&request)
        } else {
            None
        },
    });
    // start
    let started = pipeline.start(request)?;
    Ok(Ready::Started(
        started,
        A::delivery(presentation, head),
        dropped,
    ))
}

/// The request with the gateway's tools, and what its answer still needs.
struct Equipped<P> {
    request: GatewayRequest,
    stream: bool,
    dropped: Vec<String>,
    presentation: P,
}

/// The tools phase: the MCP servers the request and its route name and a tool search,
/// joined to the request as the pipeline takes it. A count goes through it too, so that it
/// counts what the model would be offered.
async fn equipped<A: Api>(
    caller: &Caller,
    target: Target,
    checked: Checked<A::Presentation>,
) -> Result<Equipped<A::Presentation>, ApiError> {
    let Checked {
        request,
        tools,
        call_ids,
        mcp,
        search,
        max_tool_calls,
        stream,
        dropped,
        mut presentation,
    } = checked;
    let gateway = caller::gateway_tools(caller, &target, &mcp, &request, max_tool_calls).await?;
    // A tool search runs in the tool loop, beside the MCP servers' tools or a character's.
    let gateway = match search {
        Some(search) => Some(
            caller
                .snapshot()
                .pipeline
                .with_search(&target, gateway, search)?,
        ),
        None => gateway,
    };
    let mut request = GatewayRequest {
        target,
        request,
        tools,
        call_ids,
        gateway,
        tool_filter: caller.tool_filter(),
    };
    A::with_gateway_tools(&mut request, &mut presentation)?;
    Ok(Equipped {
        request,
        stream,
        dropped,
        presentation,
    })
}

/// The body read and checked, and the request admitted: its model resolved for the key,
/// its tokens reserved (`reserve`: a count reserves nothing), fitted to what answers.
async fn checked_and_admitted<A: Api>(
    context: &mut Context<'_>,
    log: &RequestLog,
    body: Body,
    reserve: bool,
) -> Result<(Checked<A::Presentation>, Target), ApiError> {
    let caller = context.caller;
    // body
    let bytes = read_bytes(body, caller.snapshot().config.max_body_bytes).await?;
    context.body_bytes = bytes.len();
    let body: A::Body = parse_typed(&bytes, A::PATH_STYLE)?;
    drop(bytes);
    // check
    let mut checked = A::check(body, context).await?;
    log.requested(&checked.request.model);
    // admit
    let target = caller::resolve(caller, &checked.request.model)?;
    if reserve {
        caller::reserve(caller, &target, &checked.request)?;
    }
    A::fit(&mut checked.request, &target, &mut checked.presentation)?;
    Ok((checked, target))
}

/// An API with a token count endpoint.
pub trait Counts: Api {
    /// The count in the API's shape.
    fn counted(count: TokenCount, presentation: &Self::Presentation) -> Response;
}

/// The handler of an API's token count: the same phases up to the tools (nothing reserved;
/// the gateway's tools joined, so they are counted), then the prompt counted as the backend
/// would see it.
pub async fn count<A: Counts>(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = &caller;
    let log = RequestLog::new(request_id.clone(), "count_tokens").with_caller(caller);
    let mut context = Context {
        caller,
        state: &state,
        headers: &headers,
        uri: &uri,
        body_bytes: 0,
    };
    let counted = async {
        let (checked, target) = checked_and_admitted::<A>(&mut context, &log, body, false).await?;
        let equipped = equipped::<A>(caller, target, checked).await?;
        let count = caller
            .snapshot()
            .pipeline
            .count_tokens(&equipped.request)
            .await;
        Ok::<_, ApiError>((count, equipped))
    };
    let (response, dropped) = match counted.await {
        Ok((count, equipped)) => {
            // A count consumes nothing: no tokens are tallied.
            let label = equipped.request.target.label();
            log.finish(&label, axum::http::StatusCode::OK, Tally::default(), false);
            (A::counted(count, &equipped.presentation), equipped.dropped)
        }
        Err(error) => (log.fail("-", error, A::error), Vec::new()),
    };
    decorated::<A>(response, &dropped, &request_id)
}
