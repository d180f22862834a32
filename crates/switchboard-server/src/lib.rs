//! The gateway: Chat Completions with complete tool calling in front of any backend
//! (native or prompted tool calling), and characters over HTTP.
//!
//! - `api/`: one front-end per served API; each parses its request into the pipeline's
//!   request model and renders the pipeline's outputs in its own format;
//! - `pipeline/`: the one path every request takes: route or character, tool calling,
//!   checks on the model's calls;
//! - `upstream/`: the backends (routes) and their health;
//! - `mcp`: characters' tools served over MCP;
//! - `access/`: client keys, the routes each may use, and rate limits;
//! - `store`: responses kept for `previous_response_id`, in memory or in Redis;
//! - `connections`: accepting and serving client connections under their limits;
//! - `traces`: the spans exported over OpenTelemetry when the binary turns that on;
//! - `redis_link`: the Redis connection replicas share state through.

pub mod access;
mod api;
mod app;
pub mod config;
mod connections;
pub mod error;
mod h2c;
mod ids;
pub mod mcp;
mod pipeline;
mod redis_link;
mod state;
mod store;
mod telemetry;
pub mod traces;
mod upstream;

pub use app::{RunningGateway, router, run, shutdown_signal};
pub use config::{Config, ConfigError, Problems};
pub use pipeline::tool_checks;
pub use state::{AppState, Live, Reloaded};
