//! HTTP clients for LLM backends (OpenAI-compatible, Anthropic, Ollama) behind one
//! `Backend` trait: a request in our model in, a stream of our events out, whatever the
//! backend speaks. Everything format-specific lives in `switchboard-wire`; this crate adds
//! connections, timeouts, the reopen of a stale connection and typed errors (retries are the
//! caller's: `switchboard-upstream` pools them with one back-off).
//!
//! It must not know the gateway, its configuration file or its front-ends: a backend is a
//! URL, a key and a format.

mod anthropic;
mod backend;
mod config;
mod connect;
mod error;
mod ollama;
mod openai;
mod secrets;
mod tokens;
mod transport;

pub use anthropic::AnthropicBackend;
pub use backend::{Backend, EventStream, complete};
pub use config::{BackendConfig, HeaderHook};
pub use connect::{config_from_env, connect};
pub use error::{BackendError, ConnectionFailure, RetryClass, TimeoutPhase};
pub use ollama::OllamaBackend;
pub use openai::OpenAiBackend;
pub use secrets::shown_url;
