//! The pipeline as one configuration sets it up ([`Pipeline`]), and a request's way in:
//! the [`GatewayRequest`] a front-end hands over, the [`Limits`] its answer runs under, the
//! [`Started`] answer it gets back.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use switchboard_characters::CharacterRegistry;
use switchboard_tools::{Toolset, quote};
use switchboard_wire::{ChatRequest, Format};
use tokio_util::sync::CancellationToken;

use crate::completion::Limits;
use crate::count::{TokenCount, count_on, estimate};
use crate::error::PipelineError;
use crate::gateway_tools::{Asked, GatewayTools, ToolFilter};
use crate::ids::CallIdShape;
use crate::output::Outputs;
use crate::target::{CharacterId, Target};
use crate::tool_search::ToolSearch;
use crate::tool_servers::ToolServers;
use crate::{character, completion, tool_loop};
use switchboard_upstream::{Route, RouteTable, UpstreamRecord};

/// The pipeline as one configuration sets it up: the models a request may name (routes,
/// and characters through the route they talk through) and the bounds of an answer. The
/// state builds one per configuration snapshot; the pipeline knows nothing else of the
/// configuration.
#[derive(Debug)]
pub struct Pipeline {
    pub routes: RouteTable,
    /// The route characters talk through.
    pub character_route: Option<Arc<Route>>,
    pub characters: Arc<CharacterRegistry>,
    /// The upstream MCP servers, whose tools characters may use.
    pub tool_servers: ToolServers,
    pub settings: Settings,
    /// Cancelled when the gateway stops waiting for answers at shutdown.
    pub hard_stop: CancellationToken,
}

/// What bounds every answer, as the configuration sets it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The whole request's deadline.
    pub request_timeout: Duration,
    /// Bytes of words, reasoning and calls one answer may receive from its backend.
    pub max_answer_bytes: usize,
    /// Most tokens a character's reply may take, tool rounds included.
    pub character_max_tokens: u32,
    /// Whether answers name the replica that served them.
    pub upstream_header: bool,
    /// URL globs of MCP servers a request may name itself.
    pub mcp_allowed_urls: Vec<String>,
}

/// A request in the gateway's own model, whatever API it arrived through.
#[derive(Debug)]
pub struct GatewayRequest {
    /// The route or character the model name resolved to.
    pub target: Target,
    /// The request; its tools are plain function tools whatever the API offered.
    pub request: ChatRequest,
    /// The same tools compiled, to check the model's calls against.
    pub tools: Toolset,
    /// The shape of the tool-call ids the client's API uses.
    pub call_ids: CallIdShape,
    /// Tools the gateway runs itself inside the request ([`Pipeline::gateway_tools`]).
    pub gateway: Option<GatewayTools>,
    /// Which tools the caller's key may use: a character's toolbox offers and runs only
    /// those.
    pub tool_filter: ToolFilter,
}

impl GatewayRequest {
    /// The request as the model is offered it: the gateway's own tools and the search tool
    /// beside the client's, as the tool loop offers them. What a prompt's count or estimate
    /// is taken of.
    pub fn offered(&self) -> std::borrow::Cow<'_, ChatRequest> {
        match &self.gateway {
            Some(gateway) if !gateway.tools.is_empty() || gateway.search.is_some() => {
                let mut request = self.request.clone();
                request.tools = gateway.offered_beside(&request.tools).into();
                std::borrow::Cow::Owned(request)
            }
            _ => std::borrow::Cow::Borrowed(&self.request),
        }
    }
}

/// An answer under way.
#[derive(Debug)]
pub struct Started {
    /// The route or character that answers, for logs and metric labels: never the raw
    /// client string.
    pub label: String,
    /// `native`, `prompted` or `character`: a metric label.
    pub kind: &'static str,
    pub outputs: Outputs,
    /// Which route and replica answered, and the time spent waiting on them.
    pub upstreams: Arc<UpstreamRecord>,
}

impl Pipeline {
    /// Starts the answer from the route or character the request resolved to. Dropping the
    /// outputs (the client went away) cancels the work.
    pub fn start(&self, request: GatewayRequest) -> Result<Started, PipelineError> {
        let GatewayRequest {
            target,
            mut request,
            tools,
            mut call_ids,
            mut gateway,
            tool_filter,
        } = request;
        // The request's parsed tools give way to the identical list of an earlier request
        // with the same toolset: held while the answer streams, one copy serves them all.
        request.tools = tools.share(std::mem::take(&mut request.tools));
        let upstreams = Arc::new(UpstreamRecord::new(self.settings.upstream_header));
        let limits = Limits {
            timeout: self.settings.request_timeout,
            deadline: std::time::Instant::now() + self.settings.request_timeout,
            upstreams: Arc::clone(&upstreams),
            max_answer_bytes: self.settings.max_answer_bytes,
            hard_stop: self.hard_stop.clone(),
        };
        let label = target.label();
        let (route, character) = match target {
            Target::Character(character) => {
                // A character runs its own tools; of the gateway's, only a tool search over
                // the client's deferred tools.
                if gateway
                    .as_ref()
                    .is_some_and(|gateway| !gateway.tools.is_empty())
                {
                    return Err(PipelineError::invalid(
                        "character routes run the character's own tools; send the request without MCP servers",
                        Some("tools".into()),
                    ));
                }
                let route = self
                    .character_route
                    .clone()
                    .ok_or(PipelineError::NoCharacterRoute)?;
                let search = gateway.as_mut().and_then(|gateway| gateway.search.take());
                character::conversation(&mut request, search.is_some())?;
                // Without client tools the character's calls go no further than its own
                // tools and its backend; a found client tool's call goes back to the client,
                // in its API's shape.
                if search.is_none() {
                    call_ids = CallIdShape::Backend;
                }
                request.max_tokens = Some(self.character_max_tokens(&request));
                (route, Some((character, search)))
            }
            Target::Route(route) => (route, None),
        };
        let kind = match (&character, route.prompted) {
            (Some(_), _) => "character",
            (None, Some(_)) => "prompted",
            (None, None) => "native",
        };
        let fallbacks = route
            .fallbacks
            .iter()
            .filter_map(|name| self.routes.named(name).cloned())
            .collect();
        let completion = completion::Completion {
            route,
            fallbacks,
            request,
            tools,
            call_ids,
            limits,
            gateway_run: Arc::default(),
            received: 0,
        };
        let outputs = match (character, gateway) {
            (Some((character, search)), _) => character::start(
                character,
                completion,
                &self.tool_servers,
                tool_filter,
                search,
            ),
            (None, None) => completion::start(completion),
            (None, Some(gateway)) => tool_loop::start(completion, gateway)?,
        };
        Ok(Started {
            label,
            kind,
            outputs,
            upstreams,
        })
    }

    /// The tools the gateway runs for a request to `target`: the MCP servers the request
    /// names (`asked`) and those the route offers on every request.
    pub async fn gateway_tools(
        &self,
        target: &Target,
        asked: Asked<'_>,
    ) -> Result<Option<GatewayTools>, PipelineError> {
        match target {
            Target::Route(route) => {
                GatewayTools::resolve(
                    &self.tool_servers,
                    &self.settings.mcp_allowed_urls,
                    &route.tool_loop,
                    asked,
                    self.settings.request_timeout,
                )
                .await
            }
            Target::Character(_) if asked.servers.is_empty() => Ok(None),
            Target::Character(_) => Err(PipelineError::invalid(
                "character routes run the character's own tools; send the request without MCP servers",
                Some(asked.servers[0].path.clone()),
            )),
        }
    }

    /// `gateway` (the MCP servers' tools a request to `target` runs, if any) with the
    /// request's tool search, under the bounds of the route that answers: a route's own,
    /// or for a character the route characters talk through.
    pub fn with_search(
        &self,
        target: &Target,
        gateway: Option<GatewayTools>,
        search: ToolSearch,
    ) -> Result<GatewayTools, PipelineError> {
        let route = match target {
            Target::Route(route) => route,
            Target::Character(_) => self
                .character_route
                .as_ref()
                .ok_or(PipelineError::NoCharacterRoute)?,
        };
        Ok(GatewayTools::with_search(gateway, &route.tool_loop, search))
    }

    /// Most tokens a character's reply to `request` may take: `character_max_tokens`, or
    /// the client's smaller `max_tokens`.
    pub fn character_max_tokens(&self, request: &ChatRequest) -> u32 {
        let cap = self.settings.character_max_tokens;
        request.max_tokens.map_or(cap, |asked| asked.min(cap))
    }
}

impl Pipeline {
    /// Counts the prompt `request` would send.
    pub async fn count_tokens(&self, request: &GatewayRequest) -> TokenCount {
        let offered = request.offered();
        match &request.target {
            Target::Character(_) => estimate(&offered),
            Target::Route(route) => count_on(route, &offered, self.settings.request_timeout).await,
        }
    }

    /// The prompt's count for the head of a streamed answer, taken beside the answer itself so
    /// that it costs no wait: by the tokenizer of the route's backend, on OpenAI-compatible
    /// routes only. `None` where the answer's own usage is the only count (characters, whose
    /// prompt grows each round; Anthropic and Ollama routes, where a count would be a second
    /// billed or slow request): the head then carries the estimate.
    pub fn count_beside(&self, request: &GatewayRequest) -> Option<BoxFuture<'static, TokenCount>> {
        let Target::Route(route) = &request.target else {
            return None;
        };
        if route.format != Format::OpenAi {
            return None;
        }
        let route = Arc::clone(route);
        let chat = request.offered().into_owned();
        let timeout = self.settings.request_timeout;
        Some(Box::pin(
            async move { count_on(&route, &chat, timeout).await },
        ))
    }

    /// Embeddings for a client's request in the backend's own format (`body`, sent to its
    /// endpoint `path`) from the route `target` names, the model named as the backend knows
    /// it, under the request deadline: `None` where the route's backend serves none
    /// (characters never do).
    pub async fn embed(
        &self,
        target: &Target,
        path: &str,
        mut body: serde_json::Value,
    ) -> Option<Result<serde_json::Value, PipelineError>> {
        let Target::Route(route) = target else {
            return None;
        };
        if let Some(fields) = body.as_object_mut() {
            fields.insert(
                "model".into(),
                serde_json::Value::from(route.model.as_str()),
            );
        }
        let deadline = std::time::Instant::now() + self.settings.request_timeout;
        let answer = route.pool.embed(path, body, deadline).await?;
        Some(answer.map_err(PipelineError::from))
    }
}

impl Pipeline {
    /// The route or character a model name names, or the 404 that says what there is.
    pub fn resolve(&self, model: &str) -> Result<Target, PipelineError> {
        match CharacterId::parse(model) {
            Some(name) => self
                .characters
                .get(name)
                .map(Target::Character)
                .ok_or_else(|| {
                    PipelineError::UnknownModel(format!(
                        "no character named {} is loaded; GET /v1/models lists them",
                        quote(name)
                    ))
                }),
            None => self
                .routes
                .resolve(model)
                .cloned()
                .map(Target::Route)
                .ok_or_else(|| {
                    let known: Vec<&str> = self
                        .routes
                        .all()
                        .iter()
                        .map(|route| route.name.as_str())
                        .collect();
                    PipelineError::UnknownModel(format!(
                        "no route is named {}; configured routes: {}",
                        quote(model),
                        known.join(", ")
                    ))
                }),
        }
    }
}
