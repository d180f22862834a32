//! The gateway: Chat Completions, Anthropic Messages and OpenAI Responses with complete
//! tool calling in front of any backend (native or prompted tool calling), characters over
//! HTTP, and their tools over MCP.
//!
//! Layers, each importing only those below it (`docs/architecture.md` draws them):
//! - `app`: the router and serving;
//! - `api/`: the front-ends, listed in `api::FRONT_ENDS`, with the access gate and the
//!   caller they share;
//! - `state`: what the handlers share; one configuration snapshot swapped whole on reload;
//! - `config`: the file's schema, which converts into each part's settings;
//! - the `switchboard-pipeline` crate: the one path every request takes (route or
//!   character, tool calling, checks on the model's calls, the tool loop) with its tool
//!   sources (upstream MCP servers, characters' toolboxes) and call ids;
//! - the parts, which know neither the file nor the front-ends: the `switchboard-upstream`
//!   crate (routes, replica pools, health), the `switchboard-access` crate (keys and
//!   limits), `store` (stored responses), `connections` (client connections under their
//!   limits);
//! - the leaves: `traces`, `telemetry`, `h2c`, and the `switchboard-redis` crate (the Redis
//!   link the limits and the store share).
//!
//! It must not know how the binary parses its command line or prints.

mod api;
mod app;
pub mod config;
mod connections;
pub mod drain;
mod h2c;
mod mcp_sessions;
mod state;
mod store;
mod telemetry;
pub mod traces;

pub use api::mcp;
pub use app::{RunningGateway, router, run, shutdown_signal};
pub use config::{Config, ConfigError, ConfigProblems};
pub use state::{AppState, Reloaded, Snapshot};
pub use switchboard_pipeline::ToolFilter;
pub use switchboard_pipeline::tool_servers::{
    CharacterToolbox, McpServerConfig, ToolServer, ToolServers,
};
