//! Per-key rate limits: requests per minute, tokens per minute and open requests, the
//! verdict on one request with the budgets left (the `x-ratelimit-*` headers). The counters
//! live in this process (`memory.rs`) or in Redis (`redis.rs`).
//!
//! Each per-minute limit is a leaky bucket: a level that drains at the limit's rate, so a
//! key may burst up to its whole minute's budget and then gets a steady share, with no
//! window edge at which twice the budget passes. A request adds 1 to its bucket and is
//! refused when that would overflow. A request is refused only while the token bucket is
//! already full (the budget spent); once its body is read, an admitted request reserves its
//! estimate in the bucket (refused, the same way, when concurrent requests spent the budget
//! meanwhile), and its answer's usage replaces the reservation once known.
//! `limits.lua` is the same arithmetic run inside Redis; the two must agree.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

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
