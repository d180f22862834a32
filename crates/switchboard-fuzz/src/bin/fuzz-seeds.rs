//! Writes each fuzz target's seeds, built from the repository's fixtures, into
//! `DIR/<target>/` (emptied first), for `scripts/fuzz` to hand to libFuzzer.
#![allow(clippy::print_stderr)] // a command-line tool reports its failure

use std::path::Path;
use std::process::ExitCode;

fn write(root: &Path) -> std::io::Result<()> {
    for target in switchboard_fuzz::TARGETS {
        let dir = root.join(target.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        for (number, seed) in (target.seeds)()?.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{number:04}")), seed)?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: fuzz-seeds DIR");
        return ExitCode::from(2);
    };
    match write(Path::new(&root)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fuzz-seeds: {error}");
            ExitCode::FAILURE
        }
    }
}
