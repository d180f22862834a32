//! `switchboard check-config`: reads a configuration the way `serve` does and builds
//! everything it describes (route clients, keys with their `key_env` variables, the
//! characters) without listening or contacting a backend or Redis, then names every
//! problem, or says what would be served.

use std::path::PathBuf;
use std::process::ExitCode;

use switchboard_server::{AppState, ConfigError, ConfigProblems};

use super::check::{CharactersDir, runtime};
use super::serve::{Overrides, Source, environment};
use super::telemetry::init_character_logs;

/// Check a gateway configuration and report every problem with its key path.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (default: ./switchboard.toml when it exists, else the
    /// configuration `serve` makes from the environment).
    #[arg(env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    file: Option<PathBuf>,
    /// `serve`'s flags and variables, which `serve` would apply over the file.
    #[command(flatten)]
    overrides: Overrides,
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let source = Source::new(args.file, args.overrides, characters);
    let name = source.name();
    let config = match source.load() {
        Ok(config) => config,
        Err(ConfigError::Invalid { problems, .. }) => return Ok(report(&name, &problems)),
        Err(read) => return Err(read.into()),
    };
    // Within a runtime: MCP servers start connecting in the background (and are stopped
    // when the check ends), as `serve` would start them.
    let built = runtime()?.block_on(async { AppState::build(&config, &environment) });
    let state = match built {
        Ok(state) => state,
        Err(problems) => return Ok(report(&name, &problems)),
    };
    let loaded = state.characters.current();
    let rejected = ConfigProblems(
        loaded
            .rejections
            .iter()
            .flat_map(|rejection| {
                rejection
                    .problems
                    .iter()
                    .map(|problem| format!("{}: {}", rejection.file.display(), problem.message))
            })
            .collect(),
    );
    if !rejected.0.is_empty() {
        return Ok(report(&name, &rejected));
    }
    let live = state.snapshot();
    let routes: Vec<&str> = live
        .pipeline
        .routes
        .all()
        .iter()
        .map(|route| route.name.as_str())
        .collect();
    println!("{name}: OK");
    println!("listen: {}", config.listen);
    println!(
        "routes: {}{}",
        routes.len(),
        if routes.is_empty() {
            String::new()
        } else {
            format!(" ({})", routes.join(", "))
        }
    );
    println!("keys: {}", live.access.key_names().count());
    if !config.mcp_servers.is_empty() {
        println!(
            "mcp servers: {} ({})",
            config.mcp_servers.len(),
            config.mcp_server_names().join(", ")
        );
    }
    println!(
        "characters: {} loaded from {}",
        loaded.characters.len(),
        config.characters_dir().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every problem on a line of its own (continuation lines indented), then the count.
fn report(name: &str, problems: &ConfigProblems) -> ExitCode {
    for problem in &problems.0 {
        println!("{}", problem.replace('\n', "\n    "));
    }
    eprintln!("{name}: {} problem(s)", problems.0.len());
    ExitCode::FAILURE
}
