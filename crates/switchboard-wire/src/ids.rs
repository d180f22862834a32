//! Tool call ids: generating the ones backends leave out, keeping them unique within an
//! answer, and rewriting them for Anthropic, which rejects anything outside
//! `^[a-zA-Z0-9_-]+$`, consistently across a whole conversation and back again.

use std::collections::{HashMap, HashSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Where generated ids come from. Random in production; seeded in tests so that two
/// decodes of the same bytes can be compared event for event.
#[derive(Debug, Clone)]
pub struct IdSource {
    rng: StdRng,
}

impl Default for IdSource {
    fn default() -> Self {
        Self::random()
    }
}

impl IdSource {
    pub fn random() -> Self {
        Self {
            rng: StdRng::from_os_rng(),
        }
    }

    pub fn seeded(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// `call_` followed by 24 random ASCII letters and digits, OpenAI's own shape.
    pub fn call_id(&mut self) -> String {
        let mut id = String::with_capacity(29);
        id.push_str("call_");
        id.extend((0..24).map(|_| char::from(self.rng.sample(rand::distr::Alphanumeric))));
        id
    }
}

/// `PREFIX_` and 32 random letters and digits from the thread's generator (cheaper than a
/// fresh [`IdSource`] where nothing needs to be reproducible).
pub fn item_id(prefix: &str) -> String {
    let mut id = String::with_capacity(prefix.len() + 33);
    id.push_str(prefix);
    id.push('_');
    id.extend((0..32).map(|_| char::from(rand::rng().sample(rand::distr::Alphanumeric))));
    id
}

/// The ids handed out within one answer, so parallel calls never share one.
#[derive(Debug, Default)]
pub(crate) struct AnswerIds {
    source: IdSource,
    used: HashSet<String>,
}

impl AnswerIds {
    pub(crate) fn new(source: IdSource) -> Self {
        Self {
            source,
            used: HashSet::new(),
        }
    }

    /// The backend's id if it has one not used yet in this answer; a missing id is
    /// generated and a reused one gets the first free `_<n>` suffix, deterministically.
    pub(crate) fn assign(&mut self, given: Option<&str>) -> String {
        let id = match given.filter(|id| !id.is_empty()) {
            None => loop {
                let id = self.source.call_id();
                if !self.used.contains(&id) {
                    break id;
                }
            },
            Some(id) if !self.used.contains(id) => id.to_owned(),
            Some(id) => (1..)
                .map(|n| format!("{id}_{n}"))
                .find(|candidate| !self.used.contains(candidate))
                .unwrap_or_default(),
        };
        self.used.insert(id.clone());
        id
    }
}

/// Whether Anthropic accepts `id` as a tool_use id.
pub fn is_anthropic_safe(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// A two-way mapping of tool call ids for one conversation sent to Anthropic. Safe ids go
/// through untouched; others have each offending character replaced by `_` (plus a
/// suffix if that collides), and the same original always gets the same replacement.
#[derive(Debug, Clone, Default)]
pub struct IdMap {
    to_anthropic: HashMap<String, String>,
    from_anthropic: HashMap<String, String>,
}

impl IdMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id to send to Anthropic for `id`.
    pub fn to_anthropic(&mut self, id: &str) -> String {
        if let Some(known) = self.to_anthropic.get(id) {
            return known.clone();
        }
        let base: String = if id.is_empty() {
            "id".to_owned()
        } else {
            id.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let taken = |candidate: &str| self.from_anthropic.contains_key(candidate);
        let mapped = if !taken(&base) {
            base
        } else {
            (1..)
                .map(|n| format!("{base}_{n}"))
                .find(|candidate| !taken(candidate))
                .unwrap_or_default()
        };
        self.to_anthropic.insert(id.to_owned(), mapped.clone());
        self.from_anthropic.insert(mapped.clone(), id.to_owned());
        mapped
    }

    /// The original id for an id Anthropic sent back; ids this map never rewrote are
    /// returned as they are.
    pub fn from_anthropic(&self, id: &str) -> String {
        self.from_anthropic
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_openai_shape() {
        let id = IdSource::random().call_id();
        assert_eq!(id.len(), 29);
        assert!(id.starts_with("call_"));
        assert!(id[5..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(IdSource::seeded(7).call_id(), IdSource::seeded(7).call_id());
    }

    #[test]
    fn reused_and_missing_ids_become_unique() {
        let mut ids = AnswerIds::new(IdSource::seeded(1));
        assert_eq!(ids.assign(Some("a")), "a");
        assert_eq!(ids.assign(Some("a")), "a_1");
        assert_eq!(ids.assign(Some("a")), "a_2");
        let generated = ids.assign(None);
        assert!(generated.starts_with("call_"));
        assert_ne!(ids.assign(Some("")), generated);
    }

    #[test]
    fn anthropic_ids_are_rewritten_consistently_and_back() {
        let mut map = IdMap::new();
        assert_eq!(map.to_anthropic("toolu_01-ok"), "toolu_01-ok");
        let dotted = map.to_anthropic("call.1:x");
        assert_eq!(dotted, "call_1_x");
        assert!(is_anthropic_safe(&dotted));
        assert_eq!(map.to_anthropic("call.1:x"), dotted);
        // A safe id that happens to equal a rewrite must not be confused with it.
        let clash = map.to_anthropic("call_1_x");
        assert_ne!(clash, dotted);
        assert!(is_anthropic_safe(&clash));
        assert_eq!(map.from_anthropic(&dotted), "call.1:x");
        assert_eq!(map.from_anthropic(&clash), "call_1_x");
        assert_eq!(map.from_anthropic("toolu_new"), "toolu_new");
        assert!(is_anthropic_safe(&map.to_anthropic("")));
        assert!(is_anthropic_safe(&map.to_anthropic("é")));
    }
}
