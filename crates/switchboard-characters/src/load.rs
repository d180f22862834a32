//! Loading a characters directory: every `*.js` directly in it, in name order, each on its
//! own engine thread (so files load in parallel); a rejected file never stops the others.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::character::{self, Character};
use crate::engine::{self, LoadReport};
use crate::metrics;
use crate::options::LoadOptions;
use crate::rejection::{LoadProblem, Rejection, kind};

/// The outcome of loading a directory: what loaded, and every file that did not with why.
#[derive(Debug, Default)]
pub struct Loaded {
    pub characters: Vec<Arc<Character>>,
    pub rejections: Vec<Rejection>,
}

impl Loaded {
    /// The character `query` names: its `CHARACTER_NAME` first, then its file stem,
    /// ignoring case.
    pub fn get(&self, query: &str) -> Option<&Arc<Character>> {
        character::find(&self.characters, query)
    }

    /// Characters to show in listings (`METADATA.good !== false`).
    pub fn listed(&self) -> impl Iterator<Item = &Arc<Character>> {
        self.characters
            .iter()
            .filter(|character| character.is_listed())
    }
}

/// Loads every `*.js` file directly in `dir`. Blocks while the files load (each on its own
/// thread); call it from a blocking context in async code.
pub fn load_characters(dir: &Path, options: &LoadOptions) -> Loaded {
    let (root, files) = match list(dir) {
        Ok(found) => found,
        Err(error) => {
            let problem = LoadProblem::new(
                kind::UNREADABLE,
                format!("cannot read the characters directory: {error}"),
            );
            metrics::validation_error(problem.kind);
            return Loaded {
                characters: Vec::new(),
                rejections: vec![Rejection {
                    file: dir.to_path_buf(),
                    problems: vec![problem.message],
                }],
            };
        }
    };
    let started: Vec<_> = files
        .into_iter()
        .map(|file| (engine::spawn(&root, &file, options), file))
        .collect();
    let mut loaded = Loaded::default();
    let mut owners: HashMap<String, PathBuf> = HashMap::new();
    for ((handle, report), file) in started {
        let LoadReport { name, result } = report.recv().unwrap_or_else(|_| LoadReport {
            name: None,
            result: Err(vec![LoadProblem::new(
                kind::MODULE_ERROR,
                "the character's runtime stopped while loading",
            )]),
        });
        let mut problems = result.as_ref().err().cloned().unwrap_or_default();
        if let Some(name) = name {
            match owners.get(&name.to_lowercase()) {
                Some(owner) => problems.push(LoadProblem::new(
                    kind::DUPLICATE_NAME,
                    format!(
                        "CHARACTER_NAME: \"{name}\" is also declared by {}; names must be unique (ignoring case)",
                        owner.file_name().unwrap_or_default().to_string_lossy()
                    ),
                )),
                None => {
                    owners.insert(name.to_lowercase(), file.clone());
                }
            }
        }
        match result {
            Ok(declaration) if problems.is_empty() => {
                metrics::tools_loaded(&declaration.name, declaration.tools.len());
                loaded.characters.push(Arc::new(Character::new(
                    declaration,
                    file,
                    options.memory_limit,
                    handle,
                )));
            }
            _ => {
                for problem in &problems {
                    metrics::validation_error(problem.kind);
                }
                loaded.rejections.push(Rejection {
                    file,
                    problems: problems.into_iter().map(|p| p.message).collect(),
                });
            }
        }
    }
    loaded
}

/// The canonical directory and its `*.js` files, sorted by name.
fn list(dir: &Path) -> std::io::Result<(PathBuf, Vec<PathBuf>)> {
    let root = dir.canonicalize()?;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&root)? {
        let path = entry?.path();
        if path.extension().is_some_and(|extension| extension == "js") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let files = files
        .into_iter()
        .map(|path| dir.join(path.file_name().unwrap_or_default()))
        .collect();
    Ok((root, files))
}
