//! The `switchboard` binary: parses the command line and hands each command to its module.
//! Output is this binary's job, so printing is allowed here and nowhere below it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod memory;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the system allocator: a gateway makes many small allocations on
/// several threads, and glibc's malloc spent microseconds per request there (consolidating
/// its free lists whenever a buffer of a kilobyte or more was asked for); `gateway_latency`
/// measured a quarter less added latency with mimalloc. Built with `no_thp`: mimalloc
/// otherwise asks for transparent huge pages, and faulting those in stalled requests.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Tool-calling runtime and gateway: Chat Completions, Anthropic Messages and Responses in front of any backend, and characters that carry their own tools"
)]
struct Cli {
    #[command(flatten)]
    characters: commands::check::CharactersDir,
    #[command(subcommand)]
    command: Command,
}

/// In the order a user reaches for them: `--help` lists them so.
#[derive(Debug, Subcommand)]
enum Command {
    Serve(commands::serve::Args),
    Chat(commands::chat::Args),
    Check(commands::check::Args),
    Call(commands::call::Args),
    Mcp(commands::mcp::Args),
    Prompt(commands::prompt::Args),
    CheckConfig(commands::check_config::Args),
    Key(commands::key::Args),
    Validate(commands::validate::Args),
    CheckArgs(commands::check_args::Args),
    Parse(commands::parse::Args),
    Decode(commands::decode::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Validate(args) => commands::validate::run(args),
        Command::CheckArgs(args) => commands::check_args::run(args),
        Command::Parse(args) => commands::parse::run(args),
        Command::Check(args) => commands::check::run(args, &cli.characters),
        Command::Call(args) => commands::call::run(args, &cli.characters),
        Command::Mcp(args) => commands::mcp::run(args, &cli.characters),
        Command::Prompt(args) => commands::prompt::run(args, &cli.characters),
        Command::Decode(args) => commands::decode::run(args),
        Command::Chat(args) => commands::chat::run(args, &cli.characters),
        Command::Serve(args) => commands::serve::run(args, &cli.characters),
        Command::CheckConfig(args) => commands::check_config::run(args, &cli.characters),
        Command::Key(args) => commands::key::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
