//! The gateway: OpenAI-compatible chat completions with complete tool calling in front of
//! any backend (native or prompted tool calling), and characters over HTTP.

mod app;
mod character;
pub mod config;
pub mod error;
mod finisher;
mod handlers;
mod health;
mod ids;
mod pipeline;
mod prompted;
mod respond;
mod route;
mod state;
mod telemetry;
pub mod tool_checks;
mod validate;

pub use app::{RunningGateway, router, run, shutdown_signal};
pub use config::{Config, ConfigError};
pub use state::AppState;
