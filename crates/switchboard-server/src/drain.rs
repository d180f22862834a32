//! Readiness, and the drain that lets a load balancer learn of a shutdown before the
//! listener closes. `/readyz` answers from [`Readiness::phase`]: `starting` until the
//! gateway can serve (its configuration and characters loaded, Redis reached when
//! configured), `ready`, then `draining` from the moment a shutdown signal arrives. A
//! draining gateway keeps listening and serves whatever still reaches it (a load balancer
//! learns of the 503 only at its next probe, and most do not retry a refused POST); it
//! stops listening once no request has been in flight for a while ([`Readiness::quiet`]),
//! or when the grace period runs out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How a shutdown signal is answered (`shutdown_grace_secs`, `drain_idle_secs`).
#[derive(Debug, Clone, Copy)]
pub struct Drain {
    /// From the signal to the end: the drain, then the requests still running.
    pub grace: Duration,
    /// How long no request may have been in flight before the listener closes.
    pub idle: Duration,
}

/// Where the gateway stands, as `/readyz` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Ready,
    Draining,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Draining => "draining",
        }
    }
}

/// The phase and the requests in flight; shared by the serving loop, the probes and the
/// layer that counts requests.
#[derive(Debug)]
pub struct Readiness {
    phase: AtomicU8,
    in_flight: AtomicUsize,
    /// Requests begun so far: a quiet period is quiet only if none began during it.
    begun: AtomicU64,
    /// Woken when the last request in flight ends.
    idle: Notify,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            phase: AtomicU8::new(Phase::Starting as u8),
            in_flight: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            idle: Notify::new(),
        }
    }
}

impl Readiness {
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Starting,
            1 => Phase::Ready,
            _ => Phase::Draining,
        }
    }

    /// Ready to take work, unless a drain has already begun.
    pub fn ready(&self) {
        let _ = self.phase.compare_exchange(
            Phase::Starting as u8,
            Phase::Ready as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// From now on `/readyz` answers 503; nothing else changes.
    pub fn drain(&self) {
        self.phase.store(Phase::Draining as u8, Ordering::Release);
    }

    /// Counts a request in flight until the returned guard is dropped (its answer's body
    /// finished or abandoned).
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.begun.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Resolves once no request has been in flight for `period` (at once for a zero
    /// period with nothing in flight).
    pub async fn quiet(&self, period: Duration) {
        loop {
            let idle = self.idle.notified();
            if self.in_flight() > 0 {
                idle.await;
                continue;
            }
            let before = self.begun.load(Ordering::Acquire);
            tokio::time::sleep(period).await;
            if self.in_flight() == 0 && self.begun.load(Ordering::Acquire) == before {
                return;
            }
        }
    }
}

/// One request in flight; see [`Readiness::begin`].
#[derive(Debug)]
pub struct InFlight(Arc<Readiness>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits for the last request, then for a period in which none began: at least the
    /// time the first was in flight, the gap before the second, and one whole period after
    /// it (only a lower bound is asserted; a loaded machine may take longer).
    #[tokio::test]
    async fn quiet_waits_for_the_last_request_and_then_a_period_without_new_ones() {
        let period = Duration::from_millis(300);
        let readiness = Arc::new(Readiness::default());
        let first = readiness.begin();
        let start = tokio::time::Instant::now();
        let waiting = tokio::spawn({
            let readiness = Arc::clone(&readiness);
            async move { readiness.quiet(period).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(first);
        // A request that begins and ends within the quiet period starts it again.
        tokio::time::sleep(Duration::from_millis(150)).await;
        drop(readiness.begin());
        waiting.await.unwrap();
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(500 + 150 + 300),
            "returned after {waited:?}"
        );
    }

    #[test]
    fn a_drain_is_never_undone_by_a_late_start() {
        let readiness = Readiness::default();
        assert_eq!(readiness.phase(), Phase::Starting);
        readiness.drain();
        readiness.ready();
        assert_eq!(readiness.phase(), Phase::Draining);
    }
}
