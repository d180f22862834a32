//! Every key's rate-limit counters in this process, used when no shared state is
//! configured: the arithmetic of `limits.rs` applied to counters kept by key slot.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::keys::Key;
use super::limits::{Verdict, decide, drained};

/// One key's counters in this process.
#[derive(Debug, Default)]
struct Counters {
    requests: (f64, u64),
    tokens: (f64, u64),
    open: u32,
}

/// Every key's counters in this process, by the key's slot.
#[derive(Debug)]
pub struct Memory {
    epoch: Instant,
    /// Shared with the limiter a reload replaces, for the keys both know.
    counters: Vec<Arc<Mutex<Counters>>>,
}

impl Memory {
    pub fn new(keys: usize) -> Self {
        Self {
            epoch: Instant::now(),
            counters: (0..keys).map(|_| Arc::default()).collect(),
        }
    }

    /// The counters for the keys of a reloaded configuration (`after`, in slot order): a key
    /// named like one of `before` keeps its counters, so that a reload hands no key a fresh
    /// minute's budget (levels are then measured against its new limits, as Redis does);
    /// requests still running under the old configuration release into the same counters.
    pub fn carry(&self, before: &[Arc<Key>], after: &[Arc<Key>]) -> Self {
        let counters = after
            .iter()
            .map(|key| {
                before
                    .iter()
                    .find(|old| old.name == key.name)
                    .and_then(|old| self.counters.get(old.slot))
                    .map_or_else(Arc::default, Arc::clone)
            })
            .collect();
        Self {
            epoch: self.epoch,
            counters,
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    fn with<T>(&self, key: &Key, work: impl FnOnce(&mut Counters, u64) -> T) -> Option<T> {
        let now = self.now();
        let counters = self.counters.get(key.slot)?;
        // A poisoned lock only means another request panicked mid-update; the numbers are
        // still numbers.
        let mut counters = counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(work(&mut counters, now))
    }

    /// Decides on a request and, when admitted, counts it (and opens it).
    pub fn admit(&self, key: &Key) -> Verdict {
        let limits = key.limits;
        self.with(key, |counters, now| {
            let requests = limits.requests_per_minute.map_or(0.0, |limit| {
                drained(counters.requests.0, counters.requests.1, now, limit)
            });
            let tokens = limits.tokens_per_minute.map_or(0.0, |limit| {
                drained(counters.tokens.0, counters.tokens.1, now, limit)
            });
            let verdict = decide(&limits, requests, tokens, counters.open);
            if verdict.refused.is_none() {
                counters.requests = (requests + 1.0, now);
                if limits.max_concurrent.is_some() {
                    counters.open += 1;
                }
            }
            verdict
        })
        .unwrap_or_default()
    }

    /// Adds an answer's tokens (negative: a reservation given back) to the key's token
    /// bucket.
    pub fn charge(&self, key: &Key, tokens: i64) {
        if let Some(limit) = key.limits.tokens_per_minute {
            self.with(key, |counters, now| {
                let level = drained(counters.tokens.0, counters.tokens.1, now, limit);
                counters.tokens = ((level + tokens as f64).max(0.0), now);
            });
        }
    }

    /// Reserves an admitted request's estimate unless the budget is spent: the tokens
    /// level before the reservation, and whether it was refused.
    pub fn reserve(&self, key: &Key, tokens: u64) -> (bool, f64) {
        let Some(limit) = key.limits.tokens_per_minute else {
            return (false, 0.0);
        };
        self.with(key, |counters, now| {
            let level = drained(counters.tokens.0, counters.tokens.1, now, limit);
            let refused = level >= limit as f64;
            if !refused {
                counters.tokens = (level + tokens as f64, now);
            }
            (refused, level)
        })
        .unwrap_or_default()
    }

    /// A request admitted by [`Memory::admit`] has ended.
    pub fn release(&self, key: &Key) {
        self.with(key, |counters, _| {
            counters.open = counters.open.saturating_sub(1)
        });
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;
    use crate::{Exceeded, KeyConfig};

    #[test]
    fn memory_counters_count_charge_and_release() {
        use super::super::keys::{Keyring, Presented};
        let config = KeyConfig {
            name: "k".into(),
            sha256: Some("8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a".into()),
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: Some(100),
            tokens_per_minute: Some(50),
            max_concurrent: Some(1),
        };
        let ring = Keyring::build(&[config], &|_| None).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        let Presented::Key(key) = ring.identify(&headers) else {
            panic!("the key is not recognised");
        };
        let memory = Memory::new(1);
        assert_eq!(memory.admit(key).refused, None);
        assert_eq!(
            memory.admit(key).refused.map(|(reason, _)| reason),
            Some(Exceeded::Concurrent)
        );
        memory.release(key);
        memory.charge(key, 80);
        let verdict = memory.admit(key);
        assert_eq!(
            verdict.refused.map(|(reason, _)| reason),
            Some(Exceeded::Tokens)
        );
        assert_eq!(
            verdict.requests.unwrap().remaining,
            99,
            "only the first request counted"
        );
    }

    #[test]
    fn reservations_fill_the_budget_until_usage_replaces_them() {
        use super::super::keys::Keyring;
        let config = KeyConfig {
            name: "k".into(),
            sha256: Some(hex::encode(<sha2::Sha256 as sha2::Digest>::digest("k"))),
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: None,
            tokens_per_minute: Some(100),
            max_concurrent: None,
        };
        let ring = Keyring::build(&[config], &|_| None).unwrap();
        let key = &ring.all()[0];
        let memory = Memory::new(1);
        // Levels drain 100 tokens a minute meanwhile: compared within a second's worth.
        let near = |level: f64, expected: f64| (level - expected).abs() < 2.0;
        let mut levels = Vec::new();
        for _ in 0..3 {
            let (refused, level) = memory.reserve(key, 40);
            assert!(!refused, "{level}");
            levels.push(level);
        }
        assert!(near(levels[1], 40.0) && near(levels[2], 80.0), "{levels:?}");
        let (refused, level) = memory.reserve(key, 40);
        assert!(refused && near(level, 120.0), "{level}");
        // Each answer used 10 of its 40: the budget is open again.
        for _ in 0..3 {
            memory.charge(key, 10 - 40);
        }
        let (refused, level) = memory.reserve(key, 40);
        assert!(!refused && near(level, 30.0), "{level}");
        // Giving back more than is left empties the bucket, no further.
        memory.charge(key, -1000);
        assert!(near(memory.reserve(key, 0).1, 0.0));
    }

    #[test]
    fn a_reload_keeps_the_counters_of_keys_it_keeps_by_name() {
        use super::super::keys::Keyring;
        let config = |name: &str, secret: &str| KeyConfig {
            name: name.into(),
            sha256: Some(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(secret))),
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: Some(2),
            tokens_per_minute: None,
            max_concurrent: Some(5),
        };
        let before =
            Keyring::build(&[config("gone", "g"), config("kept", "k")], &|_| None).unwrap();
        let memory = Memory::new(2);
        let kept = &before.all()[1];
        assert_eq!(memory.admit(kept).refused, None);
        assert_eq!(memory.admit(kept).refused, None);
        // A new key takes the first slot and the kept key's secret changes: its name counts.
        let after = Keyring::build(&[config("new", "n"), config("kept", "k2")], &|_| None).unwrap();
        let carried = memory.carry(before.all(), after.all());
        let verdict = carried.admit(&after.all()[1]);
        assert_eq!(
            verdict.refused.map(|(reason, _)| reason),
            Some(Exceeded::Requests),
            "the minute's budget was spent before the reload"
        );
        assert_eq!(carried.admit(&after.all()[0]).refused, None);
        // A request admitted before the reload ends: the same count of open requests.
        memory.release(kept);
        memory.release(kept);
        assert_eq!(
            carried.with(&after.all()[1], |counters, _| counters.open),
            Some(0)
        );
    }
}
