//! Scripted LLM backends for tests: an HTTP/1.1 server on 127.0.0.1 that answers each
//! connection with the next scripted reply, byte for byte, in a chosen chunking, and records
//! every request. Also, for the real-backend suite, the launcher of the real model server it
//! runs against ([`LlamaServer`]) and a relay that shows what reached it ([`Tap`]); and a
//! real Redis server for shared-state tests; and [`peers`], which decides what a test does
//! when a program it drives is missing. Only tests depend on this crate.
//!
//! It must not be a dependency of product code: doubles and peers for tests and benches
//! only.
// A test double fails loudly: a panic here is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod anthropic;
mod claude;
mod llama;
pub mod mcp;
mod nginx;
mod npm;
mod ollama;
mod openai;
pub mod peers;
mod process;
mod redis;
mod server;
mod tap;

pub use anthropic::AnthropicScript;
pub use claude::claude_code;
pub use llama::LlamaServer;
pub use nginx::Nginx;
pub use npm::{cache_dir, npm_package};
pub use ollama::OllamaScript;
pub use openai::{OpenAiScript, last_message, message_text, sse_body, tool_names};
pub use process::rss_mib;
pub use redis::RedisServer;
pub use server::{Captured, Chunking, Reply, ScriptedServer};
pub use tap::Tap;
