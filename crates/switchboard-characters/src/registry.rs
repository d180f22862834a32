//! The current set of characters, swapped atomically on reload. Readers never wait, and a
//! conversation keeps the `Arc<Character>` it started with whatever is loaded later. A
//! reload that finds a file broken keeps that file's last good character running and
//! reports the problems in the log and in [`Loaded::rejections`].

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::character::Character;
use crate::load::{Change, Loaded, assemble, list, load_characters, load_files};
use crate::options::LoadOptions;
use crate::rejection::{Rejection, kind};

/// The characters of one directory, reloadable.
#[derive(Debug)]
pub struct CharacterRegistry {
    dir: PathBuf,
    /// Changed only by [`set_mcp_servers`](CharacterRegistry::set_mcp_servers).
    options: Mutex<LoadOptions>,
    current: ArcSwap<Loaded>,
    /// Held while a reload reads and swaps, so that a save and a SIGHUP at the same moment
    /// cannot swap in sets that each miss the other's change.
    reloading: Mutex<()>,
    /// Counts the sets swapped in, for those who follow the tool lists (MCP clients).
    swapped: watch::Sender<u64>,
}

impl CharacterRegistry {
    /// Loads `dir` once, logging why each refused file was refused (as a reload does).
    /// Blocks while the files load.
    pub fn load(dir: &Path, options: LoadOptions) -> Self {
        let loaded = load_characters(dir, &options);
        for rejection in &loaded.rejections {
            log_rejection(rejection, None);
        }
        let current = ArcSwap::from_pointee(loaded);
        Self {
            dir: dir.to_path_buf(),
            options: Mutex::new(options),
            current,
            reloading: Mutex::new(()),
            swapped: watch::Sender::new(0),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The set loaded last, with its rejections.
    pub fn current(&self) -> Arc<Loaded> {
        self.current.load_full()
    }

    /// Changes each time a reload swaps in a set (which may hold other tools).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.swapped.subscribe()
    }

    /// The character `query` names (its `CHARACTER_NAME` or file stem, ignoring case).
    pub fn get(&self, query: &str) -> Option<Arc<Character>> {
        self.current.load().get(query).cloned()
    }

    /// Re-reads every file of the directory and swaps in the new set; a file that fails
    /// keeps its last good character. Blocks while the files load; call it from a
    /// blocking context in async code.
    pub fn reload(&self) -> Arc<Loaded> {
        self.reload_where(|_, _| true)
    }

    /// Re-reads the files of the directory named like `files` (only their names count), and
    /// every file refused because another held its name (that file may have let it go).
    /// Named files that are gone are dropped; other files stay as they are. Blocks like
    /// [`reload`](Self::reload).
    pub fn reload_files(&self, files: &[PathBuf]) -> Arc<Loaded> {
        let names: HashSet<OsString> = files
            .iter()
            .filter_map(|file| file.file_name().map(ToOwned::to_owned))
            .collect();
        self.reload_where(|file, previous| {
            file.file_name().is_some_and(|name| names.contains(name))
                || previous.rejection(file).is_some_and(|rejection| {
                    rejection
                        .problems
                        .iter()
                        .any(|problem| problem.kind == kind::DUPLICATE_NAME)
                })
        })
    }

    /// The names of the MCP servers the configuration now defines
    /// ([`LoadOptions::mcp_servers`]), after a configuration reload. When they changed, the
    /// files whose result depends on them are loaded again (those whose character declares
    /// `MCP_SERVERS`, and those refused for naming a server that was not configured) and
    /// the new set is returned; otherwise nothing is reloaded. Blocks like
    /// [`reload`](Self::reload).
    pub fn set_mcp_servers(&self, names: Option<Vec<String>>) -> Option<Arc<Loaded>> {
        {
            let mut options = self.options.lock().unwrap_or_else(PoisonError::into_inner);
            if options.mcp_servers == names {
                return None;
            }
            options.mcp_servers = names;
        }
        Some(self.reload_where(|file, previous| {
            previous
                .characters
                .iter()
                .any(|character| character.file() == file && !character.mcp_servers().is_empty())
                || previous.rejection(file).is_some_and(|rejection| {
                    rejection
                        .problems
                        .iter()
                        .any(|problem| problem.kind == kind::UNKNOWN_MCP_SERVER)
                })
        }))
    }

    fn reload_where(&self, again: impl Fn(&Path, &Loaded) -> bool) -> Arc<Loaded> {
        let _reloading = self
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let options = self
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let previous = self.current.load_full();
        let loaded = match list(&self.dir, &options) {
            Ok((root, present)) => {
                let files: Vec<PathBuf> = present
                    .iter()
                    .filter(|file| again(file, &previous))
                    .cloned()
                    .collect();
                let (loaded, changes) =
                    assemble(&previous, &present, load_files(&root, &files, &options));
                log(&changes);
                loaded
            }
            Err(rejection) => {
                // A directory that vanished or cannot be read for a moment must not take
                // every running character with it.
                tracing::warn!(target: "character", "{rejection}; the characters loaded before keep running");
                Loaded {
                    characters: previous.characters.clone(),
                    rejections: vec![rejection],
                }
            }
        };
        let loaded = Arc::new(loaded);
        self.current.store(Arc::clone(&loaded));
        self.swapped.send_modify(|count| *count += 1);
        tracing::info!(
            target: "character",
            "characters: {} running, {} file(s) with problems",
            loaded.characters.len(),
            loaded.rejections.len()
        );
        loaded
    }
}

fn log(changes: &[Change]) {
    for change in changes {
        match change {
            Change::Loaded { file, name } => {
                tracing::info!(target: "character", "{}: loaded {name}", file.display());
            }
            Change::Removed { file } => {
                tracing::info!(target: "character", "{}: removed", file.display());
            }
            Change::Rejected { rejection, kept } => log_rejection(rejection, kept.as_deref()),
        }
    }
}

/// Says why a file was refused, at start and at every reload alike; `kept` names its last
/// good version, which keeps running.
fn log_rejection(rejection: &Rejection, kept: Option<&str>) {
    match kept {
        Some(name) => tracing::warn!(
            target: "character",
            "{rejection}\n{}: not loaded; the last good version of {name} keeps running",
            rejection.file.display()
        ),
        None => tracing::warn!(target: "character", "{rejection}"),
    }
}
