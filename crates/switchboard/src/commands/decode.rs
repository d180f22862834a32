//! `switchboard decode`: turns a captured raw response body (SSE, NDJSON or a JSON answer,
//! exactly as a backend sent it) into one OpenAI chat-completion object, for users
//! debugging what their backend really said.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use switchboard_wire::ids::IdSource;
use switchboard_wire::{Format, decode_body, openai};

/// Decode a captured backend response body and print the collected answer as OpenAI JSON.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The wire format of the body.
    #[arg(long, value_parser = ["openai", "anthropic", "ollama"])]
    provider: String,
    /// File holding the raw body (`-` or nothing for standard input).
    #[arg(default_value = "-")]
    file: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let format = Format::from_name(&args.provider)
        .ok_or_else(|| anyhow::anyhow!("unknown provider {}", args.provider))?;
    let mut body = Vec::new();
    if args.file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut body)
            .context("cannot read standard input")?;
    } else {
        body = std::fs::read(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?;
    }
    match decode_body(format, &body, IdSource::random()) {
        Ok(response) => {
            let completion = openai::completion(&response, "chatcmpl-decoded", "", 0);
            println!("{}", serde_json::to_string_pretty(&completion)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("{}: {error}", args.file.display());
            Ok(ExitCode::FAILURE)
        }
    }
}
