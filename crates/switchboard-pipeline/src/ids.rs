//! Ids the gateway hands out: `chatcmpl-…`, `msg_…` or `resp_…` per answer and `call_…` or
//! `toolu_…` per tool call, in the shape of the API the client speaks. Backend call ids that
//! are missing, reused or not in that shape are replaced, the same way in a streamed and a
//! whole answer.

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

/// A new Messages answer id.
pub fn message_id() -> String {
    format!("msg_{}", random(24))
}

/// A new Responses API response id.
pub fn response_id() -> String {
    format!("resp_{}", random(32))
}

/// A new request id for logs and the `x-request-id` header.
pub fn request_id() -> String {
    format!("req_{}", random(24))
}

/// The tool-call id shape of the API a client speaks: a prefix and 24 letters and digits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CallIdShape {
    /// `call_…`, OpenAI's.
    #[default]
    OpenAi,
    /// `toolu_…`, Anthropic's.
    Anthropic,
    /// Whatever the backend sent, new fresh ids in OpenAI's shape: for a conversation no
    /// client sees the calls of (a character's turn), whose ids go back to the same backend.
    Backend,
}

impl CallIdShape {
    fn prefix(self) -> &'static str {
        match self {
            CallIdShape::OpenAi | CallIdShape::Backend => "call_",
            CallIdShape::Anthropic => "toolu_",
        }
    }

    /// The prefix and at least 24 letters and digits, or for `Backend` any id at all.
    fn fits(self, id: &str) -> bool {
        if self == CallIdShape::Backend {
            return !id.is_empty();
        }
        id.strip_prefix(self.prefix()).is_some_and(|rest| {
            rest.len() >= 24 && rest.bytes().all(|byte| byte.is_ascii_alphanumeric())
        })
    }
}

/// Tool-call ids for one answer, unique across the conversation the request carries.
#[derive(Debug, Default)]
pub struct CallIds {
    shape: CallIdShape,
    taken: HashSet<String>,
}

impl CallIds {
    /// `history` are the ids already used in the request's messages.
    pub fn new(shape: CallIdShape, history: impl IntoIterator<Item = String>) -> Self {
        Self {
            shape,
            taken: history.into_iter().collect(),
        }
    }

    /// The id the client sees for a call the backend named `backend_id`: kept when it is in
    /// the client's shape and not used yet, else a fresh one.
    pub fn assign(&mut self, backend_id: &str) -> String {
        let id = if self.shape.fits(backend_id) && !self.taken.contains(backend_id) {
            backend_id.to_owned()
        } else {
            loop {
                let id = format!("{}{}", self.shape.prefix(), random(24));
                if !self.taken.contains(&id) {
                    break id;
                }
            }
        };
        self.taken.insert(id.clone());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backends_own_ids_are_kept_where_no_client_sees_them() {
        let mut ids = CallIds::new(CallIdShape::Backend, ["call_1".to_owned()]);
        assert_eq!(ids.assign("call_2"), "call_2");
        assert_eq!(ids.assign("chatcmpl-tool-0"), "chatcmpl-tool-0");
        let fresh = |id: &str| CallIdShape::OpenAi.fits(id);
        assert!(fresh(&ids.assign("call_1")));
        assert!(fresh(&ids.assign("")));
    }

    #[test]
    fn good_ids_are_kept_and_bad_ones_replaced() {
        let good = "call_abcdefghijklmnopqrstuvwx";
        let mut ids = CallIds::new(
            CallIdShape::OpenAi,
            ["call_fromhistoryfromhistory1234".to_owned()],
        );
        assert_eq!(ids.assign(good), good);
        let well_formed = |id: &str| CallIdShape::OpenAi.fits(id);
        let replaced = ids.assign("chatcmpl-tool-0");
        assert!(well_formed(&replaced), "{replaced}");
        let reused = ids.assign(good);
        assert!(reused != good && well_formed(&reused));
        let missing = ids.assign("");
        assert!(well_formed(&missing) && missing != replaced);
        let from_history = ids.assign("call_fromhistoryfromhistory1234");
        assert_ne!(from_history, "call_fromhistoryfromhistory1234");
    }

    #[test]
    fn anthropic_clients_get_toolu_ids_and_keep_anthropic_ones() {
        let mut ids = CallIds::new(
            CallIdShape::Anthropic,
            ["toolu_01historyhistoryhistory1".to_owned()],
        );
        let kept = "toolu_01A09q90qw90lq917835lq9X";
        assert_eq!(ids.assign(kept), kept);
        let minted = ids.assign("call_abcdefghijklmnopqrstuvwx");
        assert!(
            CallIdShape::Anthropic.fits(&minted) && minted.len() == 30,
            "{minted}"
        );
        assert_ne!(
            ids.assign("toolu_01historyhistoryhistory1"),
            "toolu_01historyhistoryhistory1"
        );
    }
}
