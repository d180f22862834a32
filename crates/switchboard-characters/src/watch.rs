//! Reloading characters as their files are saved. The directory is watched (recursively,
//! for the modules characters import); a burst of changes is gathered until the files have
//! been quiet for a moment, then the saved characters are loaded again (every character
//! when an imported module changed) and swapped in at once. Only writes, creations,
//! removals and renames count: reading a file to load it never starts another reload.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TrySendError};
use std::thread;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::registry::CharacterRegistry;

/// How long the files must be quiet before a reload: editors write a file in several steps.
const QUIET: Duration = Duration::from_millis(150);
/// The longest a reload waits for quiet, so that a file written without pause still reloads.
const MAX_WAIT: Duration = Duration::from_millis(600);
/// Changes waiting for the reload thread; past this they are dropped and every file reloads.
const QUEUE: usize = 1024;
/// Files gathered for one reload; past this every file reloads.
const MAX_FILES: usize = 256;

/// Why the directory cannot be watched (saved files then reload only on SIGHUP).
#[derive(Debug, thiserror::Error)]
#[error("cannot watch the characters directory {dir}: {source}")]
pub struct WatchError {
    dir: PathBuf,
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// Watching a registry's directory; dropping it stops the watch and its thread.
pub struct CharacterWatcher {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for CharacterWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CharacterWatcher").finish_non_exhaustive()
    }
}

/// One change that matters.
#[derive(Debug, PartialEq, Eq)]
enum Saved {
    /// A character file (a `*.js` directly in the directory).
    File(PathBuf),
    /// A module characters may import: any of them may have changed.
    Everything,
}

impl CharacterRegistry {
    /// Reloads characters as their files are saved, until the watcher is dropped.
    pub fn watch(self: &Arc<Self>) -> Result<CharacterWatcher, WatchError> {
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| WatchError {
            dir: self.dir().to_path_buf(),
            source,
        };
        let root = self
            .dir()
            .canonicalize()
            .map_err(|error| failed(error.into()))?;
        let (sender, receiver) = mpsc::sync_channel(QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        let mut watcher = notify::recommended_watcher({
            let root = root.clone();
            let overflowed = Arc::clone(&overflowed);
            move |event: notify::Result<Event>| {
                for saved in classify(&root, event) {
                    if let Err(TrySendError::Full(_)) = sender.try_send(saved) {
                        overflowed.store(true, Ordering::Relaxed);
                    }
                }
            }
        })
        .map_err(|error| failed(error.into()))?;
        watcher
            .watch(&root, RecursiveMode::Recursive)
            .map_err(|error| failed(error.into()))?;
        let registry = Arc::clone(self);
        thread::Builder::new()
            .name("character-watch".to_owned())
            .spawn(move || reload_as_saved(&registry, &receiver, &overflowed))
            .map_err(|error| failed(error.into()))?;
        Ok(CharacterWatcher { _watcher: watcher })
    }
}

/// What an event means for the characters in `root`.
fn classify(root: &Path, event: notify::Result<Event>) -> Vec<Saved> {
    let event = match event {
        Ok(event) => event,
        Err(error) => {
            tracing::warn!(target: "character", "watching the characters directory: {error}; reloading everything");
            return vec![Saved::Everything];
        }
    };
    if event.need_rescan() {
        return vec![Saved::Everything];
    }
    let writes = match event.kind {
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Any | EventKind::Other => false,
    };
    if !writes {
        return Vec::new();
    }
    event
        .paths
        .into_iter()
        .filter(|path| path.extension().is_some_and(|extension| extension == "js"))
        .filter_map(|path| {
            if path.parent() == Some(root) {
                Some(Saved::File(path))
            } else if path.starts_with(root) {
                Some(Saved::Everything)
            } else {
                None
            }
        })
        .collect()
}

/// The reload thread: gathers changes until quiet, reloads, and ends with the watcher.
fn reload_as_saved(
    registry: &CharacterRegistry,
    changes: &mpsc::Receiver<Saved>,
    overflowed: &AtomicBool,
) {
    while let Ok(first) = changes.recv() {
        let started = Instant::now();
        let mut files = HashSet::new();
        let mut everything = false;
        let mut add = |saved: Saved| match saved {
            Saved::File(file) if files.len() < MAX_FILES => {
                files.insert(file);
            }
            _ => everything = true,
        };
        add(first);
        loop {
            let wait = QUIET.min(MAX_WAIT.saturating_sub(started.elapsed()));
            match changes.recv_timeout(wait) {
                Ok(saved) => add(saved),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if overflowed.swap(false, Ordering::Relaxed) || everything {
            registry.reload();
        } else {
            registry.reload_files(&files.into_iter().collect::<Vec<_>>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, ModifyKind, RemoveKind};

    fn event(kind: EventKind, path: &str) -> notify::Result<Event> {
        Ok(Event::new(kind).add_path(PathBuf::from(path)))
    }

    #[test]
    fn writes_to_character_files_reload_them_and_module_changes_reload_everything() {
        let root = Path::new("/chars");
        assert_eq!(
            classify(
                root,
                event(EventKind::Modify(ModifyKind::Any), "/chars/a.js")
            ),
            [Saved::File(PathBuf::from("/chars/a.js"))]
        );
        assert_eq!(
            classify(
                root,
                event(EventKind::Remove(RemoveKind::File), "/chars/a.js")
            ),
            [Saved::File(PathBuf::from("/chars/a.js"))]
        );
        assert_eq!(
            classify(
                root,
                event(
                    EventKind::Create(CreateKind::File),
                    "/chars/resources/data.js"
                )
            ),
            [Saved::Everything]
        );
    }

    #[test]
    fn reads_and_other_files_are_ignored() {
        let root = Path::new("/chars");
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(classify(root, event(open, "/chars/a.js")), []);
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        assert_eq!(classify(root, event(read, "/chars/a.js")), []);
        let modify = EventKind::Modify(ModifyKind::Any);
        assert_eq!(classify(root, event(modify, "/chars/a.js~")), []);
        assert_eq!(classify(root, event(modify, "/chars/.a.js.swp")), []);
        assert_eq!(classify(root, event(modify, "/elsewhere/a.js")), []);
        let written = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert_eq!(
            classify(root, event(written, "/chars/a.js")),
            [Saved::File(PathBuf::from("/chars/a.js"))]
        );
    }
}
