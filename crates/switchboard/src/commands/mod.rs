//! One module per subcommand. Each has `Args` (clap) and `run(Args) -> anyhow::Result<ExitCode>`:
//! `Ok` carries the command's own verdict (0 fine, 1 problems found), `Err` is a failure of
//! the command itself (unreadable file, bad flag), which `main` reports with exit code 2.

pub mod backend;
pub mod call;
pub mod chat;
pub mod check;
pub mod check_args;
pub mod check_config;
pub mod decode;
pub mod input;
pub mod key;
pub mod mcp;
pub mod parse;
pub mod prompt;
pub mod serve;
pub mod telemetry;
pub mod tool_servers;
pub mod validate;
