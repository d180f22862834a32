//! One server of a route and its health record: requests in flight, errors, and whether it
//! is out (ejected for a back-off period that grows while it keeps failing, or paused for
//! the time a 429 asked), as the pool and `/healthz` read it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};
use switchboard_providers::{Backend, BackendError, TimeoutPhase};

use super::settings::Balance;

/// The longest ejection, however long a replica keeps failing.
const MAX_EJECTION: Duration = Duration::from_secs(300);
/// Longest wait for a health check's answer, connecting included: a model list is small,
/// and a replica that cannot send it in this time is not serving.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// How a failed attempt is retried and how replicas are ejected, from the route's settings.
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    pub balance: Balance,
    /// Attempts after the first, over all replicas.
    pub retries: u32,
    /// Consecutive failures that take a replica out.
    pub eject_after: u32,
    /// The first ejection's length; each further one in a row doubles it.
    pub eject_for: Duration,
    /// Longest wait for an attempt's first event.
    pub first_byte: Duration,
}

/// One server of a route.
pub struct Replica {
    pub url: String,
    pub(super) backend: Arc<dyn Backend>,
    /// Mixed into prefix-affinity scores, so each conversation prefers one replica.
    pub(super) seed: u64,
    pub(super) in_flight: AtomicUsize,
    pub(super) requests: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) state: Mutex<Ejection>,
    pub(super) metrics: ReplicaMetrics,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Whether a replica is out, and how far into a run of failures it is.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Ejection {
    pub(super) consecutive_failures: u32,
    /// Ejections since the last success: the next one lasts `eject_for * 2^streak`.
    pub(super) streak: u32,
    pub(super) until: Option<Instant>,
    /// Not ejected, but asked to wait (a 429's `retry-after`).
    pub(super) paused_until: Option<Instant>,
    pub(super) ejections: u64,
}

/// The replica's series, registered once so the hot path only updates them.
pub(super) struct ReplicaMetrics {
    pub(super) in_flight: metrics::Gauge,
    pub(super) healthy: metrics::Gauge,
    pub(super) errors: metrics::Counter,
    pub(super) ejections: metrics::Counter,
}

impl ReplicaMetrics {
    pub(super) fn new(route: &str, url: &str) -> Self {
        let labels = [("route", route.to_owned()), ("upstream", url.to_owned())];
        let metrics = Self {
            in_flight: metrics::gauge!("gateway_upstream_in_flight", &labels),
            healthy: metrics::gauge!("gateway_upstream_healthy", &labels),
            errors: metrics::counter!("gateway_upstream_errors_total", &labels),
            ejections: metrics::counter!("gateway_upstream_ejections_total", &labels),
        };
        metrics.healthy.set(1.0);
        metrics
    }
}

/// A replica's state for `/healthz`.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaReport {
    /// `healthy`, `ejected` (with `back_in_secs`) or `paused` (it asked to wait).
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub back_in_secs: Option<f64>,
    pub in_flight: usize,
    pub requests: u64,
    pub errors: u64,
    pub ejections: u64,
    pub consecutive_failures: u32,
}

impl Replica {
    pub(super) fn new(route: &str, url: String, backend: Arc<dyn Backend>) -> Self {
        let seed = u64::from_be_bytes(prefix8(&Sha256::digest(url.as_bytes())));
        Self {
            metrics: ReplicaMetrics::new(route, &url),
            url,
            backend,
            seed,
            in_flight: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            state: Mutex::new(Ejection::default()),
        }
    }

    pub fn report(&self) -> ReplicaReport {
        let now = Instant::now();
        let ejection = self.ejection();
        let waiting = |until: Option<Instant>| until.filter(|until| *until > now);
        let (state, back_in) = match (waiting(ejection.until), waiting(ejection.paused_until)) {
            (Some(until), _) => ("ejected", Some(until)),
            (None, Some(until)) => ("paused", Some(until)),
            (None, None) => ("healthy", None),
        };
        ReplicaReport {
            state,
            back_in_secs: back_in.map(|until| (until - now).as_secs_f64()),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            ejections: ejection.ejections,
            consecutive_failures: ejection.consecutive_failures,
        }
    }

    pub(super) fn ejection(&self) -> Ejection {
        self.state.lock().map(|state| *state).unwrap_or_default()
    }

    /// When the replica takes requests again; `None` when it does now.
    pub(super) fn out_until(&self, now: Instant) -> Option<Instant> {
        let ejection = self.ejection();
        [ejection.until, ejection.paused_until]
            .into_iter()
            .flatten()
            .filter(|until| *until > now)
            .max()
    }

    /// An answer arrived whole: the run of failures is over.
    pub(super) fn succeeded(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.consecutive_failures = 0;
            state.streak = 0;
            state.until = None;
        }
        self.metrics.healthy.set(1.0);
    }

    /// A failure the replica is to blame for. Returns the ejection's length when this one
    /// takes it out: after `eject_after` in a row, or at once when it is back on probation
    /// after an ejection and fails again.
    pub(super) fn failed(&self, settings: &PoolSettings) -> Option<Duration> {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.metrics.errors.increment(1);
        let mut state = self.state.lock().ok()?;
        state.consecutive_failures += 1;
        if state.consecutive_failures < settings.eject_after.max(1) && state.streak == 0 {
            return None;
        }
        let length = settings
            .eject_for
            .saturating_mul(1 << state.streak.min(16))
            .min(MAX_EJECTION);
        state.streak += 1;
        state.consecutive_failures = 0;
        state.until = Some(Instant::now() + length);
        state.ejections += 1;
        drop(state);
        self.metrics.ejections.increment(1);
        self.metrics.healthy.set(0.0);
        Some(length)
    }

    /// The replica asked not to be sent anything for a while (429 with `retry-after`):
    /// respected, without counting against its health.
    pub(super) fn pause(&self, length: Duration) {
        if let Ok(mut state) = self.state.lock() {
            state.paused_until = Some(Instant::now() + length);
        }
    }

    /// An active health check answered: the replica is back whatever its record.
    pub fn restore(&self) {
        if let Ok(mut state) = self.state.lock()
            && state.until.is_some()
        {
            state.until = None;
            state.consecutive_failures = 0;
            tracing::info!(upstream = %self.url, "health check answered; replica is back");
        }
        self.metrics.healthy.set(1.0);
    }

    /// Asks the replica whether it serves, for at most `CHECK_TIMEOUT`.
    pub(super) async fn check(&self) -> Result<(), BackendError> {
        tokio::time::timeout(CHECK_TIMEOUT, self.backend.check())
            .await
            .unwrap_or(Err(BackendError::Timeout {
                phase: TimeoutPhase::FirstByte,
            }))
    }

    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.metrics.in_flight.set(now as f64);
        InFlight(Arc::clone(self))
    }
}

/// A request open on a replica, counted until dropped (the answer's stream included).
pub(super) struct InFlight(pub(super) Arc<Replica>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let now = self.0.in_flight.fetch_sub(1, Ordering::Relaxed) - 1;
        self.0.metrics.in_flight.set(now as f64);
    }
}

pub(super) fn prefix8(bytes: &[u8]) -> [u8; 8] {
    let mut prefix = [0; 8];
    for (to, from) in prefix.iter_mut().zip(bytes) {
        *to = *from;
    }
    prefix
}
