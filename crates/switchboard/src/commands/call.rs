//! `switchboard call`: runs one tool of a character through exactly the path a conversation
//! uses (validation, sandbox, timeout, truncation) and prints what the model would receive,
//! so a character developer can try a tool without a model or a server.

use std::process::ExitCode;

use switchboard_runtime::ToolExecutor;
use switchboard_server::{CharacterToolbox, ToolFilter};
use switchboard_tools::ToolCall;

use super::check::{CharactersDir, find_character, runtime};
use super::telemetry::init_character_logs;
use super::tool_servers::{ConfigFile, start_declared};

/// Call one tool of a character on a fresh conversation and print the result.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The character: its CHARACTER_NAME or file stem (case-insensitive).
    character: String,
    /// The tool's name.
    tool: String,
    /// The arguments, as the model would write them (a JSON object); none means `{}`.
    arguments: Option<String>,
    #[command(flatten)]
    config: ConfigFile,
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let character = find_character(
        characters.path(),
        &args.character,
        &args.config.load_options()?,
    )?;
    let call = ToolCall {
        id: "call_cli".to_owned(),
        name: args.tool,
        arguments: args.arguments.unwrap_or_default(),
    };
    let result = runtime()?.block_on(async {
        let servers = start_declared(&args.config, &character).await?;
        if servers.all().is_empty() {
            return anyhow::Ok(character.run_tool(&call).await?);
        }
        // A tool of the character's MCP servers, or its own, as its conversation runs them.
        let session = character.start_conversation().await?;
        let toolbox = CharacterToolbox::new(session, servers.all(), &ToolFilter::all());
        anyhow::Ok(toolbox.call(&call).await)
    })?;
    println!("{}", result.content);
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
