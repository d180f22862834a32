//! What one request asks of a route's pool ([`SendOptions`]) and what it leaves behind: which route
//! and replica answered and the time spent waiting on them ([`UpstreamRecord`]), why the pool tried
//! again or gave up ([`RetryReason`], [`PoolError`]), and the answer's stream that keeps its
//! replica counted busy and records how the answer ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use switchboard_providers::{BackendError, EventStream, RetryClass};

use super::replica::{InFlight, PoolSettings};

/// Why the pool tried again elsewhere, or gave up on a route; a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    /// An attempt failed in a way worth retrying.
    Backend(RetryClass),
    /// Every replica was ejected: nothing was tried.
    Ejected,
}

impl RetryReason {
    pub fn label(self) -> &'static str {
        match self {
            RetryReason::Backend(class) => class.label(),
            RetryReason::Ejected => "replicas_ejected",
        }
    }
}

/// What one request asks of the pool.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// No retry or back-off starts that would end past it.
    pub deadline: Instant,
    /// Set under `prefix_affinity`: the hash of the conversation's start.
    pub affinity: Option<u64>,
    /// Where the request notes which replica answered and how long it waited on backends.
    pub upstreams: Arc<UpstreamRecord>,
    /// Another route takes the request if this one fails before answering: a replica slow
    /// to start its answer is given up on, and a route whose replicas are all ejected is
    /// not tried.
    pub fallback: bool,
}

/// What the upstream side of one request amounted to: which route and replica answered
/// (for the response's headers) and how long the request waited on backends (so that the
/// gateway's own share of its time can be told apart).
#[derive(Debug, Default)]
pub struct UpstreamRecord {
    pub(super) answered: std::sync::OnceLock<(String, String)>,
    pub(super) waited_nanos: AtomicU64,
    /// Whether the answer may name its replica to the client (`upstream_header`): a
    /// replica's address tells a client about the network behind the gateway.
    pub show_upstream: bool,
}

impl UpstreamRecord {
    pub fn new(show_upstream: bool) -> Self {
        Self {
            show_upstream,
            ..Self::default()
        }
    }

    /// The route and replica that answered first, once one has.
    pub fn answered(&self) -> Option<(&str, &str)> {
        self.answered
            .get()
            .map(|(route, upstream)| (route.as_str(), upstream.as_str()))
    }

    /// Time spent waiting on backends: connecting, for the first byte, between events.
    pub fn waited(&self) -> Duration {
        Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed))
    }

    pub(super) fn wait(&self, time: Duration) {
        let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        self.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Why the pool has no answer.
#[derive(Debug)]
pub enum PoolError {
    /// Every attempt failed in a way another route might not (`fallbacks` apply).
    Exhausted {
        error: BackendError,
        reason: RetryReason,
    },
    /// The request itself failed (a 400, an error the backend explained, an answer too
    /// large): no other server would do better.
    Failed(BackendError),
}

impl PoolError {
    pub(super) fn error(&self) -> &BackendError {
        match self {
            PoolError::Exhausted { error, .. } | PoolError::Failed(error) => error,
        }
    }

    pub fn into_backend_error(self) -> BackendError {
        match self {
            PoolError::Exhausted { error, .. } | PoolError::Failed(error) => error,
        }
    }
}

/// The answer's events, keeping the replica counted busy until the answer is read or
/// dropped, adding the time its reader waits for each event to the record, and noting in
/// the replica's record how the answer ended: read to its end, or broken by the replica
/// (a cut, a stall, bytes that decode to no answer). An answer dropped unread counts for
/// nothing.
pub(super) struct ReplicaStream {
    pub(super) events: EventStream,
    pub(super) in_flight: InFlight,
    pub(super) upstreams: Arc<UpstreamRecord>,
    pub(super) waiting_since: Option<Instant>,
    pub(super) route: String,
    pub(super) settings: PoolSettings,
    /// The answer's end has been noted.
    pub(super) settled: bool,
}

impl ReplicaStream {
    pub(super) fn settle(&mut self, item: Option<&<EventStream as Stream>::Item>) {
        if self.settled {
            return;
        }
        let replica = &self.in_flight.0;
        match item {
            None => {
                self.settled = true;
                replica.succeeded();
            }
            Some(Err(error)) => {
                self.settled = true;
                if error.retry_class().is_some_and(RetryClass::blames_replica) {
                    tracing::warn!(route = %self.route, upstream = %replica.url, outcome = %outcome(error), "replica broke an answer under way");
                    if let Some(length) = replica.failed(&self.settings) {
                        tracing::warn!(route = %self.route, upstream = %replica.url, seconds = length.as_secs_f64(), "replica ejected after failing");
                    }
                }
            }
            Some(Ok(_)) => {}
        }
    }
}

impl Stream for ReplicaStream {
    type Item = <EventStream as Stream>::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.events.poll_next_unpin(cx);
        match (&polled, self.waiting_since) {
            (std::task::Poll::Pending, None) => self.waiting_since = Some(Instant::now()),
            (std::task::Poll::Ready(_), Some(since)) => {
                self.upstreams.wait(since.elapsed());
                self.waiting_since = None;
            }
            _ => {}
        }
        if let std::task::Poll::Ready(item) = &polled {
            self.settle(item.as_ref());
        }
        polled
    }
}

/// An attempt's outcome for the log: a backend's error text is left out, since backends
/// refusing a key tend to quote it.
pub(super) fn outcome(error: &BackendError) -> String {
    match error {
        BackendError::Http { status, .. } => format!("HTTP {status}"),
        other => other.to_string(),
    }
}
