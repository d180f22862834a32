//! Target `characters`: a JavaScript source through the character loader (QuickJS evaluation
//! under its limits, then the inspection of every export). A file must either load or be
//! rejected with at least one problem named.
//!
//! Input: the source (lossy UTF-8), written as the only file of a characters directory.

use std::sync::LazyLock;
use std::time::Duration;

use switchboard_characters::{LoadOptions, load_characters};
use tempfile::TempDir;

use crate::{Finding, repo};

/// The characters directory this process loads from; the file is rewritten per input.
static DIRECTORY: LazyLock<Result<TempDir, String>> = LazyLock::new(|| {
    tempfile::Builder::new()
        .prefix("switchboard-fuzz-characters")
        .tempdir()
        .map_err(|error| format!("cannot create a characters directory: {error}"))
});

/// The documented limits, but a shorter load deadline: each input is one load, and a
/// top-level loop (a sure way to reach the deadline) must not slow the fuzzer tenfold.
fn options() -> LoadOptions {
    LoadOptions {
        load_timeout: Duration::from_millis(200),
        ..LoadOptions::default()
    }
}

pub(crate) fn check(data: &[u8]) -> Result<(), Finding> {
    let directory = DIRECTORY
        .as_ref()
        .map_err(|error| Finding::Setup(error.clone()))?;
    let source = String::from_utf8_lossy(data);
    std::fs::write(directory.path().join("fuzzed.js"), source.as_bytes())
        .map_err(|error| Finding::Setup(format!("cannot write the character: {error}")))?;
    let loaded = load_characters(directory.path(), &options());
    match (loaded.characters.len(), loaded.rejections.as_slice()) {
        (1, []) => Ok(()),
        (0, [rejection]) if !rejection.problems.is_empty() => Ok(()),
        (characters, rejections) => Err(Finding::broken(
            "character loader",
            format!("one file gave {characters} characters and these rejections: {rejections:?}"),
        )),
    }
}

/// Every character file in the repository: the shipped ones and the loader's test fixtures
/// (broken ones included, top-level loop and escaping imports among them).
pub(crate) fn seeds() -> std::io::Result<Vec<Vec<u8>>> {
    let mut files = repo::files("characters", ".js")?;
    files.extend(repo::files(
        "crates/switchboard-characters/tests/fixtures",
        ".js",
    )?);
    files.iter().map(std::fs::read).collect()
}
