//! The integration tests of `switchboard-server` as one test binary, so the crate and its
//! dependencies are linked once rather than once per file. Each module was a file of its own
//! under `tests/`; run one with `cargo test -p switchboard-server --test it access::`.
//! Fixtures and other data stay beside this folder, under `tests/`.
//!
//! `tests/limits.rs` and `tests/replicas.rs` stay binaries of their own: each has a test that
//! reads the process's metrics as its own (see their first lines).

mod access;
mod browser;
mod catalog;
mod characters;
mod characters_api;
mod common;
mod connections;
mod errors;
mod gateway_tools;
mod gateway_tools_sdk;
mod gemini;
mod gemini_cli;
mod hardening_credentials;
mod hardening_names;
mod hardening_stdio_exit;
mod hardening_tool_loop;
mod hardening_upstream_tools;
mod mcp;
mod mcp_codex;
mod mcp_conformance;
mod mcp_entries;
mod mcp_sessions;
mod mcp_upstreams;
mod messages;
mod messages_claude_code;
mod messages_sdk;
mod native;
mod ollama_api;
mod operations;
mod prompted;
mod real_backend;
mod reasoning_usage;
mod responses;
mod responses_codex;
mod responses_sdk;
mod sdk;
mod tool_search_characters;
mod tool_search_chat;
mod tool_search_claude_code;
mod tool_search_mcp;
mod tool_search_messages;
mod tool_search_real;
mod tool_search_responses;
mod validation;
