//! `switchboard mcp`: serves the characters' tools over MCP on stdin and stdout, for
//! clients that spawn their servers (`claude mcp add switchboard -- switchboard mcp
//! --characters DIR`). Tools are named as at the gateway's `/mcp`, run as it runs them,
//! and follow the folder: a saved file changes the list (clients that listen are told).
//! Log lines go to stderr; stdout carries the protocol alone.

use std::process::ExitCode;
use std::sync::Arc;

use switchboard_characters::{CharacterRegistry, LoadOptions};
use switchboard_mcp::McpServer;
use switchboard_server::mcp::{McpCatalog, server_options};

use super::check::CharactersDir;
use super::telemetry::init_character_logs;

/// Serve the characters' tools over MCP on stdin and stdout.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The longest tool name served; longer ones are shortened with a hash (64 is what model
    /// APIs accept, less what a client puts in front, such as Claude Code's `mcp__NAME__`).
    #[arg(long, default_value_t = switchboard_tools::names::DEFAULT_MAX_CHARS as u16,
        value_parser = clap::value_parser!(u16).range(switchboard_tools::names::MIN_MAX_CHARS as i64..=64))]
    max_name_chars: u16,
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let dir = characters.path();
    let registry = Arc::new(CharacterRegistry::load(dir, LoadOptions::default()));
    let loaded = registry.current();
    tracing::info!(
        "characters from {}: {} loaded, {} rejected; serving their tools over MCP on stdio",
        dir.display(),
        loaded.characters.len(),
        loaded.rejections.len()
    );
    let server = McpServer::new(
        Arc::new(McpCatalog::new(Arc::clone(&registry))),
        server_options(usize::from(args.max_name_chars)),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Kept while serving: dropping it stops following the folder.
        let _watching = registry
            .watch()
            .inspect_err(|error| tracing::warn!("not following {}: {error}", dir.display()))
            .ok();
        switchboard_mcp::serve_stdio(server).await
    })?;
    Ok(ExitCode::SUCCESS)
}
