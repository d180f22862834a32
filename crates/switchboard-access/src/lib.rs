//! Access control: client keys, the routes each key may use, and per-key rate limits, in
//! this process or shared by replicas through Redis. This part decides; it knows neither
//! the configuration file (it is built from [`Settings`]) nor HTTP front-ends: the gate in
//! front of the endpoints and the per-request `Caller` live with the APIs, and
//! ask it.

mod keys;
mod limits;
mod memory;
mod redis;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;

use keys::{Keyring, Secret};
use memory::Memory;
use redis::Remote;

pub use keys::{Key, KeyConfig, NewKeyError, Presented, SecretConfig, new_key};
pub use limits::{Exceeded, Limits, Verdict, decide};
pub use redis::StoreError;

/// How long an open request's lease outlives the request deadline in Redis: a replica that
/// dies mid-request frees its slots after this.
const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// What the access part is built from: the keys and the rules around them, as the
/// configuration gives them.
#[derive(Debug, Clone)]
pub struct Settings {
    pub keys: Vec<KeyConfig>,
    /// A secret that opens `/metrics` besides any key.
    pub metrics_key: Option<SecretConfig>,
    /// `redis://…`: counters shared by replicas; in this process when absent.
    pub shared: Option<String>,
    /// Admit requests unchecked while Redis cannot be reached.
    pub fail_open: bool,
    /// Where the gateway listens: who can reach it decides what must be locked.
    pub listen: SocketAddr,
    pub allow_unauthenticated: bool,
    /// The whole-request deadline: an open request's lease in Redis outlives it.
    pub request_timeout: Duration,
}

/// The gateway's keys, and the counters behind their limits.
#[derive(Debug)]
pub struct Access {
    keys: Keyring,
    metrics_key: Option<Secret>,
    metrics_open: bool,
    limiter: Limiter,
}

#[derive(Debug)]
enum Limiter {
    Memory(Memory),
    Redis(Arc<Remote>),
}

/// The decision on a request that is subject to limits.
#[derive(Debug)]
pub enum Admission {
    /// The verdict is absent when Redis could not be asked and limits fail open.
    Admitted(Option<Verdict>, Option<Lease>),
    Refused(Verdict),
    /// Redis could not be asked and limits fail closed.
    Unavailable(StoreError),
}

/// An admitted request's place among the key's open requests, given back when dropped
/// (when the response body is finished or abandoned).
#[derive(Debug)]
pub struct Lease {
    access: Arc<Access>,
    key: Arc<Key>,
    /// The lease's id in Redis.
    id: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        match &self.access.limiter {
            Limiter::Memory(memory) => memory.release(&self.key),
            Limiter::Redis(remote) => {
                let (remote, key) = (Arc::clone(remote), Arc::clone(&self.key));
                let id = std::mem::take(&mut self.id);
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { remote.release(&key, id).await });
                }
            }
        }
    }
}

impl Access {
    /// Builds the keys (reading `key_env` variables through `env`) and the limiter; refuses
    /// a gateway that would be open to the network (see [`check_exposure`]). Built on a
    /// reload, it takes over `previous`'s counters for the keys both know (by name) and its
    /// Redis connection. Every problem is named.
    pub fn build(
        config: &Settings,
        env: &dyn Fn(&str) -> Option<String>,
        previous: Option<&Access>,
    ) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let keys = Keyring::build(&config.keys, env)
            .map_err(|found| problems.extend(found))
            .ok();
        let has_keys = !config.keys.is_empty();
        if let Err(problem) = check_exposure(config.listen, has_keys, config.allow_unauthenticated)
        {
            problems.push(format!("listen: {problem}"));
        }
        let metrics_key = config
            .metrics_key
            .as_ref()
            .map(|secret| Secret::build("metrics_key", secret, env))
            .transpose()
            .map_err(|problem| problems.push(problem))
            .ok()
            .flatten();
        let Some(keys) = keys.filter(|_| problems.is_empty()) else {
            return Err(problems);
        };
        if keys.is_empty() && !config.listen.ip().is_loopback() {
            tracing::warn!(
                "listening on {} without keys (allow_unauthenticated = true): anyone who can reach it may use every route",
                config.listen
            );
        }
        let metrics_open = metrics_open(config.listen, !keys.is_empty(), metrics_key.is_some());
        let lease = config.request_timeout + LEASE_MARGIN;
        let limiter = match (&config.shared, previous) {
            (
                None,
                Some(Access {
                    limiter: Limiter::Memory(memory),
                    keys: before,
                    ..
                }),
            ) => Limiter::Memory(memory.carry(before.all(), keys.all())),
            (None, _) => Limiter::Memory(Memory::new(keys.len())),
            (
                Some(_),
                Some(Access {
                    limiter: Limiter::Redis(remote),
                    ..
                }),
            ) => Limiter::Redis(remote.follow(keys.all().to_vec(), lease, config.fail_open)),
            (Some(url), _) => Limiter::Redis(
                Remote::new(url, keys.all().to_vec(), lease, config.fail_open)
                    .map_err(|problem| vec![problem])?,
            ),
        };
        Ok(Self {
            keys,
            metrics_key,
            metrics_open,
            limiter,
        })
    }

    /// The keys' names, in file order.
    pub fn key_names(&self) -> impl Iterator<Item = &str> {
        self.keys.all().iter().map(|key| key.name.as_str())
    }

    /// Whether these headers may read `/metrics` and the details of `/healthz`.
    pub fn metrics_allowed(&self, headers: &HeaderMap) -> bool {
        self.metrics_open
            || matches!(self.keys.identify(headers), keys::Presented::Key(_))
            || self
                .metrics_key
                .as_ref()
                .is_some_and(|secret| secret.presented_in(headers))
    }

    /// Whether the gateway has keys at all (without any, it is open).
    pub fn has_keys(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The key these headers present.
    pub fn identify(&self, headers: &HeaderMap) -> Presented<'_> {
        self.keys.identify(headers)
    }

    /// Charges `tokens` (less what was reserved, so possibly negative) to the key's
    /// `tokens_per_minute` budget.
    pub fn charge(&self, key: &Key, tokens: i64) {
        match &self.limiter {
            Limiter::Memory(memory) => memory.charge(key, tokens),
            Limiter::Redis(remote) => remote.charge(key, tokens),
        }
    }

    /// Reserves `tokens` of the key's budget: whether that was refused, and the budget's
    /// level. `None` when Redis has told no level yet (it failed since start-up): the
    /// admission's own rule, failing open or closed, has already decided.
    pub fn reserve(&self, key: &Key, tokens: u64) -> Option<(bool, f64)> {
        match &self.limiter {
            Limiter::Memory(memory) => Some(memory.reserve(key, tokens)),
            Limiter::Redis(remote) => remote.reserve(key, tokens),
        }
    }

    /// Decides on a request from `key` and counts it when admitted.
    pub async fn admit(self: &Arc<Self>, key: &Arc<Key>) -> Admission {
        let (verdict, id) = match &self.limiter {
            Limiter::Memory(memory) => (memory.admit(key), String::new()),
            Limiter::Redis(remote) => match remote.admit(key).await {
                Ok((levels, id)) => (
                    decide(&key.limits, levels.requests, levels.tokens, levels.open),
                    id,
                ),
                Err(_) if remote.fail_open => return Admission::Admitted(None, None),
                Err(error) => return Admission::Unavailable(error),
            },
        };
        if verdict.refused.is_some() {
            return Admission::Refused(verdict);
        }
        let lease = key.limits.max_concurrent.map(|_| Lease {
            access: Arc::clone(self),
            key: Arc::clone(key),
            id,
        });
        Admission::Admitted(Some(verdict), lease)
    }

    /// Says at start-up whether the shared state answers.
    pub async fn report(&self) {
        if let Limiter::Redis(remote) = &self.limiter {
            remote.report().await;
        }
    }
}

/// Refuses to serve without keys on an address other hosts can reach, unless told to.
pub fn check_exposure(
    listen: SocketAddr,
    has_keys: bool,
    allow_unauthenticated: bool,
) -> Result<(), String> {
    if has_keys || allow_unauthenticated || listen.ip().is_loopback() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {listen} without keys: anyone who can reach it could use every route and character. \
         Add [[key]] entries (`switchboard key new NAME` makes one), listen on 127.0.0.1, \
         or set allow_unauthenticated = true to serve openly on purpose"
    ))
}

/// Whether `/metrics` is open without a key: on a loopback address (only this host can
/// ask), or on a gateway deliberately open to all that has no key to ask for. Otherwise a
/// key or the `metrics_key` is needed.
pub fn metrics_open(listen: SocketAddr, has_keys: bool, has_metrics_key: bool) -> bool {
    listen.ip().is_loopback() || (!has_keys && !has_metrics_key)
}

/// Every problem of the access settings as a configuration file spells them: the keys,
/// the metrics key and the shared state's URL.
pub fn check(
    keys: &[KeyConfig],
    metrics_key: Option<&SecretConfig>,
    shared: Option<&str>,
) -> Vec<String> {
    let mut problems = keys::check(keys, metrics_key);
    if let Some(url) = shared
        && let Err(problem) = redis::check_url(url)
    {
        problems.push(problem);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_is_refused_only_when_open_to_the_network_by_accident() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let loopback6: SocketAddr = "[::1]:8080".parse().unwrap();
        let error = check_exposure(public, false, false).unwrap_err();
        assert!(
            error.contains("refusing to listen on 0.0.0.0:8080 without keys"),
            "{error}"
        );
        assert!(error.contains("allow_unauthenticated = true"), "{error}");
        assert!(check_exposure(public, false, true).is_ok());
        assert!(check_exposure(public, true, false).is_ok());
        assert!(check_exposure(loopback, false, false).is_ok());
        assert!(check_exposure(loopback6, false, false).is_ok());
    }

    #[test]
    fn metrics_need_a_key_off_loopback() {
        let public: SocketAddr = "192.0.2.10:8080".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(metrics_open(loopback, true, true));
        assert!(metrics_open(loopback, false, false));
        assert!(!metrics_open(public, true, false));
        assert!(!metrics_open(public, false, true));
        assert!(!metrics_open(public, true, true));
        // Only reachable with allow_unauthenticated: there is no key to ask for.
        assert!(metrics_open(public, false, false));
    }
}
