//! Reading the files commands are given, with errors that name the file.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// Reads a file (or standard input for `-`) as text.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        return std::io::read_to_string(std::io::stdin()).context("cannot read standard input");
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads and parses a JSON file; the error names the file, line and column.
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = read_text(path)?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}
