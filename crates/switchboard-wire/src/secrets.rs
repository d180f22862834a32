//! Keeping credentials out of text the gateway shows. Peers quote back what they were sent
//! (a backend's `invalid key Bearer sk-…`, an MCP server echoing its `Authorization` header
//! or an environment variable): every text that comes from a peer passes through the
//! [`Secrets`] of that peer before a client, a model, a log line or a health page sees it.
//! Pure text work, shared by the backend clients and the MCP client.

use serde_json::Value;

/// What a credential is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Shorter values are not searched for: cutting every `a` out of a message hides nothing
/// and garbles the rest.
const SHORTEST_SECRET: usize = 4;

/// The credentials of one peer, cut out of any text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values)", self.0.len())
    }
}

impl Secrets {
    /// The values to cut; those too short to mean anything are left out.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|secret| secret.len() >= SHORTEST_SECRET)
            .collect();
        // Longest first, so a secret that contains another is cut whole.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Self(secrets)
    }

    /// `text` with every credential replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.0 {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    /// Every string in `value` (keys included) with every credential replaced.
    pub fn value(&self, value: Value) -> Value {
        if self.0.is_empty() {
            return value;
        }
        match value {
            Value::String(text) => Value::String(self.text(&text)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|item| self.value(item)).collect())
            }
            Value::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(key, item)| (self.text(&key), self.value(item)))
                    .collect(),
            ),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_value_is_cut_longest_first_and_short_ones_are_left_alone() {
        let secrets = Secrets::new([
            "tok-123456".to_owned(),
            "Bearer tok-123456".to_owned(),
            "ab".to_owned(),
        ]);
        assert_eq!(
            secrets.text("got Bearer tok-123456, then tok-123456; ab"),
            "got [redacted], then [redacted]; ab"
        );
        assert_eq!(
            secrets.value(json!({"tok-123456": ["x tok-123456", 1]})),
            json!({"[redacted]": ["x [redacted]", 1]})
        );
    }
}
