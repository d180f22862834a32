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
//! - `pipeline/`: the one path every request takes: route or character, tool calling,
//!   checks on the model's calls;
//! - the parts, which know neither the file nor the front-ends: the `switchboard-upstream`
//!   crate (routes, replica pools, health), the `switchboard-access` crate (keys and
//!   limits), `store` (stored responses), `tool_servers/` (upstream MCP servers as a tool
//!   source), `connections` (client connections under their limits);
//! - the leaves: `error`, `ids`, `traces`, `telemetry`, `h2c`, and the `switchboard-redis`
//!   crate (the Redis link the limits and the store share).
//!
//! It must not know how the binary parses its command line or prints.

mod api;
mod app;
pub mod config;
mod connections;
mod h2c;
mod ids;
mod pipeline;
mod state;
mod store;
mod telemetry;
mod tool_servers;
pub mod traces;

pub use api::mcp;
pub use app::{RunningGateway, router, run, shutdown_signal};
pub use config::{Config, ConfigError, ConfigProblems};
pub use pipeline::tool_checks;
pub use state::{AppState, Reloaded, Snapshot};
pub use tool_servers::{CharacterToolbox, McpServerConfig, ToolServer, ToolServers};
