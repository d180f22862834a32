//! Where the repository's fixtures are: seeds are read from its working tree, so they follow
//! the fixtures as those change instead of being copied into a corpus.

use std::path::{Path, PathBuf};

/// The saved crash inputs, one directory per target, relative to the repository root.
pub const REGRESSIONS: &str = "fuzz/regressions";

/// The repository root (this crate lives in `crates/switchboard-fuzz`).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The contents of a file given relative to the repository root.
pub(crate) fn read(relative: &str) -> std::io::Result<Vec<u8>> {
    std::fs::read(repository().join(relative))
}

/// The files under `relative` (recursively) whose name ends with `suffix`, sorted.
pub(crate) fn files(relative: &str, suffix: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![repository().join(relative)];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The parser fixtures: a header line with the tools, then one case per line.
pub(crate) fn parser_fixtures() -> std::io::Result<Vec<serde_json::Value>> {
    let text = read("crates/switchboard-parsers/tests/fixtures/own.jsonl")?;
    serde_json::Deserializer::from_slice(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(std::io::Error::other)
}
