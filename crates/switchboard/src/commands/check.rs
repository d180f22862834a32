//! `switchboard check`: loads a characters directory the way the gateway does and reports
//! what loaded and every reason a file was refused, so a character developer finds all
//! mistakes in one run. Also home of what the character commands share: the directory
//! flag, the log output of character code, and finding a character by name.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use switchboard_characters::{Character, LoadOptions, Loaded, load_characters};

use super::telemetry::init_character_logs;
use super::tool_servers::ConfigFile;

/// Load a characters directory and report every character and every rejection.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to check (overrides --characters).
    #[arg(value_name = "DIR")]
    directory: Option<PathBuf>,
    #[command(flatten)]
    config: ConfigFile,
}

/// Where characters are loaded from: a flag of the whole command line, given before or
/// after the subcommand, since every command that loads characters reads it.
#[derive(Debug, clap::Args)]
pub struct CharactersDir {
    /// Directory of character files (*.js) for the commands that load characters
    /// [default: characters; for serve, its configuration's].
    #[arg(
        long = "characters",
        env = "SWITCHBOARD_CHARACTERS",
        value_name = "DIR",
        global = true
    )]
    pub dir: Option<PathBuf>,
}

impl CharactersDir {
    /// The directory given, or `characters` in the current directory.
    pub fn path(&self) -> &Path {
        self.dir.as_deref().unwrap_or(Path::new("characters"))
    }
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    init_character_logs();
    let dir = args
        .directory
        .unwrap_or_else(|| characters.path().to_owned());
    let loaded = load_characters(&dir, &args.config.load_options()?);
    print_table(&loaded);
    for rejection in &loaded.rejections {
        println!();
        println!("REJECTED {}", rejection.file.display());
        for problem in &rejection.problems {
            println!("  - {}", problem.message.replace('\n', "\n    "));
        }
    }
    println!();
    println!(
        "{}: {} loaded, {} rejected",
        dir.display(),
        loaded.characters.len(),
        loaded.rejections.len()
    );
    Ok(if loaded.rejections.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_table(loaded: &Loaded) {
    let rows: Vec<[String; 3]> = loaded
        .characters
        .iter()
        .map(|character| {
            let name = if character.is_listed() {
                character.name().to_owned()
            } else {
                format!("{} (hidden)", character.name())
            };
            let file = character
                .file()
                .file_name()
                .map_or_else(String::new, |file| file.to_string_lossy().into_owned());
            let tools: Vec<&str> = character
                .tools()
                .tools()
                .iter()
                .map(|tool| tool.name())
                .collect();
            [
                name,
                file,
                if tools.is_empty() {
                    "-".to_owned()
                } else {
                    tools.join(", ")
                },
            ]
        })
        .collect();
    let header = ["NAME".to_owned(), "FILE".to_owned(), "TOOLS".to_owned()];
    let width = |column: usize| {
        rows.iter()
            .chain([&header])
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name_width, file_width) = (width(0), width(1));
    for row in std::iter::once(&header).chain(&rows) {
        println!("{:name_width$}  {:file_width$}  {}", row[0], row[1], row[2]);
    }
}

/// Loads `dir` (with `options`) and finds the character `query` names (its CHARACTER_NAME
/// or file stem, ignoring case). Other files' rejections are mentioned, not fatal.
pub fn find_character(
    dir: &Path,
    query: &str,
    options: &LoadOptions,
) -> anyhow::Result<Arc<Character>> {
    let loaded = load_characters(dir, options);
    if !loaded.rejections.is_empty() {
        eprintln!(
            "warning: {} file(s) in {} were rejected; run `switchboard check {}` for the reasons",
            loaded.rejections.len(),
            dir.display(),
            dir.display()
        );
    }
    pick_character(&loaded, dir, query)
}

/// The character `query` names among those loaded from `dir`, or an error listing them.
pub fn pick_character(loaded: &Loaded, dir: &Path, query: &str) -> anyhow::Result<Arc<Character>> {
    if let Some(character) = loaded.get(query) {
        return Ok(Arc::clone(character));
    }
    let known: Vec<String> = loaded
        .characters
        .iter()
        .map(|character| {
            let stem = character
                .file()
                .file_stem()
                .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
            format!("{} ({stem})", character.name())
        })
        .collect();
    anyhow::bail!(
        "no character named {query:?} in {}; loaded: {}",
        dir.display(),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )
}

/// A single-threaded async runtime for one command; character code runs on its own threads.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
