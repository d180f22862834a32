//! Loading a characters directory: every `*.js` directly in it, in name order, each on its
//! own engine thread (so files load in parallel); a rejected file never stops the others.
//! A reload loads some or all files again and lays them over the set loaded before, where
//! a file that now fails keeps its last good character running.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::character::{self, Character};
use crate::engine::{self, LoadReport};
use crate::metrics;
use crate::options::LoadOptions;
use crate::rejection::{Problem, Rejection, kind};

/// The outcome of loading a directory: what loaded, and every file that did not with why.
/// After a reload, a file can be in both: its last load failed (the rejection) and its
/// last good version still serves (the character).
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

    /// Why the last load of `file` failed, when it did.
    pub fn rejection(&self, file: &Path) -> Option<&Rejection> {
        self.rejections
            .iter()
            .find(|rejection| rejection.file == file)
    }
}

/// Loads every `*.js` file directly in `dir`. Blocks while the files load (each on its own
/// thread); call it from a blocking context in async code.
pub fn load_characters(dir: &Path, options: &LoadOptions) -> Loaded {
    match list(dir, options) {
        Ok((root, files)) => {
            let attempts = load_files(&root, &files, options);
            assemble(&Loaded::default(), &files, attempts).0
        }
        Err(rejection) => Loaded {
            characters: Vec::new(),
            rejections: vec![rejection],
        },
    }
}

/// What loading one file gave, before its name is checked against the other files'.
pub(crate) struct Attempt {
    file: PathBuf,
    name: Option<String>,
    result: Result<Arc<Character>, Vec<Problem>>,
}

/// What a (re)load did to one file, for the log.
#[derive(Debug)]
pub(crate) enum Change {
    Loaded {
        file: PathBuf,
        name: String,
    },
    /// `kept`: the name of the last good version, which keeps running.
    Rejected {
        rejection: Rejection,
        kept: Option<String>,
    },
    Removed {
        file: PathBuf,
    },
}

/// Loads `files` (in `root`, which is canonical), all at once, each on its own thread.
pub(crate) fn load_files(root: &Path, files: &[PathBuf], options: &LoadOptions) -> Vec<Attempt> {
    let started: Vec<_> = files
        .iter()
        .map(|file| (engine::spawn(root, file, options), file.clone()))
        .collect();
    started
        .into_iter()
        .map(|((handle, report), file)| {
            let LoadReport { name, result } = report.recv().unwrap_or_else(|_| LoadReport {
                name: None,
                result: Err(vec![Problem::new(
                    kind::MODULE_ERROR,
                    "the character's runtime stopped while loading",
                )]),
            });
            let result = result.map(|declaration| {
                Arc::new(Character::new(
                    declaration,
                    file.clone(),
                    options.memory_limit,
                    handle,
                ))
            });
            Attempt { file, name, result }
        })
        .collect()
}

/// Lays `attempts` over `previous`: files not attempted stay as they were, files no longer
/// `present` go, and a file that failed keeps its last good character unless another file
/// has taken its name. Names stay unique (ignoring case): a name already held by a file
/// that was not loaded again, or by an earlier file in name order, rejects the newcomer.
pub(crate) fn assemble(
    previous: &Loaded,
    present: &[PathBuf],
    attempts: Vec<Attempt>,
) -> (Loaded, Vec<Change>) {
    let present: HashSet<&Path> = present.iter().map(PathBuf::as_path).collect();
    let attempted: HashSet<PathBuf> = attempts.iter().map(|a| a.file.clone()).collect();
    let stays = |file: &Path| present.contains(file) && !attempted.contains(file);
    let mut loaded = Loaded::default();
    let mut changes = Vec::new();
    let mut owners: HashMap<String, PathBuf> = HashMap::new();
    for character in &previous.characters {
        if stays(character.file()) {
            owners.insert(
                character.name().to_lowercase(),
                character.file().to_path_buf(),
            );
            loaded.characters.push(Arc::clone(character));
        }
    }
    loaded.rejections.extend(
        previous
            .rejections
            .iter()
            .filter(|rejection| stays(&rejection.file))
            .cloned(),
    );
    let gone = previous
        .characters
        .iter()
        .map(|character| character.file())
        .chain(
            previous
                .rejections
                .iter()
                .map(|rejection| rejection.file.as_path()),
        )
        .filter(|file| !present.contains(file))
        .collect::<HashSet<_>>();
    changes.extend(gone.into_iter().map(|file| Change::Removed {
        file: file.to_path_buf(),
    }));
    for Attempt { file, name, result } in attempts {
        let mut problems = result.as_ref().err().cloned().unwrap_or_default();
        if let Some(name) = name {
            match owners.get(&name.to_lowercase()) {
                Some(owner) if *owner != file => problems.push(Problem::at_export(
                    kind::DUPLICATE_NAME,
                    "CHARACTER_NAME",
                    &format!(
                        "\"{name}\" is also declared by {}; names must be unique (ignoring case)",
                        owner.file_name().unwrap_or_default().to_string_lossy()
                    ),
                )),
                _ => {
                    owners.insert(name.to_lowercase(), file.clone());
                }
            }
        }
        match result {
            Ok(character) if problems.is_empty() => {
                metrics::tools_loaded(character.name(), character.tools().len());
                changes.push(Change::Loaded {
                    file,
                    name: character.name().to_owned(),
                });
                loaded.characters.push(character);
            }
            _ => {
                for problem in &problems {
                    metrics::validation_error(problem.kind);
                }
                let kept = previous
                    .characters
                    .iter()
                    .find(|character| character.file() == file)
                    .filter(|character| {
                        owners
                            .get(&character.name().to_lowercase())
                            .is_none_or(|owner| *owner == file)
                    })
                    .cloned();
                if let Some(kept) = &kept {
                    owners.insert(kept.name().to_lowercase(), file.clone());
                    loaded.characters.push(Arc::clone(kept));
                }
                let rejection = Rejection { file, problems };
                changes.push(Change::Rejected {
                    rejection: rejection.clone(),
                    kept: kept.map(|character| character.name().to_owned()),
                });
                loaded.rejections.push(rejection);
            }
        }
    }
    loaded.characters.sort_by(|a, b| a.file().cmp(b.file()));
    loaded.rejections.sort_by(|a, b| a.file.cmp(&b.file));
    (loaded, changes)
}

/// The canonical directory and its `*.js` files (as `dir` joined with each name), sorted
/// by name; an unreadable directory is a rejection of the directory itself, unless it is
/// an optional one that does not exist.
pub(crate) fn list(
    dir: &Path,
    options: &LoadOptions,
) -> Result<(PathBuf, Vec<PathBuf>), Rejection> {
    if options.optional_dir && !dir.exists() {
        return Ok((dir.to_path_buf(), Vec::new()));
    }
    let listed = (|| {
        let root = dir.canonicalize()?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&root)? {
            let path = entry?.path();
            if path.extension().is_some_and(|extension| extension == "js") && path.is_file() {
                files.push(path);
            }
        }
        std::io::Result::Ok((root, files))
    })();
    let (root, mut files) = listed.map_err(|error| {
        let problem = Problem::new(
            kind::UNREADABLE,
            format!("cannot read the characters directory: {error}"),
        );
        metrics::validation_error(problem.kind);
        Rejection {
            file: dir.to_path_buf(),
            problems: vec![problem],
        }
    })?;
    files.sort();
    let files = files
        .into_iter()
        .map(|path| dir.join(path.file_name().unwrap_or_default()))
        .collect();
    Ok((root, files))
}
