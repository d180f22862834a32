//! Rate-limit counters shared by gateway replicas through Redis (`state =
//! "redis://HOST:PORT/DB"`): each decision is one atomic script (`limits.lua`) on Redis's
//! own clock, over the gateway's one Redis link (`redis_link`).
//!
//! An answer's tokens are not sent on their own on the answer's path: they wait in this
//! process and ride along with the key's next admission (charged before it is decided, so
//! a client's next request always sees its last answer), and a flush sends what is left
//! every second, so other replicas see it within that. Releases of open requests that
//! failed (Redis stalled or down) wait and ride along the same way, so a key's slots come
//! back as soon as Redis answers rather than when their leases lapse.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use redis::Script;

use super::keys::Key;
use switchboard_redis::RedisLink;
pub use switchboard_redis::{LinkError as StoreError, check_url};

const PREFIX: &str = "switchboard:limits:";
/// How often tokens no admission has carried yet are sent on their own.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Most leases a key keeps to end once Redis answers; past it the oldest are left to lapse.
const KEPT_RELEASES: usize = 1024;

/// The levels a decision is made from, as they were before the request (earlier answers'
/// tokens charged). `limits::decide` reaches the script's verdict from the same numbers:
/// the same floating-point operations on the same values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    pub requests: f64,
    pub tokens: f64,
    pub open: u32,
}

/// The connection to Redis and the script.
#[derive(Debug)]
struct Shared {
    link: RedisLink,
    script: Script,
}

impl Shared {
    fn new(url: &str) -> Result<Self, String> {
        Ok(Self {
            link: RedisLink::new(url)?,
            script: Script::new(include_str!("limits.lua")),
        })
    }

    /// Settles `kept` with the key, then decides on a request and, when admitted, counts
    /// it; an admitted request with a limit on open requests holds the lease `lease` until
    /// [`Shared::release`] or until `lease_length` has passed (a replica that died cannot
    /// hold it for ever).
    async fn admit(
        &self,
        key: &Key,
        lease: &str,
        lease_length: Duration,
        kept: &Pending,
    ) -> Result<Levels, StoreError> {
        let mut connection = self.link.connection().await?;
        let limits = key.limits;
        let reply: Result<Vec<String>, _> = self
            .script
            .key(bucket(key, "requests"))
            .key(bucket(key, "tokens"))
            .key(bucket(key, "open"))
            .arg("admit")
            .arg(limits.requests_per_minute.unwrap_or(0))
            .arg(limits.tokens_per_minute.unwrap_or(0))
            .arg(limits.max_concurrent.unwrap_or(0))
            .arg(lease)
            .arg(lease_length.as_micros() as u64)
            .arg(kept.tokens)
            .arg(&kept.leases)
            .invoke_async(&mut connection)
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => return Err(self.link.failed(&error).await),
        };
        let number = |index: usize| reply.get(index).and_then(|text| text.parse::<f64>().ok());
        match (number(1), number(2), number(3)) {
            (Some(requests), Some(tokens), Some(open)) => Ok(Levels {
                requests,
                tokens,
                open: open as u32,
            }),
            _ => Err(self.link.answered(format!("unexpected reply {reply:?}"))),
        }
    }

    /// Settles `kept` with the key, then reserves `reserve` tokens (0: none) unless its
    /// budget is spent. Returns whether the reservation was refused, and the tokens level
    /// before it.
    /// Sends what a key kept; the key's tokens level once it is settled.
    async fn settle(&self, key: &Key, kept: &Pending) -> Result<f64, StoreError> {
        let mut connection = self.link.connection().await?;
        let reply: Result<Vec<String>, _> = self
            .script
            .key(bucket(key, "requests"))
            .key(bucket(key, "tokens"))
            .key(bucket(key, "open"))
            .arg("settle")
            .arg(key.limits.tokens_per_minute.unwrap_or(0))
            .arg(kept.tokens)
            .arg(&kept.leases)
            .invoke_async(&mut connection)
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => return Err(self.link.failed(&error).await),
        };
        match reply.first().and_then(|level| level.parse().ok()) {
            Some(level) => Ok(level),
            None => Err(self.link.answered(format!("unexpected reply {reply:?}"))),
        }
    }

    /// Ends an open request's lease.
    async fn release(&self, key: &Key, lease: &str) -> Result<(), StoreError> {
        let mut connection = self.link.connection().await?;
        let removed: Result<i64, _> = redis::cmd("ZREM")
            .arg(bucket(key, "open"))
            .arg(lease)
            .query_async(&mut connection)
            .await;
        match removed {
            Ok(_) => Ok(()),
            Err(error) => Err(self.link.failed(&error).await),
        }
    }

    /// Whether Redis answers now (for the start-up report).
    async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.link.connection().await?;
        let pong: Result<String, _> = redis::cmd("PING").query_async(&mut connection).await;
        match pong {
            Ok(_) => Ok(()),
            Err(error) => Err(self.link.failed(&error).await),
        }
    }
}

/// The limits of every key, counted in Redis.
#[derive(Debug)]
pub struct Remote {
    /// Kept by the limiter a reload builds, so the connection outlives a reload.
    shared: Arc<Shared>,
    /// Every key, by slot, for the flush.
    keys: Vec<Arc<Key>>,
    /// Tokens charged (or given back) in this process and not yet sent, by key slot.
    pending: Vec<AtomicI64>,
    /// Leases to end once Redis answers, by key slot: those of requests that ended while
    /// Redis could not be told, and those of admissions that failed (a call that timed out
    /// may still run when a stalled Redis wakes).
    releases: Vec<Mutex<Vec<String>>>,
    /// Each key's tokens level as Redis last told it, and when, by key slot: what a
    /// reservation is decided on without a round trip of its own.
    seen: Vec<Mutex<Option<(f64, Instant)>>>,
    /// How long an open request's lease lasts.
    lease: Duration,
    pub fail_open: bool,
    /// Set while Redis fails, so the recovery is said once.
    failing: AtomicBool,
}

impl Remote {
    /// `keys` in slot order. Starts the flush when there is a runtime to run it; it stops
    /// once the limiter is dropped.
    pub fn new(
        url: &str,
        keys: Vec<Arc<Key>>,
        lease: Duration,
        fail_open: bool,
    ) -> Result<Arc<Self>, String> {
        Ok(Self::over(
            Arc::new(Shared::new(url)?),
            keys,
            lease,
            fail_open,
        ))
    }

    /// The limiter of a reloaded configuration, over this one's connection.
    pub fn follow(&self, keys: Vec<Arc<Key>>, lease: Duration, fail_open: bool) -> Arc<Self> {
        Self::over(Arc::clone(&self.shared), keys, lease, fail_open)
    }

    fn over(
        shared: Arc<Shared>,
        keys: Vec<Arc<Key>>,
        lease: Duration,
        fail_open: bool,
    ) -> Arc<Self> {
        let remote = Arc::new(Self {
            shared,
            pending: keys.iter().map(|_| AtomicI64::new(0)).collect(),
            releases: keys.iter().map(|_| Mutex::default()).collect(),
            seen: keys.iter().map(|_| Mutex::default()).collect(),
            keys,
            lease,
            fail_open,
            failing: AtomicBool::new(false),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(flush_every_second(Arc::downgrade(&remote)));
        }
        remote
    }

    /// Decides on a request, carrying what the key kept. With `Ok`, an admitted request
    /// holding a lease holds the lease id returned.
    pub async fn admit(&self, key: &Key) -> Result<(Levels, String), StoreError> {
        let lease = format!("{:016x}", rand::random::<u64>());
        let mut kept = self.take(key);
        let outcome = self.shared.admit(key, &lease, self.lease, &kept).await;
        if let Ok(levels) = &outcome {
            self.saw(key, levels.tokens);
        }
        if let Err(error) = &outcome {
            // A call a stalled Redis received may still run when it wakes, and hold a lease
            // no request here holds: it is ended then too.
            if key.limits.max_concurrent.is_some() && !matches!(error, StoreError::Waiting { .. }) {
                kept.leases.push(lease.clone());
            }
            self.keep(key, kept);
        }
        self.observe("admit", outcome).map(|levels| (levels, lease))
    }

    /// Reserves an admitted request's estimate without a round trip of its own (its
    /// admission has just made one): decided on the key's tokens level as Redis last told
    /// this process (its admission's, or a later one), drained since, plus what this
    /// process has charged and not sent yet, which reservations made here join. Like
    /// admission, refused only while the budget is spent. The reservation reaches Redis with
    /// the key's next call, or the flush within a second. Whether it was refused, and the
    /// level it was decided on; `None` when Redis has told no level yet.
    pub fn reserve(&self, key: &Key, tokens: u64) -> Option<(bool, f64)> {
        let limit = key.limits.tokens_per_minute?;
        // Held while deciding, so that two reservations of the key are decided in turn.
        let seen = lock(self.seen.get(key.slot)?);
        let (level, at) = (*seen)?;
        let pending = self.pending.get(key.slot)?;
        let drained = (level - at.elapsed().as_secs_f64() * limit as f64 / 60.0).max(0.0);
        let level = drained + pending.load(Ordering::Relaxed).max(0) as f64;
        let refused = level >= limit as f64;
        if !refused {
            pending.fetch_add(i64::try_from(tokens).unwrap_or(i64::MAX), Ordering::Relaxed);
        }
        Some((refused, level))
    }

    /// Notes the key's tokens level as Redis told it just now.
    fn saw(&self, key: &Key, level: f64) {
        if let Some(seen) = self.seen.get(key.slot) {
            *lock(seen) = Some((level, Instant::now()));
        }
    }

    /// Adds tokens (negative: given back) to those the key's next admission (or the flush)
    /// carries.
    pub fn charge(&self, key: &Key, tokens: i64) {
        if let Some(pending) = self.pending.get(key.slot) {
            pending.fetch_add(tokens, Ordering::Relaxed);
        }
    }

    /// What the key kept for Redis, taken to be sent.
    fn take(&self, key: &Key) -> Pending {
        let tokens = self
            .pending
            .get(key.slot)
            .map_or(0, |pending| pending.swap(0, Ordering::Relaxed));
        let leases = self
            .releases
            .get(key.slot)
            .map(|releases| std::mem::take(&mut *lock(releases)))
            .unwrap_or_default();
        Pending { tokens, leases }
    }

    /// Keeps what could not be sent for the next try.
    fn keep(&self, key: &Key, kept: Pending) {
        self.charge(key, kept.tokens);
        if let Some(releases) = self.releases.get(key.slot) {
            let mut releases = lock(releases);
            releases.extend(kept.leases);
            let past = releases.len().saturating_sub(KEPT_RELEASES);
            releases.drain(..past);
        }
    }

    /// Sends what no admission has carried.
    async fn flush(&self) {
        for key in &self.keys {
            let kept = self.take(key);
            if kept.is_empty() {
                continue;
            }
            let outcome = self.shared.settle(key, &kept).await;
            match &outcome {
                Ok(level) => self.saw(key, *level),
                Err(_) => self.keep(key, kept),
            }
            // A failure is counted and logged there.
            let _ = self.observe("charge", outcome);
        }
    }

    /// Ends an admitted request's lease; one that cannot be ended now is kept, and ended
    /// with the key's next call to Redis.
    pub async fn release(&self, key: &Key, lease: String) {
        let outcome = self.shared.release(key, &lease).await;
        if outcome.is_err() {
            let leases = vec![lease];
            self.keep(key, Pending { tokens: 0, leases });
        }
        // A failure is counted and logged there.
        let _ = self.observe("release", outcome);
    }

    /// Says at start-up whether Redis answers.
    pub async fn report(&self) {
        let outcome = self.shared.ping().await;
        if self.observe("ping", outcome).is_ok() {
            tracing::info!(
                "rate limits are shared through Redis at {}",
                self.shared.link.address()
            );
        }
    }

    /// Counts and reports a failed Redis call (a warning per real attempt: at most one a
    /// second while Redis is down), and says once when Redis answers again.
    fn observe<T>(
        &self,
        operation: &'static str,
        outcome: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &outcome {
            Ok(_) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("Redis answers again: rate limits are enforced again");
                }
            }
            Err(error) => {
                self.failing.store(true, Ordering::Relaxed);
                metrics::counter!("gateway_rate_limit_state_errors_total", "operation" => operation)
                    .increment(1);
                let consequence = if self.fail_open {
                    "requests are admitted without rate limits (fail open)"
                } else {
                    "requests subject to rate limits are refused with 503 (rate_limit_fail_open = false)"
                };
                if matches!(error, StoreError::Waiting { .. }) {
                    tracing::debug!("{error}; {consequence}");
                } else {
                    tracing::warn!("{error}; {consequence}");
                }
            }
        }
        outcome
    }
}

impl Drop for Remote {
    /// A limiter a reload replaced is dropped when the last request admitted through it
    /// ends, usually just after that request's tokens were charged: they are sent on their
    /// own rather than lost with it.
    fn drop(&mut self) {
        let waiting: Vec<(Arc<Key>, Pending)> = self
            .keys
            .iter()
            .filter_map(|key| {
                let kept = self.take(key);
                (!kept.is_empty()).then(|| (Arc::clone(key), kept))
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for (key, kept) in waiting {
                    if let Err(error) = shared.settle(&key, &kept).await {
                        tracing::warn!(
                            "{error}; {} tokens of the key \"{}\" were not counted, and {} of its open requests end when their leases lapse",
                            kept.tokens,
                            key.name,
                            kept.leases.len()
                        );
                    }
                }
            });
        }
    }
}

/// What a key's calls to Redis carry besides their own work.
#[derive(Debug, Default)]
struct Pending {
    /// Tokens to charge (negative: to give back).
    tokens: i64,
    /// Leases to end.
    leases: Vec<String>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.tokens == 0 && self.leases.is_empty()
    }
}

/// A poisoned lock only means another thread panicked mid-push; the ids are still ids.
fn lock<T>(value: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    value
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn flush_every_second(remote: Weak<Remote>) {
    let mut ticks = tokio::time::interval(FLUSH_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(remote) = remote.upgrade() else {
            return;
        };
        remote.flush().await;
    }
}

/// A key's Redis key; the braces keep a key's three entries in one cluster slot, which a
/// script touching all three needs.
fn bucket(key: &Key, part: &str) -> String {
    format!("{PREFIX}{{{}}}:{part}", key.name)
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};
    use switchboard_testkit::RedisServer;

    use super::super::keys::{KeyConfig, Keyring, Presented};
    use super::*;

    #[tokio::test]
    async fn tokens_reach_redis_with_the_next_admission_or_the_flush() {
        let redis = RedisServer::start();
        let config = KeyConfig {
            name: "k".into(),
            // SHA-256 of "k".
            sha256: Some("8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a".into()),
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: Some(100),
            tokens_per_minute: Some(1000),
            max_concurrent: None,
        };
        let ring = Keyring::build(&[config], &|_| None).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        let Presented::Key(key) = ring.identify(&headers) else {
            panic!("the key is not recognised");
        };
        let remote = Remote::new(
            &redis.url,
            ring.all().to_vec(),
            Duration::from_secs(60),
            true,
        )
        .unwrap();
        // The buckets drain as time passes (1,000 tokens a minute: 0.017 a millisecond), so
        // the levels are compared within what a slow machine's few milliseconds drain.
        remote.charge(key, 7);
        let (levels, _) = remote.admit(key).await.unwrap();
        assert!((levels.tokens - 7.0).abs() < 0.5, "{levels:?}");
        assert!(levels.requests.abs() < 0.05, "{levels:?}");
        // Charged once: the next admission carries nothing more.
        remote.charge(key, 5);
        remote.flush().await;
        let (levels, _) = remote.admit(key).await.unwrap();
        assert!((levels.tokens - 12.0).abs() < 0.5, "{levels:?}");
        assert!((levels.requests - 1.0).abs() < 0.05, "{levels:?}");
    }
}
