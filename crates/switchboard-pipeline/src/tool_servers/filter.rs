//! A caller's filter on tools by their catalog names: the one rule `/mcp`, a request's
//! loop and a character's conversation apply.

use std::sync::Arc;

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

    pub fn new(allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(allows)))
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
