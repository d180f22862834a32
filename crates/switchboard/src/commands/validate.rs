//! `switchboard validate`: checks a JSON array of tool definitions under a profile.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use switchboard_tools::{Profile, validate_tools};

use super::input::read_json;

/// Validate a JSON array of tool definitions and report every problem with its path.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    tools: ToolsFile,
}

/// A tool list on disk and the rules it is held to; shared with `check-args`.
#[derive(Debug, clap::Args)]
pub struct ToolsFile {
    /// JSON file holding an array of tool definitions (`-` for standard input).
    pub file: PathBuf,
    /// Which rules apply: `character` (tools in character files) or `api` (tools in API requests).
    #[arg(long, default_value = "character", value_parser = ["character", "api"])]
    pub profile: String,
}

impl ToolsFile {
    pub fn read(&self) -> anyhow::Result<(Value, Profile)> {
        let list = read_json(&self.file)?;
        let profile = Profile::by_name(&self.profile)
            .ok_or_else(|| anyhow::anyhow!("unknown profile {}", self.profile))?;
        Ok((list, profile))
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (list, profile) = args.tools.read()?;
    match validate_tools(&list, &profile) {
        Ok(tools) => {
            let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
            let noun = if names.len() == 1 { "tool" } else { "tools" };
            println!("{} {noun} OK: {}", names.len(), names.join(", "));
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => {
            for problem in &problems.0 {
                println!("{problem}");
            }
            eprintln!(
                "{}: {} problems",
                args.tools.file.display(),
                problems.0.len()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
