//! The QuickJS runtime a character's code runs in: no file, network or process access (the
//! engine has none unless given it), a memory limit, a clock whose deadline interrupts any
//! running code, and module imports confined to the characters directory.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Context, Ctx, Error, Module, Runtime};

use crate::clock::Clock;
use crate::console;

/// Native stack QuickJS may use; the engine thread gets more than this so that deep
/// recursion in character code ends in a `RangeError`, never in a crashed thread.
pub(crate) const JS_STACK_BYTES: usize = 512 * 1024;

/// One character's runtime and context, with the clock that bounds its code.
pub(crate) struct Sandbox {
    /// The context keeps its runtime alive.
    pub context: Context,
    pub clock: Rc<Clock>,
    /// What console output is prefixed with: the file name until `CHARACTER_NAME` is known.
    pub label: Rc<RefCell<String>>,
}

impl Sandbox {
    pub fn new(root: &Path, memory_limit: usize, label: String) -> Result<Self, Error> {
        let runtime = Runtime::new()?;
        runtime.set_memory_limit(memory_limit);
        runtime.set_max_stack_size(JS_STACK_BYTES);
        let clock = Rc::new(Clock::default());
        let interrupt_clock = Rc::clone(&clock);
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt_clock.interrupt())));
        runtime.set_loader(
            ConfinedResolver {
                root: root.to_path_buf(),
            },
            FileLoader {
                root: root.to_path_buf(),
            },
        );
        let context = Context::full(&runtime)?;
        let label = Rc::new(RefCell::new(label));
        context.with(|ctx| console::install(&ctx, Rc::clone(&label), Rc::clone(&clock)))?;
        Ok(Self {
            context,
            clock,
            label,
        })
    }
}

/// Resolves imports relative to the importing module. Module names are paths relative to
/// the characters directory, so stacks and errors read `narrator.js:12:5`.
struct ConfinedResolver {
    root: PathBuf,
}

impl Resolver for ConfinedResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if !(name.starts_with("./") || name.starts_with("../")) {
            return Err(Error::new_resolving_message(
                base,
                name,
                "only relative imports (\"./resources/…\") of files in the characters directory are allowed",
            ));
        }
        let joined = Path::new(base).parent().unwrap_or(Path::new("")).join(name);
        let relative = normalize(&joined).ok_or_else(|| {
            Error::new_resolving_message(base, name, "the import leaves the characters directory")
        })?;
        let canonical = self
            .root
            .join(&relative)
            .canonicalize()
            .map_err(|error| Error::new_resolving_message(base, name, error.to_string()))?;
        if !canonical.starts_with(&self.root) {
            return Err(Error::new_resolving_message(
                base,
                name,
                "the import leaves the characters directory",
            ));
        }
        Ok(relative.to_string_lossy().replace('\\', "/"))
    }
}

/// Resolves `.` and `..` without touching the disk; `None` when the path climbs above its start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// Reads a resolved module from the characters directory; the host reads the file, the
/// character's code never touches the file system.
struct FileLoader {
    root: PathBuf,
}

impl Loader for FileLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        let source = std::fs::read_to_string(self.root.join(name))
            .map_err(|error| Error::new_loading_message(name, error.to_string()))?;
        Module::declare(ctx.clone(), name, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_refuses_paths_that_climb_out() {
        assert_eq!(
            normalize(Path::new("a/./b/../c.js")),
            Some(PathBuf::from("a/c.js"))
        );
        assert_eq!(
            normalize(Path::new("resources/../quiz.js")),
            Some(PathBuf::from("quiz.js"))
        );
        assert_eq!(normalize(Path::new("../outside.js")), None);
        assert_eq!(normalize(Path::new("a/../../outside.js")), None);
        assert_eq!(normalize(Path::new("/etc/passwd")), None);
    }
}
