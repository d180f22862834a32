//! The MCP servers the character commands (`check`, `prompt`, `call`, `chat`) know: the
//! `[[mcp_server]]` entries of the configuration `serve` reads (`--config`,
//! `$SWITCHBOARD_CONFIG`, else `./switchboard.toml` when it exists), so that a character
//! declaring `MCP_SERVERS` is checked and runs as the gateway would run it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use switchboard_characters::{Character, LoadOptions};
use switchboard_server::{Config, McpServerConfig, ToolServers};

/// How long a command waits for the servers a character uses to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(60);

/// The configuration file whose MCP servers the command knows.
#[derive(Debug, clap::Args)]
pub struct ConfigFile {
    /// Configuration file whose [[mcp_server]] entries characters may use (default:
    /// ./switchboard.toml when it exists).
    #[arg(long, env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ConfigFile {
    /// The configuration, or `None` without a file.
    pub fn load(&self) -> anyhow::Result<Option<Config>> {
        let default_file = Path::new("switchboard.toml");
        let file = self
            .config
            .clone()
            .or_else(|| default_file.exists().then(|| default_file.to_owned()));
        let Some(file) = file else {
            return Ok(None);
        };
        Ok(Some(Config::from_file(&file)?))
    }

    /// The `[[mcp_server]]` entries, or `None` without a configuration file (then
    /// characters' `MCP_SERVERS` names are not checked against a list).
    pub fn mcp_servers(&self) -> anyhow::Result<Option<Vec<McpServerConfig>>> {
        Ok(self.load()?.map(|config| config.mcp_servers))
    }

    /// The loading options that check characters' `MCP_SERVERS` against the configuration.
    pub fn load_options(&self) -> anyhow::Result<LoadOptions> {
        Ok(LoadOptions {
            mcp_servers: self
                .mcp_servers()?
                .map(|servers| servers.into_iter().map(|server| server.name).collect()),
            ..LoadOptions::default()
        })
    }
}

/// Starts the servers `character` declares (within a Tokio runtime), and only those, and
/// waits for each to connect; one that cannot is reported and left to fail its calls with
/// that reason.
pub async fn start_declared(
    config: &ConfigFile,
    character: &Character,
) -> anyhow::Result<ToolServers> {
    let declared: Vec<McpServerConfig> = config
        .mcp_servers()?
        .unwrap_or_default()
        .into_iter()
        .filter(|server| character.mcp_server(&server.name).is_some())
        .collect();
    let servers = ToolServers::build(&declared, &|name| std::env::var(name).ok(), None)
        .map_err(|problems| anyhow::anyhow!("{}", problems.join("\n")))
        .context("starting the character's MCP servers")?;
    for server in servers.all() {
        match tokio::time::timeout(CONNECT_WAIT, server.ready()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => eprintln!("warning: {error}"),
            Err(_) => eprintln!(
                "warning: tool server {} did not connect within {} s",
                server.name,
                CONNECT_WAIT.as_secs()
            ),
        }
    }
    Ok(servers)
}
