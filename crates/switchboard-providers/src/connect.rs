//! From a wire format's name to a working client: what configuration files and flags need.

use std::sync::Arc;

use switchboard_wire::Format;

use crate::{AnthropicBackend, Backend, BackendConfig, BackendError, OllamaBackend, OpenAiBackend};

/// A client for a backend that speaks `format`.
pub fn connect(format: Format, config: BackendConfig) -> Result<Arc<dyn Backend>, BackendError> {
    Ok(match format {
        Format::OpenAi => Arc::new(OpenAiBackend::new(config)?),
        Format::Anthropic => Arc::new(AnthropicBackend::new(config)?),
        Format::Ollama => Arc::new(OllamaBackend::new(config)?),
    })
}

/// The ecosystem's environment conventions for a backend of this format
/// (`OPENAI_BASE_URL`/`OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`/`ANTHROPIC_API_KEY`, `OLLAMA_HOST`).
pub fn config_from_env(format: Format) -> BackendConfig {
    match format {
        Format::OpenAi => BackendConfig::openai_from_env(),
        Format::Anthropic => BackendConfig::anthropic_from_env(),
        Format::Ollama => BackendConfig::ollama_from_env(),
    }
}
