//! Ids the gateway hands out: `chatcmpl-…` or `resp_…` per answer and `call_…` per tool
//! call. Backend call ids that are missing, reused or not in OpenAI's shape are replaced,
//! the same way in a streamed and a whole answer.

use std::collections::HashSet;

use rand::Rng;
use rand::distr::Alphanumeric;

fn random(length: usize) -> String {
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(length)
        .map(char::from)
        .collect()
}

/// A new answer id.
pub fn completion_id() -> String {
    format!("chatcmpl-{}", random(29))
}

/// A new Responses API response id.
pub fn response_id() -> String {
    format!("resp_{}", random(32))
}

/// A new request id for logs and the `x-request-id` header.
pub fn request_id() -> String {
    format!("req_{}", random(24))
}

/// Tool-call ids for one answer, unique across the conversation the request carries.
#[derive(Debug, Default)]
pub struct CallIds {
    taken: HashSet<String>,
}

impl CallIds {
    /// `history` are the ids already used in the request's messages.
    pub fn new(history: impl IntoIterator<Item = String>) -> Self {
        Self {
            taken: history.into_iter().collect(),
        }
    }

    /// The id the client sees for a call the backend named `backend_id`: kept when it is in
    /// OpenAI's shape and not used yet, else a fresh one.
    pub fn assign(&mut self, backend_id: &str) -> String {
        let id = if well_formed(backend_id) && !self.taken.contains(backend_id) {
            backend_id.to_owned()
        } else {
            loop {
                let id = format!("call_{}", random(24));
                if !self.taken.contains(&id) {
                    break id;
                }
            }
        };
        self.taken.insert(id.clone());
        id
    }
}

/// OpenAI's shape: `call_` and at least 24 letters and digits.
fn well_formed(id: &str) -> bool {
    id.strip_prefix("call_").is_some_and(|rest| {
        rest.len() >= 24 && rest.bytes().all(|byte| byte.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_ids_are_kept_and_bad_ones_replaced() {
        let good = "call_abcdefghijklmnopqrstuvwx";
        let mut ids = CallIds::new(["call_fromhistoryfromhistory1234".to_owned()]);
        assert_eq!(ids.assign(good), good);
        let replaced = ids.assign("chatcmpl-tool-0");
        assert!(well_formed(&replaced), "{replaced}");
        let reused = ids.assign(good);
        assert!(reused != good && well_formed(&reused));
        let missing = ids.assign("");
        assert!(well_formed(&missing) && missing != replaced);
        let from_history = ids.assign("call_fromhistoryfromhistory1234");
        assert_ne!(from_history, "call_fromhistoryfromhistory1234");
    }
}
