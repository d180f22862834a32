//! `switchboard check-args`: validates one call's arguments as the executor would.

use std::path::PathBuf;
use std::process::ExitCode;

use switchboard_tools::{Profile, Toolset};

use super::input::read_json;

/// Validate arguments for one tool: prints the validated arguments (defaults filled in),
/// or the exact `Error: …` text the model would receive.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON file holding an array of tool definitions.
    file: PathBuf,
    /// Name of the tool being called.
    tool: String,
    /// The arguments as the model wrote them (a JSON object; empty means `{}`).
    #[arg(default_value = "")]
    arguments: String,
    #[arg(long, default_value = "character", value_parser = ["character", "api"])]
    profile: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let list = read_json(&args.file)?;
    let profile = Profile::by_name(&args.profile)
        .ok_or_else(|| anyhow::anyhow!("unknown profile {}", args.profile))?;
    let toolset = Toolset::from_json(&list, &profile).map_err(|problems| {
        anyhow::anyhow!(
            "{} has invalid tool definitions:\n{problems}",
            args.file.display()
        )
    })?;
    match toolset.check_call(&args.tool, &args.arguments) {
        Ok(arguments) => {
            println!("{}", serde_json::Value::Object(arguments));
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            println!("{error}");
            Ok(ExitCode::FAILURE)
        }
    }
}
