//! Characters: JavaScript character files that give a voice character its prompt and its own
//! tools without touching Switchboard's code. Each file is loaded once into a sandboxed
//! QuickJS runtime on a thread of its own; every tool call goes through one executor that
//! validates, dispatches, enforces a hard timeout and a memory limit, and counts the outcome.
//! A registry holds the current set, reloads it (all of it, or the files just saved, as its
//! directory watcher sees them) and keeps a broken file's last good version running.
//!
//! It must not know models, backends, HTTP or the MCP protocol: a character is its file, its
//! sandbox and its tools (the servers it names are names).

mod character;
mod clock;
mod console;
mod engine;
mod exception;
mod inspect;
mod load;
mod mcp;
mod metrics;
mod options;
mod registry;
mod rejection;
mod sandbox;
mod session;
mod watch;

pub use character::Character;
pub use load::{Loaded, load_characters};
pub use mcp::McpServerUse;
pub use metrics::TOOL_LATENCY_BUCKETS;
pub use options::LoadOptions;
pub use registry::CharacterRegistry;
pub use rejection::{Location, Problem, Rejection};
pub use session::{CharacterSession, SessionError};
pub use watch::{CharacterWatcher, WatchError};
