//! The one pipeline every API front-end feeds. A front-end parses its own request format
//! into a [`GatewayRequest`] (the gateway's own request model); the pipeline sends it to a
//! route's backend (native or prompted tool calling) or plays a character, and hands back a
//! channel of [`Output`]s that the front-end renders, whole or streamed, in its own format.
//! No front-end knows about another, and no backend format knows about a front-end.
//!
//! It owns the tool sources the gateway runs tools from (`tool_servers`: upstream MCP
//! servers and characters' toolboxes) and their one catalog (`catalog`: which tools a key
//! may use and their names, for `/mcp`, characters and requests alike), the tool calls'
//! ids, and its own errors
//! ([`PipelineError`]). It must not know HTTP servers, any API's error shape, or the
//! configuration file: the server builds a [`Pipeline`] from plain settings.

pub mod allowed_urls;
pub mod catalog;
mod character;
mod collect;
mod completion;
mod count;
mod error;
mod finisher;
mod gateway_tools;
pub mod ids;
mod output;
mod pipeline;
mod prompted;
mod repair;
mod target;
pub mod tool_checks;
mod tool_loop;
pub mod tool_search;
pub mod tool_servers;
mod tools;
pub mod trace_context;

pub use collect::{Answer, collect_with};
pub use completion::Limits;
pub use count::{TokenCount, estimate_text, estimate_tokens};
pub use error::PipelineError;
pub use gateway_tools::{ApprovalAnswer, Asked, GatewayTool, GatewayTools, ToolFilter};
pub use output::{GatewayEvent, Output, Outputs};
pub use pipeline::{GatewayRequest, Pipeline, Settings, Started};
pub use target::{CharacterId, Target};
pub use tools::{compile_converted, compile_tools, report_kept as report_kept_tools};
