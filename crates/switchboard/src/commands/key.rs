//! `switchboard key new NAME`: a fresh client key for the gateway, printed once, with the
//! `[[key]]` block for `switchboard.toml` (which holds only the key's SHA-256).

use std::process::ExitCode;

/// Manage the gateway's client keys.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Print a new random key (`sk-sb-` and 40 letters and digits) and its `[[key]]` block.
    New {
        /// What logs and metrics will call the key: letters, digits, '-', '_' or '.'.
        name: String,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::New { name } => {
            let (key, block) = switchboard_access::new_key(&name)?;
            // The key on a line of its own, first, so a script can take it with `head -1`.
            println!("{key}");
            println!();
            println!(
                "# Give the key above to its client; it is not stored anywhere and is shown only once."
            );
            println!("# Add this to switchboard.toml (it holds only the key's SHA-256):");
            print!("{block}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
