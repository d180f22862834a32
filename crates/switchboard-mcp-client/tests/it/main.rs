//! The MCP client against real peers on loopback: the reference servers from npm and a
//! Python server on the official SDK, and small fault servers written by the tests.
//! One test binary; each area is a module.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

mod common;
mod deep_tools;
mod faults;
mod http_session;
mod listing_bounds;
mod npm_servers;
mod python_sdk;
mod transport_faults;
