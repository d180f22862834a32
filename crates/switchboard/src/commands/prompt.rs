//! `switchboard prompt`: prints the system prompt a new conversation with a character gets,
//! made by the character's own code exactly as the gateway makes it.

use std::process::ExitCode;

use super::check::{CharactersDir, find_character, runtime};
use super::telemetry::init_character_logs;
use super::tool_servers::ConfigFile;

/// Print the system prompt of a new conversation with a character.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The character: its CHARACTER_NAME or file stem (case-insensitive).
    character: String,
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
    let session = runtime()?.block_on(character.start_conversation())?;
    println!("{}", session.system_prompt());
    Ok(ExitCode::SUCCESS)
}
