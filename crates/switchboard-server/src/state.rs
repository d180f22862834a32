//! Everything the handlers share, built once at start-up from the configuration.

use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use switchboard_characters::{CharacterRegistry, LoadOptions};
use tokio_util::sync::CancellationToken;

use crate::access::Access;
use crate::api::responses::store::{MemoryStore, RedisStore, ResponseStore};
use crate::config::Config;
use crate::connections::ConnectionLimits;
use crate::telemetry;
use crate::upstream::{Health, Route, RouteTable};

/// Shared, read-only state of a running gateway (the character set swaps atomically inside
/// its registry).
#[derive(Debug, Clone)]
pub struct AppState {
    pub routes: Arc<RouteTable>,
    pub characters: Arc<CharacterRegistry>,
    pub character_route: Option<Arc<Route>>,
    pub character_max_tokens: u32,
    pub health: Arc<Health>,
    pub metrics: PrometheusHandle,
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    pub max_answer_bytes: usize,
    pub connections: ConnectionLimits,
    /// Cancelled when a shutdown's grace period ends: answers still running then end with
    /// `server_shutting_down`, in their API's format.
    pub cut: CancellationToken,
    /// Responses made with `store: true`.
    pub responses: Arc<dyn ResponseStore>,
    pub access: Arc<Access>,
}

impl AppState {
    /// Builds the routes' clients and loads the characters. `env` reads API keys.
    pub fn build(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        // First: the routes register their replicas' series, which need the recorder.
        let metrics = telemetry::prometheus();
        let access = Arc::new(Access::build(config, env)?);
        let routes: Vec<Arc<Route>> = config
            .routes
            .iter()
            .map(|route| Route::from_config(route, env).map(Arc::new))
            .collect::<Result<_, _>>()?;
        let routes = RouteTable::new(config, routes)?;
        let character_route = match &config.character_route {
            Some(name) => routes.named(name).cloned(),
            // Characters need native tool calling: a prompted first route must not stop
            // a prompted-only gateway from starting.
            None => routes
                .all()
                .iter()
                .find(|route| route.prompted.is_none())
                .cloned(),
        };
        if let Some(route) = &character_route
            && route.prompted.is_some()
        {
            return Err(format!(
                "character_route \"{}\" uses prompted tool calling; characters need a route with native tool calling",
                route.name
            ));
        }
        let characters = Arc::new(CharacterRegistry::load(
            &config.characters,
            LoadOptions::default(),
        ));
        let health = Arc::new(Health::new(routes.all()));
        Ok(Self {
            routes: Arc::new(routes),
            characters,
            character_route,
            character_max_tokens: config.character_max_tokens,
            health,
            metrics,
            max_body_bytes: config.max_body_bytes,
            request_timeout: config.request_timeout(),
            max_answer_bytes: config.max_answer_bytes,
            connections: ConnectionLimits {
                header_read_timeout: Duration::from_secs(config.header_read_timeout_secs),
                body_read_timeout: Duration::from_secs(config.body_read_timeout_secs)
                    .min(config.request_timeout()),
                idle_timeout: Duration::from_secs(config.idle_timeout_secs),
                max_connections: config.max_connections,
            },
            cut: CancellationToken::new(),
            responses: response_store(config)?,
            access,
        })
    }
}

/// Stored responses live in Redis when replicas share state there, so that any replica
/// continues any conversation; in this process otherwise.
fn response_store(config: &Config) -> Result<Arc<dyn ResponseStore>, String> {
    let settings = &config.responses;
    let ttl = Duration::from_secs(settings.store_ttl_secs);
    Ok(match &config.state {
        Some(url) => Arc::new(RedisStore::new(url, settings.store_max_bytes, ttl)?),
        None => Arc::new(MemoryStore::new(
            std::num::NonZeroUsize::new(settings.store_max_entries)
                .unwrap_or(std::num::NonZeroUsize::MIN),
            settings.store_max_bytes,
            ttl,
        )),
    })
}
