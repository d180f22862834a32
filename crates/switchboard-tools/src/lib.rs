//! The tool model every part of Switchboard shares: definitions, calls, results and
//! messages in OpenAI's shape; validation of tool lists under a profile; argument and
//! result checking with validators compiled once; Rust functions as tools (`#[tool]`); and
//! the names tools are served under ([`names`]).
//!
//! It must not know any wire format, backend or server: every other crate builds on it.

mod call;
mod defaults;
mod definition;
mod message;
pub mod names;
mod problem;
mod profile;
mod schema;
mod tool;
mod toolset;
mod validate;

#[doc(hidden)]
pub mod __private {
    pub use crate::generate::*;
}
mod generate;

pub use call::{ToolCall, ToolResult};
pub use definition::{FunctionDefinition, ToolDefinition, ToolKind};
pub use message::{Content, Message};
pub use problem::{MAX_QUOTED_CHARS, Problem, Problems, quote, quote_value, truncate_message};
pub use profile::{Profile, ProfileKind};
pub use schema::{SchemaSize, schema_size};
pub use switchboard_macros::tool;
pub use tool::{FnTool, Tool, ToolError, Toolbox};
pub use toolset::{CallError, CompiledTool, MAX_MESSAGE_CHARS, Toolset};
pub use validate::validate_tools;
