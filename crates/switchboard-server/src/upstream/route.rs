//! A route: what a client's `"model"` names, resolved at start-up into a backend client
//! and the way tool calls are made through it.

use std::sync::Arc;

use switchboard_parsers::{Family, family_for_model};
use switchboard_providers::{Backend, BackendConfig, config_from_env, connect};
use switchboard_wire::Format;

use crate::config::{RouteConfig, ToolCallPolicy, ToolCalling};
use crate::traces;

/// A configured backend model, ready to serve.
pub struct Route {
    pub name: String,
    pub url: String,
    pub backend: Arc<dyn Backend>,
    /// The backend's wire format.
    pub format: Format,
    /// The model name the backend expects.
    pub model: String,
    /// Set for prompted routes: the family whose markup the model is asked to write.
    pub prompted: Option<Family>,
    /// Set for native routes that recover calls the model wrote as text in this family's
    /// markup.
    pub recover: Option<Family>,
    pub policy: ToolCallPolicy,
    pub forward_fields: Vec<String>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// Builds the client for a configured route. The API key is read from the variable the
    /// configuration names, or the provider's usual one.
    pub fn from_config(
        config: &RouteConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let format = config.format();
        let mut backend_config = BackendConfig {
            base_url: config.url.trim_end_matches('/').to_owned(),
            ..config_from_env(format)
        };
        backend_config.api_key = match &config.api_key_env {
            Some(variable) => env(variable),
            None => backend_config.api_key,
        };
        backend_config.request_headers = traces::header_hook();
        let backend = connect(format, backend_config)
            .map_err(|error| format!("route \"{}\": {error}", config.name))?;
        let backend = traces::traced_backend(backend, &config.name, &config.url);
        let family = config
            .format
            .as_deref()
            .and_then(Family::from_name)
            .or_else(|| family_for_model(&config.model));
        let (prompted, recover) = match config.tool_calling {
            ToolCalling::Native if config.recover_text_calls == Some(false) => (None, None),
            ToolCalling::Native => (None, family),
            ToolCalling::Prompted => (Some(family.unwrap_or(Family::Json)), None),
        };
        Ok(Self {
            name: config.name.clone(),
            url: config.url.clone(),
            backend,
            format,
            model: config.model.clone(),
            prompted,
            recover,
            policy: config.tool_call_errors,
            forward_fields: config.forward_fields.clone(),
        })
    }
}
