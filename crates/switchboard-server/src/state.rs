//! Everything the handlers share, built once at start-up from the configuration.

use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use switchboard_characters::{CharacterRegistry, LoadOptions};

use crate::access::Access;
use crate::config::Config;
use crate::telemetry;
use crate::upstream::{Health, Route, RouteTable};

/// Shared, read-only state of a running gateway (the character set swaps atomically inside
/// its registry).
#[derive(Debug, Clone)]
pub struct AppState {
    pub routes: Arc<RouteTable>,
    pub characters: Arc<CharacterRegistry>,
    pub character_route: Option<Arc<Route>>,
    pub health: Arc<Health>,
    pub metrics: PrometheusHandle,
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    pub access: Arc<Access>,
}

impl AppState {
    /// Builds the routes' clients and loads the characters. `env` reads API keys.
    pub fn build(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
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
            health,
            metrics: telemetry::prometheus(),
            max_body_bytes: config.max_body_bytes,
            request_timeout: config.request_timeout(),
            access,
        })
    }
}
