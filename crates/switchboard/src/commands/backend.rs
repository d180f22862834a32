//! Choosing the model's backend from flags or the usual environment, for commands that
//! talk to a model: a route of one replica with the gateway's defaults, so that a command
//! retries a busy or unreachable backend, and runs its tool rounds, as the gateway does.

use anyhow::{Context, bail};
use switchboard_providers::config_from_env;
use switchboard_upstream::RouteConfig;
use switchboard_wire::Format;

/// Which LLM server to talk to.
#[derive(Debug, clap::Args)]
pub struct BackendArgs {
    /// Base URL of the backend (e.g. http://127.0.0.1:8000/v1). Without it: OPENAI_BASE_URL,
    /// then ANTHROPIC_API_KEY, then OLLAMA_HOST decide.
    #[arg(long = "backend", value_name = "URL")]
    url: Option<String>,
    /// The backend's wire format (default: openai with --backend, else from the environment).
    #[arg(long, value_parser = Format::NAMES)]
    provider: Option<String>,
    /// The model to ask for, as the backend names it.
    #[arg(long, env = "SWITCHBOARD_MODEL", value_name = "NAME")]
    model: Option<String>,
}

impl BackendArgs {
    /// The route to the backend, named after its provider, every setting at its default.
    pub fn route(&self) -> anyhow::Result<RouteConfig> {
        self.route_with(|name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
    }

    fn route_with(&self, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<RouteConfig> {
        let provider = match (&self.provider, &self.url) {
            (Some(name), _) => {
                Format::from_name(name).with_context(|| format!("unknown provider {name}"))?
            }
            (None, Some(_)) => Format::OpenAi,
            (None, None) if env("OPENAI_BASE_URL").is_some() => Format::OpenAi,
            (None, None) if env("ANTHROPIC_API_KEY").is_some() => Format::Anthropic,
            (None, None) if env("OLLAMA_HOST").is_some() => Format::Ollama,
            (None, None) => bail!(
                "no backend: pass --backend URL (and --provider openai|anthropic|ollama), or set OPENAI_BASE_URL, ANTHROPIC_API_KEY or OLLAMA_HOST"
            ),
        };
        let url = match &self.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => config_from_env(provider).base_url,
        };
        let Some(model) = self.model.clone() else {
            bail!(
                "no model: pass --model NAME (or set SWITCHBOARD_MODEL) with the name your {} backend serves",
                provider.name()
            )
        };
        // The key is the provider's usual variable's, as the provider's client reads it.
        Ok(RouteConfig::new(provider.name(), provider, url, model, ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: Option<&str>, provider: Option<&str>, model: Option<&str>) -> BackendArgs {
        BackendArgs {
            url: url.map(Into::into),
            provider: provider.map(Into::into),
            model: model.map(Into::into),
        }
    }

    #[test]
    fn a_missing_backend_says_how_to_set_one() {
        let error = args(None, None, Some("m"))
            .route_with(|_| None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("--backend URL") && error.contains("OPENAI_BASE_URL"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_model_says_how_to_name_one() {
        let error = args(Some("http://127.0.0.1:1/v1"), None, None)
            .route_with(|_| None)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("--model NAME"), "{error}");
    }

    #[test]
    fn flags_or_environment_pick_the_provider() {
        assert!(
            args(Some("http://127.0.0.1:1/v1"), None, Some("m"))
                .route_with(|_| None)
                .is_ok()
        );
        let ollama = |name: &str| (name == "OLLAMA_HOST").then(|| "127.0.0.1:11434".to_owned());
        assert!(
            args(None, None, Some("llama3.2"))
                .route_with(ollama)
                .is_ok()
        );
    }
}
