//! Serves a catalog of tools over the Model Context Protocol, for any MCP client (Claude
//! Code, Codex, Cline, an SDK): Streamable HTTP, both protocol eras on one URL (the
//! stateless 2026-07-28 and the 2025-11-25 sessions installed clients still open), and stdio.
//!
//! What the tools are, who may see them and how a call runs is the catalog's business
//! ([`ToolCatalog`]); this crate knows the protocol: names clients and model APIs accept
//! (`switchboard_tools::names`), results and errors as MCP words them, and change
//! notifications.
//!
//! Built on `rmcp`, the official Rust SDK, which also checks the transport's rules
//! (`Origin` and `Host`, `Mcp-Method`/`Mcp-Name` against the body, protocol versions).
//!
//! It must not know characters, keys, upstream servers or the gateway's configuration: the
//! catalog is all it is given.

mod catalog;
mod handler;
mod http;
mod sessions;
mod shared;
mod stdio;

pub use catalog::{CallError, CatalogTool, ToolCatalog, ToolOutput};
pub use handler::{McpServer, ServerOptions};
pub use http::{HttpEndpoint, HttpOptions, HttpResponse, SessionOptions};
pub use sessions::{SessionLimits, SessionOwner};
pub use shared::{DirectoryError, SessionDirectory, SessionRecord, SharedSessions};
pub use stdio::{StdioError, serve_stdio};
