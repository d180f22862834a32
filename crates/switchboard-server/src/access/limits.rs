//! Per-key rate limits: requests per minute, tokens per minute and open requests, the
//! verdict on one request with the budgets left (the `x-ratelimit-*` headers), and the
//! in-process counters used when no shared state is configured.
//!
//! Each per-minute limit is a leaky bucket: a level that drains at the limit's rate, so a
//! key may burst up to its whole minute's budget and then gets a steady share, with no
//! window edge at which twice the budget passes. A request adds 1 to its bucket and is
//! refused when that would overflow. A request is refused only while the token bucket is
//! already full (the budget spent); once its body is read, an admitted request reserves its
//! estimate in the bucket (refused, the same way, when concurrent requests spent the budget
//! meanwhile), and its answer's usage replaces the reservation once known.
//! `limits.lua` is the same arithmetic run inside Redis; the two must agree.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use super::keys::{Key, KeyConfig};

/// One minute, in the microseconds levels and clocks are counted in.
pub const MINUTE_US: f64 = 60_000_000.0;
/// Float rounding must not refuse the last request of a budget.
const SLACK: f64 = 1e-9;
/// Advice to a client refused for too many open requests: no clock says when one ends.
const CONCURRENT_RETRY: Duration = Duration::from_secs(1);

/// A key's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub requests_per_minute: Option<u64>,
    pub tokens_per_minute: Option<u64>,
    pub max_concurrent: Option<u32>,
}

impl Limits {
    pub fn of(config: &KeyConfig) -> Self {
        Self {
            requests_per_minute: config.requests_per_minute,
            tokens_per_minute: config.tokens_per_minute,
            max_concurrent: config.max_concurrent,
        }
    }

    pub fn any(&self) -> bool {
        self.requests_per_minute.is_some()
            || self.tokens_per_minute.is_some()
            || self.max_concurrent.is_some()
    }
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Requests,
    Tokens,
    Concurrent,
}

impl Exceeded {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Exceeded::Requests => "requests",
            Exceeded::Tokens => "tokens",
            Exceeded::Concurrent => "concurrent",
        }
    }
}

/// What is left of one per-minute limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub limit: u64,
    pub remaining: u64,
    /// Until the budget is whole again.
    pub reset: Duration,
}

/// The decision on one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The limit that refused it (the first of requests, tokens, open requests), and when
    /// to try again.
    pub refused: Option<(Exceeded, Duration)>,
    pub requests: Option<Budget>,
    pub tokens: Option<Budget>,
}

impl Verdict {
    /// The `x-ratelimit-*` headers OpenAI sends, and on a refusal `retry-after` (seconds)
    /// and `retry-after-ms` (which OpenAI's SDKs read first).
    pub fn headers(&self, headers: &mut HeaderMap) {
        // Static names and integer values: every admitted request carries these, so they
        // are made without parsing or formatting where they can be.
        let budgets = [
            (self.requests, REQUEST_HEADERS),
            (self.tokens, TOKEN_HEADERS),
        ];
        headers.reserve(6);
        for (budget, [limit, remaining, reset]) in budgets {
            let Some(budget) = budget else { continue };
            headers.insert(
                HeaderName::from_static(limit),
                HeaderValue::from(budget.limit),
            );
            headers.insert(
                HeaderName::from_static(remaining),
                HeaderValue::from(budget.remaining),
            );
            if let Ok(value) = HeaderValue::try_from(reset_text(budget.reset)) {
                headers.insert(HeaderName::from_static(reset), value);
            }
        }
        if let Some((_, retry)) = self.refused {
            let millis = u64::try_from(retry.as_millis()).unwrap_or(u64::MAX).max(1);
            headers.insert(
                HeaderName::from_static("retry-after"),
                HeaderValue::from(millis.div_ceil(1000)),
            );
            headers.insert(
                HeaderName::from_static("retry-after-ms"),
                HeaderValue::from(millis),
            );
        }
    }
}

const REQUEST_HEADERS: [&str; 3] = [
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
];
const TOKEN_HEADERS: [&str; 3] = [
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
];

/// A duration as OpenAI writes its resets: `20ms`, `1.5s`, `6m0s`.
fn reset_text(reset: Duration) -> String {
    let millis = reset.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let seconds = |millis: u128| {
        let text = format!("{}.{:03}", millis / 1000, millis % 1000);
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if millis < 60_000 {
        format!("{}s", seconds(millis))
    } else {
        format!("{}m{}s", millis / 60_000, seconds(millis % 60_000))
    }
}

fn micros(value: f64) -> Duration {
    Duration::from_micros(value.max(0.0).ceil() as u64)
}

/// A bucket's level after draining from `at` to `now` (microseconds).
pub fn drained(level: f64, at: u64, now: u64, per_minute: u64) -> f64 {
    let elapsed = now.saturating_sub(at) as f64;
    (level - elapsed * per_minute as f64 / MINUTE_US).max(0.0)
}

/// Decides on one request from the drained levels and the count of open requests. Nothing
/// is committed: an admitted request then adds 1 to the requests bucket and to the open count.
pub fn decide(limits: &Limits, requests: f64, tokens: f64, open: u32) -> Verdict {
    let mut refusals: Vec<(Exceeded, Duration)> = Vec::new();
    let mut verdict = Verdict::default();
    if let Some(per_minute) = limits.requests_per_minute {
        let limit = per_minute as f64;
        if requests + 1.0 > limit + SLACK {
            refusals.push((
                Exceeded::Requests,
                micros((requests + 1.0 - limit) * MINUTE_US / limit),
            ));
        }
    }
    if let Some(per_minute) = limits.tokens_per_minute {
        let limit = per_minute as f64;
        verdict.tokens = Some(Budget {
            limit: per_minute,
            remaining: (limit - tokens).max(0.0).floor() as u64,
            reset: micros(tokens * MINUTE_US / limit),
        });
        if tokens >= limit {
            // Until the level is below the limit again, and a millisecond more.
            refusals.push((
                Exceeded::Tokens,
                micros((tokens - limit) * MINUTE_US / limit + 1000.0),
            ));
        }
    }
    if let Some(cap) = limits.max_concurrent
        && open >= cap
    {
        refusals.push((Exceeded::Concurrent, CONCURRENT_RETRY));
    }
    if let Some((reason, _)) = refusals.first() {
        let wait = refusals
            .iter()
            .map(|(_, wait)| *wait)
            .max()
            .unwrap_or_default();
        verdict.refused = Some((*reason, wait));
    }
    if let Some(per_minute) = limits.requests_per_minute {
        let limit = per_minute as f64;
        let level = if verdict.refused.is_none() {
            requests + 1.0
        } else {
            requests
        };
        verdict.requests = Some(Budget {
            limit: per_minute,
            remaining: (limit - level + SLACK).max(0.0).floor() as u64,
            reset: micros(level * MINUTE_US / limit),
        });
    }
    verdict
}

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
    use super::*;

    fn limits(requests: Option<u64>, tokens: Option<u64>, open: Option<u32>) -> Limits {
        Limits {
            requests_per_minute: requests,
            tokens_per_minute: tokens,
            max_concurrent: open,
        }
    }

    #[test]
    fn a_whole_minute_of_requests_passes_then_one_more_waits_its_share() {
        // 7 does not divide a minute evenly: the seventh request must still pass.
        let limits = limits(Some(7), None, None);
        let mut level = 0.0;
        for remaining in (0..7).rev() {
            let verdict = decide(&limits, level, 0.0, 0);
            assert_eq!(verdict.refused, None);
            assert_eq!(verdict.requests.unwrap().remaining, remaining);
            level += 1.0;
        }
        let verdict = decide(&limits, level, 0.0, 0);
        let (reason, wait) = verdict.refused.unwrap();
        assert_eq!(reason, Exceeded::Requests);
        // One request drains in 60/7 s.
        assert_eq!(wait, micros(MINUTE_US / 7.0));
        assert_eq!(verdict.requests.unwrap().remaining, 0);
        assert_eq!(verdict.requests.unwrap().reset, Duration::from_secs(60));
        // Half a minute later, half the budget is back.
        let later = drained(level, 0, 30_000_000, 7);
        assert!((later - 3.5).abs() < 1e-9, "{later}");
        assert_eq!(
            decide(&limits, later, 0.0, 0).requests.unwrap().remaining,
            2
        );
    }

    #[test]
    fn tokens_refuse_only_once_the_budget_is_spent() {
        let limits = limits(None, Some(1000), None);
        let verdict = decide(&limits, 0.0, 999.5, 0);
        assert_eq!(verdict.refused, None, "half a token is left");
        assert_eq!(verdict.tokens.unwrap().remaining, 0);
        // An answer may overspend; the debt is waited out.
        let verdict = decide(&limits, 0.0, 1500.0, 0);
        let (reason, wait) = verdict.refused.unwrap();
        assert_eq!(reason, Exceeded::Tokens);
        assert_eq!(wait, Duration::from_millis(30_001));
        assert_eq!(verdict.tokens.unwrap().reset, Duration::from_secs(90));
    }

    #[test]
    fn open_requests_and_the_first_reason_with_the_longest_wait() {
        let limits = limits(Some(60), Some(60), Some(2));
        assert_eq!(decide(&limits, 0.0, 0.0, 1).refused, None);
        let verdict = decide(&limits, 0.0, 0.0, 2);
        assert_eq!(
            verdict.refused,
            Some((Exceeded::Concurrent, CONCURRENT_RETRY))
        );
        assert_eq!(
            verdict.requests.unwrap().remaining,
            60,
            "a refused request is not counted"
        );
        let verdict = decide(&limits, 60.0, 120.0, 2);
        assert_eq!(
            verdict.refused,
            Some((Exceeded::Requests, Duration::from_millis(60_001)))
        );
    }

    #[test]
    fn memory_counters_count_charge_and_release() {
        use super::super::keys::{Keyring, Presented};
        let config = KeyConfig {
            name: "k".into(),
            sha256: Some("8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a".into()),
            key_env: None,
            routes: None,
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

    #[test]
    fn headers_as_openai_names_them() {
        let verdict = Verdict {
            refused: Some((Exceeded::Requests, Duration::from_millis(1500))),
            requests: Some(Budget {
                limit: 3,
                remaining: 0,
                reset: Duration::from_secs(60),
            }),
            tokens: Some(Budget {
                limit: 1000,
                remaining: 250,
                reset: Duration::from_millis(45_250),
            }),
        };
        let mut headers = HeaderMap::new();
        verdict.headers(&mut headers);
        let get = |name: &str| headers[name].to_str().unwrap().to_owned();
        assert_eq!(get("x-ratelimit-limit-requests"), "3");
        assert_eq!(get("x-ratelimit-remaining-requests"), "0");
        assert_eq!(get("x-ratelimit-reset-requests"), "1m0s");
        assert_eq!(get("x-ratelimit-limit-tokens"), "1000");
        assert_eq!(get("x-ratelimit-remaining-tokens"), "250");
        assert_eq!(get("x-ratelimit-reset-tokens"), "45.25s");
        assert_eq!(get("retry-after"), "2");
        assert_eq!(get("retry-after-ms"), "1500");
        assert_eq!(reset_text(Duration::from_millis(20)), "20ms");
    }
}
