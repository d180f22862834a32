//! A route: what a client's `"model"` names, resolved at start-up into its replicas'
//! clients, the way tool calls are made through it, and where to turn when it fails.

use std::sync::Arc;
use std::time::Duration;

use switchboard_parsers::{Family, Markup, family_for_model};
use switchboard_providers::{
    Backend, BackendConfig, HeaderHook, config_from_env, connect, shown_url,
};
use switchboard_wire::Format;

use super::pool::Pool;
use super::replica::PoolSettings;
use super::settings::{RouteConfig, ToolCallPolicy, ToolCalling};

/// Wraps a replica's client, given the route's name and the replica's shown URL.
pub type WrapClient = dyn Fn(Arc<dyn Backend>, &str, &str) -> Arc<dyn Backend>;

/// What the gateway puts around each replica's client; nothing by default.
#[derive(Default)]
pub struct ClientHooks<'a> {
    /// Headers set on every request to a replica (the current trace context).
    pub request_headers: Option<HeaderHook>,
    /// A span around each attempt.
    pub wrap: Option<&'a WrapClient>,
}

impl std::fmt::Debug for ClientHooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHooks")
            .field("request_headers", &self.request_headers.is_some())
            .field("wrap", &self.wrap.is_some())
            .finish()
    }
}

/// A configured backend model, ready to serve.
pub struct Route {
    pub name: String,
    /// The replicas serving the route's model.
    pub pool: Arc<Pool>,
    /// Routes tried in order when every replica failed before answering.
    pub fallbacks: Vec<String>,
    /// Seconds between active health checks of the replicas; none when absent.
    pub health_check: Option<Duration>,
    /// The backend's wire format.
    pub format: Format,
    /// The model name the backend expects.
    pub model: String,
    /// Set for prompted routes: the family whose markup the model is asked to write.
    pub prompted: Option<Family>,
    /// Set for native routes that recover calls the model wrote as text: in the family's
    /// markup, or in any unmistakable one when the family is not known.
    pub recover: Option<Markup>,
    pub policy: ToolCallPolicy,
    pub forward_fields: Vec<String>,
    /// How the gateway runs tools for the model on this route.
    pub tool_loop: ToolLoopSettings,
}

/// A route's bounds on the tools the gateway runs inside a request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolLoopSettings {
    /// MCP servers whose tools every request to the route is offered.
    pub servers: Vec<String>,
    pub max_rounds: usize,
    /// All of one request's tool calls together.
    pub max_tool_time: Duration,
    /// Bytes the rounds may add to the conversation.
    pub max_conversation_bytes: usize,
    pub max_calls_per_round: usize,
    /// Calls of one request running at once.
    pub max_concurrent_calls: usize,
    /// Tools one tool search returns at most.
    pub search_max_results: usize,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.name)
            .field("pool", &self.pool)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// Builds the client for a configured route. The API key is read from the variable the
    /// configuration names, or the provider's usual one; `request_timeout` is the gateway's
    /// request deadline, which bounds the default wait for a first event.
    pub fn from_config(
        config: &RouteConfig,
        request_timeout: Duration,
        env: &dyn Fn(&str) -> Option<String>,
        hooks: &ClientHooks,
    ) -> Result<Self, String> {
        let format = config.format();
        let replicas = config
            .replica_urls()
            .into_iter()
            .map(|url| {
                let mut backend_config = BackendConfig {
                    base_url: url.trim_end_matches('/').to_owned(),
                    ..config_from_env(format)
                };
                backend_config.api_key = match &config.api_key_env {
                    Some(variable) => env(variable),
                    None => backend_config.api_key,
                };
                backend_config.request_headers = hooks.request_headers.clone();
                let backend: Arc<dyn Backend> =
                    connect(format, backend_config).map_err(|error| error.to_string())?;
                // The replica's name in headers, `/healthz`, metrics, logs and spans: a
                // password in the URL stays with the backend client.
                let shown = shown_url(url);
                let backend = match hooks.wrap {
                    Some(wrap) => wrap(backend, &config.name, &shown),
                    None => backend,
                };
                Ok((shown, backend))
            })
            .collect::<Result<Vec<_>, String>>()?;
        if replicas.is_empty() {
            return Err("`url` or `urls` is required".to_owned());
        }
        let settings = PoolSettings {
            balance: config.balance,
            retries: config.retries,
            eject_after: config.eject_after,
            // `Config::check` bounds both; a value it let through cannot panic here.
            eject_for: Duration::try_from_secs_f64(config.eject_secs)
                .unwrap_or(Duration::from_secs(5)),
            first_byte: config.first_byte_timeout(request_timeout),
        };
        let family = config
            .format
            .as_deref()
            .and_then(Family::from_name)
            .or_else(|| family_for_model(&config.model));
        let (prompted, recover) = match config.tool_calling {
            ToolCalling::Native if config.recover_text_calls == Some(false) => (None, None),
            ToolCalling::Native => (None, Some(family.map_or(Markup::Unknown, Markup::Family))),
            ToolCalling::Prompted => (Some(family.unwrap_or(Family::Json)), None),
        };
        Ok(Self {
            name: config.name.clone(),
            pool: Arc::new(Pool::new(&config.name, replicas, settings)),
            fallbacks: config.fallbacks.clone(),
            health_check: config
                .health_check_secs
                .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok()),
            format,
            model: config.model.clone(),
            prompted,
            recover,
            policy: config.tool_call_errors,
            forward_fields: config.forward_fields.clone(),
            tool_loop: ToolLoopSettings {
                servers: config.mcp_servers.clone(),
                max_rounds: config.max_tool_rounds,
                max_tool_time: Duration::try_from_secs_f64(config.max_tool_time_secs)
                    .unwrap_or(Duration::from_secs(120)),
                max_conversation_bytes: config.max_tool_conversation_bytes,
                max_calls_per_round: config.max_tool_calls_per_round,
                max_concurrent_calls: config.max_concurrent_tool_calls,
                search_max_results: config.tool_search_max_results,
            },
        })
    }
}
