//! Served tool names. MCP allows 128 characters of `[A-Za-z0-9_.-]`, but model APIs accept
//! at most 64 of `[A-Za-z0-9_-]` for a function, and clients put their own prefix in front
//! (Claude Code calls a server's tool `mcp__{server}__{name}`). So a name is served as is
//! when it fits, and otherwise shortened deterministically: its characters outside
//! `[A-Za-z0-9_-]` become `_`, it is cut, and a short hash of the whole original name ends
//! it, so that two names never meet and a call maps back to its tool.
//!
//! Here, below both, so that the MCP server (`switchboard-mcp`) and the gateway's tool
//! sources (`switchboard-pipeline`) name tools by one rule.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

/// The longest function name model APIs accept.
pub const MODEL_MAX_CHARS: usize = 64;

/// The longest served name by default: 64 (what model APIs accept) less Claude Code's
/// `mcp__` and `__` and a server name of up to 11 characters.
pub const DEFAULT_MAX_CHARS: usize = 46;

/// Hex digits of the hash that ends a shortened name.
const HASH_CHARS: usize = 8;

/// The shortest setting that leaves room for one character, `_` and the hash.
pub const MIN_MAX_CHARS: usize = HASH_CHARS + 2;

/// The name `name` is served under when names may be `max` characters long (at least
/// [`MIN_MAX_CHARS`]).
pub fn served(name: &str, max: usize) -> Cow<'_, str> {
    if fits(name, max) {
        return Cow::Borrowed(name);
    }
    let hash = hex::encode(Sha256::digest(name.as_bytes()));
    let keep = max.max(MIN_MAX_CHARS) - HASH_CHARS - 1;
    let stem: String = name
        .chars()
        .take(keep)
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    Cow::Owned(format!("{stem}_{}", &hash[..HASH_CHARS]))
}

/// Whether `name` is served unchanged.
pub fn fits(name: &str, max: usize) -> bool {
    !name.is_empty() && name.len() <= max && name.chars().all(allowed)
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_are_kept() {
        assert_eq!(
            served("narrator_log_story_event", 46),
            "narrator_log_story_event"
        );
        assert_eq!(served("game-master_roll_dice", 46), "game-master_roll_dice");
    }

    #[test]
    fn long_or_odd_names_are_shortened_deterministically_and_apart() {
        let long = "a-character-with-a-very-long-file-name_and_a_long_tool_name";
        let first = served(long, 46);
        assert_eq!(first.len(), 46);
        assert!(fits(&first, 46), "{first}");
        assert_eq!(first, served(long, 46));
        assert_ne!(first, served(&format!("{long}2"), 46));
        let dotted = served("v1.2_roll", 46);
        assert!(
            dotted.starts_with("v1_2_roll_") && fits(&dotted, 46),
            "{dotted}"
        );
        assert_ne!(dotted, served("v1_2_roll", 46));
    }
}
