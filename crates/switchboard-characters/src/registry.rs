//! The current set of characters, swapped atomically on reload. Readers never wait, and a
//! conversation keeps the `Arc<Character>` it started with whatever is loaded later.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::character::Character;
use crate::load::{Loaded, load_characters};
use crate::options::LoadOptions;

/// The characters of one directory, reloadable.
#[derive(Debug)]
pub struct CharacterRegistry {
    dir: PathBuf,
    options: LoadOptions,
    current: ArcSwap<Loaded>,
}

impl CharacterRegistry {
    /// Loads `dir` once. Blocks while the files load.
    pub fn load(dir: &Path, options: LoadOptions) -> Self {
        let current = ArcSwap::from_pointee(load_characters(dir, &options));
        Self {
            dir: dir.to_path_buf(),
            options,
            current,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The set loaded last, with its rejections.
    pub fn current(&self) -> Arc<Loaded> {
        self.current.load_full()
    }

    /// The character `query` names (its `CHARACTER_NAME` or file stem, ignoring case).
    pub fn get(&self, query: &str) -> Option<Arc<Character>> {
        self.current.load().get(query).cloned()
    }

    /// Re-reads the directory and swaps in the new set. Blocks while the files load; call it
    /// from a blocking context in async code.
    pub fn reload(&self) -> Arc<Loaded> {
        let loaded = Arc::new(load_characters(&self.dir, &self.options));
        self.current.store(Arc::clone(&loaded));
        loaded
    }
}
