//! A route's replicas (one or more servers of the same model) and how a request gets an
//! answer from them: a replica is chosen by the route's balancing policy, and a request that
//! fails before its answer began (connect error, reset, 429, 5xx, no first event in time, an
//! answer that is no answer, a 404 or 501) is tried again on another replica, within the
//! retry budget and the request's deadline. Replicas that keep failing (a stream cut short
//! included) are taken out for a back-off period that grows while they keep failing; an
//! answer received whole, or an active health check, brings them back.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{StreamExt, stream};
use rand::Rng;
use sha2::{Digest, Sha256};
use switchboard_providers::{Backend, BackendError, ConnectionFailure, EventStream, TimeoutPhase};
use switchboard_tools::Message;
use switchboard_wire::ChatRequest;

use super::replica::{PoolSettings, Replica, prefix8};
use super::request::{PoolError, ReplicaStream, RetryReason, SendOptions, UpstreamRecord, outcome};
use super::settings::Balance;

/// The first back-off between attempts; doubled for each further attempt, jittered.
const RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait for one replica's tokenizer: a count is asked around each turn of an agent,
/// which waits for it, and an estimate is always at hand.
const COUNT_TIMEOUT: Duration = Duration::from_secs(2);
/// Replicas asked for one count at most.
const COUNT_ATTEMPTS: usize = 2;

/// A route's replicas.
pub struct Pool {
    route: String,
    replicas: Vec<Arc<Replica>>,
    settings: PoolSettings,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("route", &self.route)
            .field("replicas", &self.replicas)
            .finish_non_exhaustive()
    }
}

impl Pool {
    pub fn new(
        route: &str,
        replicas: Vec<(String, Arc<dyn Backend>)>,
        settings: PoolSettings,
    ) -> Self {
        Self {
            route: route.to_owned(),
            replicas: replicas
                .into_iter()
                .map(|(url, backend)| Arc::new(Replica::new(route, url, backend)))
                .collect(),
            settings,
        }
    }

    pub fn replicas(&self) -> &[Arc<Replica>] {
        &self.replicas
    }

    /// The key `prefix_affinity` sends by: the system prompt and the first message after
    /// it, which every later turn of the conversation repeats.
    pub fn affinity(&self, request: &ChatRequest) -> Option<u64> {
        if self.settings.balance != Balance::PrefixAffinity || self.replicas.len() < 2 {
            return None;
        }
        let mut hasher = Sha256::new();
        let mut first_turn = false;
        for message in &request.messages {
            let system = matches!(message, Message::System { .. } | Message::Developer { .. });
            if !system && first_turn {
                break;
            }
            first_turn |= !system;
            if serde_json::to_writer(&mut hasher, message).is_err() {
                return None;
            }
        }
        Some(u64::from_be_bytes(prefix8(&hasher.finalize())))
    }

    /// Sends the request to a replica and waits for its first event, trying again on
    /// another replica after a failure that allows it.
    pub async fn send(
        &self,
        request: &ChatRequest,
        ask: &SendOptions,
    ) -> Result<EventStream, PoolError> {
        let started = Instant::now();
        let result = self.try_replicas(request, ask).await;
        ask.upstreams.wait(started.elapsed());
        result
    }

    async fn try_replicas(
        &self,
        request: &ChatRequest,
        ask: &SendOptions,
    ) -> Result<EventStream, PoolError> {
        let mut tried: Vec<usize> = Vec::new();
        let mut attempt: u32 = 0;
        if ask.fallback
            && let Some(error) = self.all_ejected()
        {
            tracing::warn!(route = %self.route, "every replica is ejected; not trying any");
            return Err(PoolError::Exhausted {
                error,
                reason: RetryReason::Ejected,
            });
        }
        loop {
            let index = self.pick(&tried, ask.affinity);
            let replica = &self.replicas[index];
            // Waiting for a slow first event is worth it when nothing else could answer.
            let others = [tried.as_slice(), &[index]].concat();
            let bounded = ask.fallback || self.available(&others, Instant::now()) > 0;
            let failure = match self
                .attempt(replica, request, &ask.upstreams, bounded)
                .await
            {
                Ok(events) => {
                    tracing::debug!(route = %self.route, upstream = %replica.url, attempt, "backend answered");
                    let _ = ask
                        .upstreams
                        .answered
                        .set((self.route.clone(), replica.url.clone()));
                    return Ok(events);
                }
                Err(error) => error,
            };
            let Some(class) = failure.retry_class() else {
                tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(&failure), "backend attempt failed; not retryable");
                return Err(PoolError::Failed(failure));
            };
            let retry_after = match &failure {
                BackendError::Http { retry_after, .. } => *retry_after,
                _ => None,
            };
            if let Some(wait) = retry_after {
                replica.pause(wait);
            }
            if class.blames_replica()
                && let Some(length) = replica.failed(&self.settings)
            {
                tracing::warn!(route = %self.route, upstream = %replica.url, seconds = length.as_secs_f64(), "replica ejected after failing");
            }
            if !tried.contains(&index) {
                tried.push(index);
            }
            let exhausted = PoolError::Exhausted {
                error: failure,
                reason: RetryReason::Backend(class),
            };
            if attempt >= self.settings.retries {
                tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(exhausted.error()), "backend attempt failed; no retries left");
                return Err(exhausted);
            }
            // Another replica goes at once (after a short jittered pause); the same one
            // again waits for what it asked, or the growing back-off.
            let now = Instant::now();
            let elsewhere = self.available(&tried, now) > 0;
            if class.elsewhere_only() && !elsewhere {
                tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(exhausted.error()), "backend attempt failed; no other replica to try");
                return Err(exhausted);
            }
            let backoff = jittered(RETRY_BACKOFF.saturating_mul(1 << attempt.min(8)));
            let wait = match retry_after {
                Some(asked) if !elsewhere => asked,
                _ => backoff,
            };
            // The retry budget: with every replica ejected, a request makes no more
            // attempts on this route (its fallbacks, if any, are next) rather than try
            // each known-bad replica in turn.
            if self.available(&[], now + wait) == 0 {
                tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(exhausted.error()), "backend attempt failed; every replica is out");
                return Err(exhausted);
            }
            if now + wait >= ask.deadline {
                tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(exhausted.error()), "backend attempt failed; no time left to retry");
                return Err(exhausted);
            }
            tracing::warn!(route = %self.route, upstream = %replica.url, attempt, outcome = %outcome(exhausted.error()), "backend attempt failed; retrying");
            metrics::counter!("gateway_retries_total", "route" => self.route.clone(), "reason" => class.label())
                .increment(1);
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// One request to one replica, up to its first event, which must come within the
    /// route's `first_byte` wait when `bounded`. What follows is watched for the replica's
    /// record: a stream cut or broken later counts against it, one read to its end for it.
    async fn attempt(
        &self,
        replica: &Arc<Replica>,
        request: &ChatRequest,
        upstreams: &Arc<UpstreamRecord>,
        bounded: bool,
    ) -> Result<EventStream, BackendError> {
        let in_flight = replica.begin();
        let started = Instant::now();
        let answer = async {
            let mut events = replica.backend.chat(request.clone()).await?;
            let first = events.next().await;
            Ok::<_, BackendError>((events, first))
        };
        let (events, first) = if bounded {
            tokio::time::timeout(self.settings.first_byte, answer)
                .await
                .map_err(|_| BackendError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                })??
        } else {
            answer.await?
        };
        let first_event = started.elapsed();
        let first = match first {
            Some(Err(error)) if error.retry_class().is_some() => return Err(error),
            first => first,
        };
        metrics::histogram!("gateway_backend_ttfb_seconds", "route" => self.route.clone())
            .record(first_event.as_secs_f64());
        Ok(ReplicaStream {
            events: stream::iter(first).chain(events).boxed(),
            in_flight,
            upstreams: Arc::clone(upstreams),
            waiting_since: None,
            route: self.route.clone(),
            settings: self.settings,
            settled: false,
        }
        .boxed())
    }

    /// When every replica is ejected, the failure to report for the route: the replica
    /// back soonest, named.
    fn all_ejected(&self) -> Option<BackendError> {
        let now = Instant::now();
        let mut back = Vec::with_capacity(self.replicas.len());
        for replica in &self.replicas {
            back.push((
                replica.ejection().until.filter(|until| *until > now)?,
                replica,
            ));
        }
        let (until, replica) = back.into_iter().min_by_key(|(until, _)| *until)?;
        Some(BackendError::Connect {
            url: replica.url.clone(),
            failure: ConnectionFailure::Unreachable,
            detail: format!(
                "every replica of the route is ejected; the first is back in {:.1} s",
                (until - now).as_secs_f64()
            ),
        })
    }

    /// Replicas not tried yet that take requests now.
    fn available(&self, tried: &[usize], now: Instant) -> usize {
        (0..self.replicas.len())
            .filter(|index| {
                !tried.contains(index) && self.replicas[*index].out_until(now).is_none()
            })
            .count()
    }

    /// The replica for the next attempt: among those not tried yet that take requests
    /// now, by the balancing policy; when none is left, the one back soonest (a route
    /// whose every replica is out still tries, rather than refuse every request for the
    /// length of a back-off).
    fn pick(&self, tried: &[usize], affinity: Option<u64>) -> usize {
        let now = Instant::now();
        let mut candidates: Vec<usize> = (0..self.replicas.len())
            .filter(|index| {
                !tried.contains(index) && self.replicas[*index].out_until(now).is_none()
            })
            .collect();
        if candidates.is_empty() {
            candidates = (0..self.replicas.len())
                .filter(|index| self.replicas[*index].out_until(now).is_none())
                .collect();
        }
        if candidates.is_empty() {
            return (0..self.replicas.len())
                .min_by_key(|index| self.replicas[*index].out_until(now))
                .unwrap_or(0);
        }
        if let Some(key) = affinity {
            return candidates
                .into_iter()
                .max_by_key(|index| mix(key ^ self.replicas[*index].seed))
                .unwrap_or(0);
        }
        if candidates.len() == 1 {
            return candidates[0];
        }
        // Two random choices, the less busy wins: near the best spread without the herd
        // that always picking the least busy causes.
        let mut rng = rand::rng();
        let first = rng.random_range(0..candidates.len());
        let mut second = rng.random_range(0..candidates.len() - 1);
        if second >= first {
            second += 1;
        }
        let busy = |index: usize| {
            self.replicas[candidates[index]]
                .in_flight
                .load(Ordering::Relaxed)
        };
        if busy(second) < busy(first) {
            candidates[second]
        } else {
            candidates[first]
        }
    }

    /// Asks every replica whether it serves; those that answer are back, those that do not
    /// count a failure.
    pub async fn check(&self) {
        let results =
            futures::future::join_all(self.replicas.iter().map(|replica| replica.check())).await;
        for (replica, result) in self.replicas.iter().zip(results) {
            match result {
                Ok(()) => replica.restore(),
                Err(error) => {
                    tracing::warn!(route = %self.route, upstream = %replica.url, outcome = %outcome(&error), "health check failed");
                    replica.failed(&self.settings);
                }
            }
        }
    }

    /// The prompt's tokens by the backend's tokenizer, asked of a replica taking requests
    /// for at most `COUNT_TIMEOUT` (and never past `deadline`), then of another one when
    /// there is one. Its failures do not count against the replica: a tokenizer is no
    /// answer, and the caller has an estimate to give.
    pub async fn count_tokens(
        &self,
        request: ChatRequest,
        deadline: Instant,
    ) -> Result<Option<u64>, BackendError> {
        let mut tried = Vec::new();
        loop {
            let index = self.pick(&tried, None);
            tried.push(index);
            let replica = &self.replicas[index];
            let wait = COUNT_TIMEOUT.min(deadline.saturating_duration_since(Instant::now()));
            let error =
                match tokio::time::timeout(wait, replica.backend.count_tokens(request.clone()))
                    .await
                {
                    Ok(Ok(count)) => return Ok(count),
                    Ok(Err(error)) => error,
                    Err(_) => BackendError::Timeout {
                        phase: TimeoutPhase::FirstByte,
                    },
                };
            if tried.len() >= COUNT_ATTEMPTS
                || self.available(&tried, Instant::now()) == 0
                || Instant::now() >= deadline
            {
                return Err(error);
            }
            tracing::warn!(route = %self.route, upstream = %replica.url, outcome = %outcome(&error), "the tokenizer did not answer; asking another replica");
        }
    }
}

impl Pool {
    /// Embeddings from a replica taking requests, under `deadline`: `None` where the
    /// route's backend serves none (see `Backend::embed`). One replica is asked: an
    /// embedding is not a stream to recover, and a failure goes back to the client, whose
    /// request is cheap to send again.
    pub async fn embed(
        &self,
        path: &str,
        body: serde_json::Value,
        deadline: Instant,
    ) -> Option<Result<serde_json::Value, BackendError>> {
        let replica = &self.replicas[self.pick(&[], None)];
        let asked = replica.backend.embed(path, body)?;
        let wait = deadline.saturating_duration_since(Instant::now());
        Some(
            tokio::time::timeout(wait, asked)
                .await
                .unwrap_or(Err(BackendError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                })),
        )
    }
}

/// A route's pool as a plain [`Backend`], for programs that talk to a model without the
/// gateway (`switchboard chat`): the same balancing, retries with one back-off and
/// ejection, each request under `timeout`.
#[derive(Debug)]
pub struct PoolBackend {
    pub pool: Arc<Pool>,
    pub timeout: Duration,
}

impl Backend for PoolBackend {
    fn chat(&self, request: ChatRequest) -> BoxFuture<'_, Result<EventStream, BackendError>> {
        Box::pin(async move {
            let ask = SendOptions {
                deadline: Instant::now() + self.timeout,
                affinity: self.pool.affinity(&request),
                upstreams: Arc::new(UpstreamRecord::new(false)),
                fallback: false,
            };
            self.pool
                .send(&request, &ask)
                .await
                .map_err(PoolError::into_backend_error)
        })
    }

    fn count_tokens(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'_, Result<Option<u64>, BackendError>> {
        Box::pin(
            self.pool
                .count_tokens(request, Instant::now() + self.timeout),
        )
    }

    fn check(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        let index = self.pool.pick(&[], None);
        Box::pin(self.pool.replicas[index].check())
    }
}

/// A 64-bit finaliser (SplitMix64's): rendezvous scores that spread evenly.
fn mix(mut value: u64) -> u64 {
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// Between half and all of `base`, so that clients failing together do not retry together.
fn jittered(base: Duration) -> Duration {
    base.mul_f64(rand::rng().random_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_providers::{BackendConfig, connect};
    use switchboard_wire::Format;

    fn pool(replicas: usize, balance: Balance) -> Pool {
        let replicas = (0..replicas)
            .map(|index| {
                let url = format!("http://127.0.0.1:{}", 9000 + index);
                let backend = connect(Format::OpenAi, BackendConfig::new(url.clone())).unwrap();
                (url, backend)
            })
            .collect();
        Pool::new(
            "test",
            replicas,
            PoolSettings {
                balance,
                retries: 2,
                eject_after: 3,
                eject_for: Duration::from_secs(5),
                first_byte: Duration::from_secs(60),
            },
        )
    }

    #[test]
    fn ejections_come_after_failures_in_a_row_and_grow_while_they_go_on() {
        let pool = pool(1, Balance::LeastBusy);
        let replica = &pool.replicas[0];
        assert_eq!(replica.failed(&pool.settings), None);
        assert_eq!(replica.failed(&pool.settings), None);
        assert_eq!(replica.failed(&pool.settings), Some(Duration::from_secs(5)));
        assert_eq!(replica.report().state, "ejected");
        // Back on probation, one more failure is enough, for twice as long.
        assert_eq!(
            replica.failed(&pool.settings),
            Some(Duration::from_secs(10))
        );
        replica.succeeded();
        assert_eq!(replica.report().state, "healthy");
        assert_eq!(
            replica.failed(&pool.settings),
            None,
            "a success ends the run"
        );
        assert_eq!(replica.report().ejections, 2);
    }

    #[test]
    fn a_route_with_every_replica_out_still_tries_the_one_back_soonest() {
        let pool = pool(2, Balance::LeastBusy);
        for _ in 0..3 {
            pool.replicas[0].failed(&pool.settings);
        }
        pool.replicas[1].pause(Duration::from_secs(1));
        assert_eq!(pool.pick(&[], None), 1);
        assert_eq!(pool.pick(&[1], None), 1, "tried, but the only one not out");
    }

    #[test]
    fn affinity_follows_the_conversations_start_and_picks_one_replica_for_it() {
        let pool = pool(3, Balance::PrefixAffinity);
        let turn = |messages: &[(&str, &str)]| ChatRequest {
            messages: messages
                .iter()
                .map(|(role, text)| {
                    serde_json::from_value(serde_json::json!({"role": role, "content": text}))
                        .unwrap()
                })
                .collect(),
            ..ChatRequest::default()
        };
        let first = turn(&[("system", "terse"), ("user", "hello")]);
        let later = turn(&[
            ("system", "terse"),
            ("user", "hello"),
            ("assistant", "hi"),
            ("user", "more"),
        ]);
        let other = turn(&[("system", "terse"), ("user", "goodbye")]);
        let key = pool.affinity(&first).unwrap();
        assert_eq!(pool.affinity(&later), Some(key));
        assert_ne!(pool.affinity(&other), Some(key));
        let home = pool.pick(&[], Some(key));
        assert!((0..20).all(|_| pool.pick(&[], Some(key)) == home));
        // Its replica tried, the conversation goes on elsewhere.
        assert_ne!(pool.pick(&[home], Some(key)), home);
        assert_eq!(
            self::pool(3, Balance::LeastBusy).affinity(&first),
            None,
            "least_busy computes no key"
        );
    }
}
