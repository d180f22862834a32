//! The rules a tool list must follow, which differ by where the list comes from.

use std::sync::LazyLock;

use regex::Regex;

/// Where a tool list comes from decides how strict its validation is.
#[derive(Debug, Clone)]
pub struct Profile {
    pub kind: ProfileKind,
    pub name_pattern: &'static str,
    name_regex: &'static LazyLock<Regex>,
    pub max_name_len: usize,
    pub description_required: bool,
    pub max_description_len: Option<usize>,
    pub parameters_required: bool,
    pub max_properties: Option<usize>,
    pub max_enum_values: Option<usize>,
    pub allow_ref: bool,
    pub max_tools: Option<usize>,
    /// Keys other than the known ones in `function` are reported (typos like `paramaters`).
    pub reject_unknown_keys: bool,
    /// Raw argument text longer than this is refused before parsing.
    pub max_argument_bytes: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKind {
    /// Tools declared in character files: small, reviewed, strict.
    Character,
    /// Tools sent in API requests: OpenAI's own rules.
    Api,
}

static CHARACTER_NAME: LazyLock<Regex> = LazyLock::new(|| compile(r"^[a-zA-Z][a-zA-Z0-9_]*$"));
static API_NAME: LazyLock<Regex> = LazyLock::new(|| compile(r"^[a-zA-Z0-9_-]+$"));

#[allow(clippy::expect_used)] // both patterns are literals checked by the profile tests
fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("literal name pattern")
}

impl Profile {
    pub fn character() -> Self {
        Self {
            kind: ProfileKind::Character,
            name_pattern: r"^[a-zA-Z][a-zA-Z0-9_]*$",
            name_regex: &CHARACTER_NAME,
            max_name_len: 50,
            description_required: true,
            max_description_len: Some(200),
            parameters_required: false,
            max_properties: Some(10),
            max_enum_values: Some(10),
            allow_ref: false,
            max_tools: Some(10),
            reject_unknown_keys: true,
            max_argument_bytes: Some(2048),
        }
    }

    pub fn api() -> Self {
        Self {
            kind: ProfileKind::Api,
            name_pattern: r"^[a-zA-Z0-9_-]+$",
            name_regex: &API_NAME,
            max_name_len: 64,
            description_required: false,
            max_description_len: None,
            parameters_required: true,
            max_properties: None,
            max_enum_values: None,
            allow_ref: true,
            max_tools: None,
            reject_unknown_keys: false,
            max_argument_bytes: None,
        }
    }

    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "character" => Some(Self::character()),
            "api" => Some(Self::api()),
            _ => None,
        }
    }

    pub(crate) fn name_matches(&self, name: &str) -> bool {
        self.name_regex.is_match(name)
    }
}

/// OpenAI's limits for `strict: true` schemas.
pub(crate) const STRICT_MAX_PROPERTIES: usize = 100;
pub(crate) const STRICT_MAX_DEPTH: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_patterns_follow_each_profile() {
        let character = Profile::character();
        assert!(character.name_matches("log_story_event"));
        assert!(!character.name_matches("1st"));
        assert!(!character.name_matches("with-dash"));
        let api = Profile::api();
        assert!(api.name_matches("with-dash"));
        assert!(api.name_matches("1st"));
        assert!(!api.name_matches("has space"));
    }
}
