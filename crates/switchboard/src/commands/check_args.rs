//! `switchboard check-args`: validates one call's arguments as the executor would.

use std::process::ExitCode;

use switchboard_tools::Toolset;

use super::validate::ToolsFile;

/// Validate arguments for one tool: prints the validated arguments (defaults filled in),
/// or the exact `Error: …` text the model would receive.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    tools: ToolsFile,
    /// Name of the tool being called.
    tool: String,
    /// The arguments as the model wrote them (a JSON object; empty means `{}`).
    #[arg(default_value = "")]
    arguments: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (list, profile) = args.tools.read()?;
    let toolset = Toolset::from_json(&list, &profile).map_err(|problems| {
        anyhow::anyhow!(
            "{} has invalid tool definitions:\n{problems}",
            args.tools.file.display()
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
