//! The integration tests of `switchboard` as one test binary, so the crate and its
//! dependencies are linked once rather than once per file. Each module was a file of its own
//! under `tests/`; run one with `cargo test -p switchboard --test it cli_access::`.
//! Fixtures and other data stay beside this folder, under `tests/`.

mod cli_access;
mod cli_characters;
mod cli_chat;
mod cli_chat_rounds;
mod cli_config;
mod cli_decode;
mod cli_mcp;
mod cli_mcp_bounds;
mod cli_mcp_claude_code;
mod cli_mcp_servers;
mod cli_parse;
mod cli_startup_rejections;
mod cli_tools;
mod cli_traces;
mod common;
mod deploy;
mod real_chat;
mod reliability;
mod replicas;
