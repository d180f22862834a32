//! Per-backend settings, with the defaults and environment variables each ecosystem's own
//! SDKs use, so an existing setup works unchanged.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;

/// Adds headers to each request sent to a backend, a reopened one included, at the moment
/// it is sent: for values that depend on the request's context rather than the route (a trace
/// context, say). The providers know nothing of where the values come from.
pub type HeaderHook = Arc<dyn Fn(&mut HeaderMap) + Send + Sync>;

/// How to reach one backend and how patient to be with it.
#[derive(Clone)]
pub struct BackendConfig {
    /// Root URL; the format's path (`/chat/completions`, `/v1/messages`, `/api/chat`) is appended.
    pub base_url: String,
    pub api_key: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    /// From sending the request to the first byte of the body (prompt processing included).
    pub first_byte_timeout: Duration,
    /// Longest silence allowed between two pieces of a streamed body.
    pub idle_timeout: Duration,
    /// How long an unused connection stays in the pool. Servers close idle keep-alive
    /// connections on their own schedule (uvicorn, Node and llama.cpp's server after 5 s);
    /// a connection kept longer than the server keeps it fails the request that reuses it.
    pub pool_idle_timeout: Duration,
    /// Largest answer read as one body (a non-streamed answer, an error body).
    pub max_body_bytes: usize,
    /// Called for every request sent, after the fixed headers are set.
    pub request_headers: Option<HeaderHook>,
}

impl fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key, header values and a password in the URL may be secrets: never in logs.
        let header_names: Vec<&str> = self
            .extra_headers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        f.debug_struct("BackendConfig")
            .field("base_url", &crate::shown_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("extra_headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field(
                "request_headers",
                &self.request_headers.as_ref().map(|_| "<hook>"),
            )
            .finish()
    }
}

impl BackendConfig {
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            extra_headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            pool_idle_timeout: Duration::from_secs(4),
            max_body_bytes: 32 * 1024 * 1024,
            request_headers: None,
        }
    }

    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and `OPENAI_API_KEY`.
    pub fn openai_from_env() -> Self {
        Self::openai_from(|name| std::env::var(name).ok())
    }

    /// `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`) and `ANTHROPIC_API_KEY`.
    pub fn anthropic_from_env() -> Self {
        Self::anthropic_from(|name| std::env::var(name).ok())
    }

    /// `OLLAMA_HOST` (default `127.0.0.1:11434`; scheme and port optional, as Ollama accepts).
    pub fn ollama_from_env() -> Self {
        Self::ollama_from(|name| std::env::var(name).ok())
    }

    fn openai_from(var: impl Fn(&str) -> Option<String>) -> Self {
        let base = non_empty(var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        Self {
            api_key: non_empty(var("OPENAI_API_KEY")),
            ..Self::new(base)
        }
    }

    fn anthropic_from(var: impl Fn(&str) -> Option<String>) -> Self {
        let base = non_empty(var("ANTHROPIC_BASE_URL"))
            .unwrap_or_else(|| "https://api.anthropic.com".to_owned());
        Self {
            api_key: non_empty(var("ANTHROPIC_API_KEY")),
            ..Self::new(base)
        }
    }

    fn ollama_from(var: impl Fn(&str) -> Option<String>) -> Self {
        let host = non_empty(var("OLLAMA_HOST")).unwrap_or_else(|| "127.0.0.1:11434".to_owned());
        let with_scheme = if host.contains("://") {
            host
        } else {
            format!("http://{host}")
        };
        let (scheme, rest) = with_scheme
            .split_once("://")
            .unwrap_or(("http", &with_scheme));
        let authority = rest.split('/').next().unwrap_or_default();
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
        let base = if has_port {
            with_scheme.clone()
        } else {
            format!("{scheme}://{authority}:11434")
        };
        // Idle: a model loading on first use sends nothing for a long time; allow for it.
        Self {
            first_byte_timeout: std::time::Duration::from_secs(600),
            ..Self::new(base.trim_end_matches('/'))
        }
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|value| !value.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn defaults_and_environment() {
        let openai = BackendConfig::openai_from(env(&[]));
        assert_eq!(openai.base_url, "https://api.openai.com/v1");
        assert_eq!(openai.api_key, None);
        let openai = BackendConfig::openai_from(env(&[
            ("OPENAI_BASE_URL", "http://vllm:8000/v1"),
            ("OPENAI_API_KEY", "sk-1"),
        ]));
        assert_eq!(
            (openai.base_url.as_str(), openai.api_key.as_deref()),
            ("http://vllm:8000/v1", Some("sk-1"))
        );
        assert_eq!(
            BackendConfig::anthropic_from(env(&[])).base_url,
            "https://api.anthropic.com"
        );
        for (host, base) in [
            ("", "http://127.0.0.1:11434"),
            ("0.0.0.0", "http://0.0.0.0:11434"),
            ("gpu-box:9999", "http://gpu-box:9999"),
            (
                "https://ollama.example.com",
                "https://ollama.example.com:11434",
            ),
            ("http://[::1]:11434/", "http://[::1]:11434"),
        ] {
            assert_eq!(
                BackendConfig::ollama_from(env(&[("OLLAMA_HOST", host)])).base_url,
                base,
                "{host}"
            );
        }
    }

    #[test]
    fn debug_hides_secrets() {
        let mut config = BackendConfig::new("http://x").with_api_key("sk-secret");
        config
            .extra_headers
            .push(("x-token".into(), "hidden".into()));
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("sk-secret") && !shown.contains("hidden"),
            "{shown}"
        );
    }
}
