//! A caller's filter on tools by their catalog names: the one rule `/mcp`, a request's
//! loop and a character's conversation apply (see [`crate::catalog`]).

use std::sync::Arc;

use switchboard_tools::names;

/// Whether the caller's key may use a tool, by its catalog name (`{server}_{tool}`,
/// `{character file stem}_{tool}`): the one rule of `/mcp`, a request's loop and a
/// character's conversation. The front-end that knows the key decides; without one, every
/// tool is allowed.
#[derive(Clone, Default)]
pub struct ToolFilter(Option<Arc<Allows>>);

/// Whether one tool, by its catalog name, is allowed.
type Allows = dyn Fn(&str) -> bool + Send + Sync;

impl ToolFilter {
    /// Every tool.
    pub fn all() -> Self {
        Self(None)
    }

    /// A key's filter: `globs` judges each tool by the name `/mcp` serves it under, its
    /// catalog name shortened to `max_chars` (`mcp_tool_name_max_chars`). One spelling on
    /// every path, so that a glob a key was given for `/mcp`'s names holds everywhere.
    pub fn served(globs: impl Fn(&str) -> bool + Send + Sync + 'static, max_chars: usize) -> Self {
        Self(Some(Arc::new(move |name| {
            globs(&names::served(name, max_chars))
        })))
    }

    pub fn allows(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|allows| allows(name))
    }
}

impl std::fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ToolFilter(key)"
        } else {
            "ToolFilter(all)"
        })
    }
}
