//! Uses the tools of upstream MCP servers (Model Context Protocol), so the gateway can offer
//! them to models: a child process over stdio or a Streamable HTTP endpoint, of either
//! protocol era (the stateless 2026-07-28 probed with `server/discover`, older servers with
//! an `initialize` session).
//!
//! An [`Upstream`] keeps its connection (restarting a child that exits, reopening an HTTP
//! session that expired), lists its tools through an allow-list, and runs calls under a
//! deadline with results bounded in size: a tool server that hangs, floods or crashes costs
//! its own calls a clear error, never the gateway a hang or its memory.
//!
//! Built on `rmcp`, the official Rust SDK, on its client side.
//!
//! It must not know the gateway's configuration file, keys or front-ends: an upstream is a
//! plain `UpstreamConfig`.

mod config;
mod deep;
mod error;
mod fault;
mod handler;
mod output;
mod session_client;
mod stdio;
mod upstream;

pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_TOOLS, MAX_LIST_PAGES,
    Transport, UpstreamConfig,
};
pub use error::UpstreamError;
pub use output::{CallOutput, Media, MediaKind};
pub use upstream::{Upstream, UpstreamState, UpstreamTool};
