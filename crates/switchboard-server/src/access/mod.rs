//! Access control: client keys, the routes each key may use, and per-key rate limits, in
//! this process or shared by replicas through Redis.
//!
//! Two places check a request. The [`gate`] layer runs before any endpoint: it finds the
//! key (401 without one), applies the key's limits to every POST and to `GET
//! /v1/characters/{name}`, which runs character code (429, with OpenAI's
//! `x-ratelimit-*` headers on refusals and successes alike) and hands the endpoint a
//! [`Caller`]. Which route a request wants is in its body, so each API front-end calls
//! [`authorize`] once it has parsed the body (404 for what the key may not use), then
//! [`reserve`] once it knows the request's estimate (429 when concurrent requests spent the
//! key's tokens meanwhile), and gives the caller to its `RequestLog`, which settles the
//! reservation with the answer's tokens. Errors take the shape of the endpoint's own API
//! ([`error_response`]).

mod gate;
mod keys;
mod limits;
mod redis;
mod shape;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};

use crate::config::Config;
use crate::error::ApiError;
use crate::pipeline::{CHARACTER_PREFIX, GatewayRequest, estimate_text, estimate_tokens, model_id};
use crate::state::{AppState, Live};
use keys::{Key, Keyring, Secret};
use limits::{Exceeded, Limits, Memory, Verdict, decide};
use redis::{Remote, StoreError};

pub use gate::gate;
pub use keys::{KeyConfig, NewKeyError, SecretConfig, new_key};
pub use shape::error_response;

/// How long an open request's lease outlives the request deadline in Redis: a replica that
/// dies mid-request frees its slots after this.
const LEASE_MARGIN: Duration = Duration::from_secs(60);
/// What a request without `max_tokens` reserves for its answer (a character's reserves
/// `character_max_tokens`).
const DEFAULT_ANSWER_TOKENS: u64 = 1024;

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

/// Who sent a request, as the [`gate`] found it: a key, or nobody on a gateway without keys.
/// It carries the configuration the gate admitted the request under, which the request
/// keeps to its end whatever a reload swaps in meanwhile.
#[derive(Debug, Clone)]
pub struct Caller {
    key: Option<Arc<Key>>,
    live: Arc<Live>,
    /// A request subject to its key's `tokens_per_minute`: its part of the budget.
    share: Option<Arc<Share>>,
}

/// A token-limited request's part of its key's budget, shared by the gate (which answers
/// with its headers), the endpoint (which reserves it) and the log line (which settles it).
#[derive(Debug, Default)]
struct Share(Mutex<Standing>);

#[derive(Debug, Default)]
struct Standing {
    /// Tokens reserved and not yet settled.
    reserved: u64,
    /// The prompt's estimate: what an answer left before its usage came costs at least.
    prompt: u64,
    /// The reservation's refusal, whose headers the gate sends.
    refused: Option<Verdict>,
}

impl Share {
    fn lock(&self) -> MutexGuard<'_, Standing> {
        // A poisoned lock only means another request panicked mid-update; the numbers are
        // still numbers.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Caller {
    /// The configuration this request runs under.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The key's name, for log lines (never the key).
    pub fn name(&self) -> Option<&str> {
        self.key.as_deref().map(|key| key.name.as_str())
    }

    /// Whether the caller may use a model id (a route name or `character/<name>`).
    pub fn may_use(&self, id: &str) -> bool {
        self.key.as_ref().is_none_or(|key| key.may_use(id))
    }

    /// Charges an answer's tokens to the key's budget, in place of what the request
    /// reserved.
    pub fn charge(&self, tokens: u64) {
        let Some(key) = &self.key else { return };
        if tokens > 0 {
            key.count_tokens(tokens);
        }
        if key.limits.tokens_per_minute.is_none() {
            return;
        }
        let reserved = self
            .share
            .as_ref()
            .map_or(0, |share| std::mem::take(&mut share.lock().reserved));
        let tokens = i64::try_from(tokens)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(reserved).unwrap_or(i64::MAX));
        if tokens == 0 {
            return;
        }
        match &self.live.access.limiter {
            Limiter::Memory(memory) => memory.charge(key, tokens),
            Limiter::Redis(remote) => remote.charge(key, tokens),
        }
    }

    /// Charges an answer delivered without its usage (its client left, or it failed part
    /// way): the prompt's estimate and the output sent, estimated from its bytes. Never
    /// nothing once the request reached a backend, so leaving early saves no budget.
    pub fn charge_estimate(&self, output_bytes: u64) {
        let prompt = self.share.as_ref().map_or(0, |share| share.lock().prompt);
        self.charge(prompt.saturating_add(estimate_text(output_bytes)));
    }
}

/// Reserves what a parsed request may cost against its key's `tokens_per_minute`, until its
/// answer's usage replaces the reservation: the prompt's estimate and the answer's
/// `max_tokens` (else `character_max_tokens` for a character, [`DEFAULT_ANSWER_TOKENS`] for
/// a route), at most the whole budget. Concurrent requests thus cannot all pass a budget
/// none of them has spent yet: refused (429) once their reservations spent it.
pub fn reserve(caller: &Caller, request: &GatewayRequest) -> Result<(), ApiError> {
    let (Some(key), Some(share)) = (&caller.key, &caller.share) else {
        return Ok(());
    };
    let Some(limit) = key.limits.tokens_per_minute else {
        return Ok(());
    };
    let prompt = estimate_tokens(&request.request);
    let asked = request.request.max_tokens.map(u64::from);
    let answer = if request.model.starts_with(CHARACTER_PREFIX) {
        let cap = u64::from(caller.live.config.character_max_tokens);
        asked.map_or(cap, |asked| asked.min(cap))
    } else {
        asked.unwrap_or(DEFAULT_ANSWER_TOKENS)
    };
    let tokens = prompt.saturating_add(answer).min(limit);
    share.lock().prompt = prompt;
    let (refused, level) = match &caller.live.access.limiter {
        Limiter::Memory(memory) => memory.reserve(key, tokens),
        // Redis told no level yet (it failed since start-up): the admission's own rule,
        // failing open or closed, has already decided.
        Limiter::Redis(remote) => match remote.reserve(key, tokens) {
            Some(decided) => decided,
            None => return Ok(()),
        },
    };
    if !refused {
        share.lock().reserved = tokens;
        return Ok(());
    }
    let budget = Limits {
        tokens_per_minute: Some(limit),
        ..Limits::default()
    };
    let verdict = decide(&budget, 0.0, level, 0);
    metrics::counter!("gateway_rate_limited_total", "key" => key.name.clone(), "limit" => Exceeded::Tokens.label())
        .increment(1);
    share.lock().refused = Some(verdict);
    Err(gate::too_many(&key.name, &verdict, Exceeded::Tokens))
}

/// The 503 of a request whose limits cannot be checked (`rate_limit_fail_open = false`).
fn unavailable(error: &StoreError) -> ApiError {
    ApiError::upstream(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("rate limits cannot be checked, so the request was not served: {error}"),
        "rate_limit_state_unavailable",
    )
}

/// The decision on a request that is subject to limits.
#[derive(Debug)]
enum Admission {
    /// The verdict is absent when Redis could not be asked and limits fail open.
    Admitted(Option<Verdict>, Option<Lease>),
    Refused(Verdict),
    /// Redis could not be asked and limits fail closed.
    Unavailable(StoreError),
}

/// An admitted request's place among the key's open requests, given back when dropped
/// (when the response body is finished or abandoned).
#[derive(Debug)]
struct Lease {
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
        config: &Config,
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
        let lease = config.request_timeout() + LEASE_MARGIN;
        let limiter = match (&config.state, previous) {
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
            ) => Limiter::Redis(remote.follow(
                keys.all().to_vec(),
                lease,
                config.rate_limit_fail_open,
            )),
            (Some(url), _) => Limiter::Redis(
                Remote::new(url, keys.all().to_vec(), lease, config.rate_limit_fail_open)
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

    /// Decides on a request from `key` and counts it when admitted.
    async fn admit(self: &Arc<Self>, key: &Arc<Key>) -> Admission {
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

/// Checks that the caller may use the model a request names (a route, an alias of one, or
/// `character/<name>`): a key's `routes` globs are matched against the route or character
/// that answers, so an alias cannot reach a route the key may not use. Every API front-end
/// calls this once it has parsed the request's body.
pub fn authorize(state: &AppState, caller: &Caller, model: &str) -> Result<(), ApiError> {
    let Some(key) = caller.key.as_deref().filter(|key| key.is_restricted()) else {
        return Ok(());
    };
    match model_id(state, &caller.live, model) {
        Some(id) if key.may_use(&id) => Ok(()),
        // A name the key may not use is answered exactly like a name that does not exist:
        // a 403 would tell the key which names exist beyond its reach. (The pipeline's own
        // 404 lists every route; this key sees only its own.)
        found => {
            if found.is_some() {
                metrics::counter!("gateway_access_denied_total", "reason" => "route_not_allowed", "key" => key.name.clone())
                    .increment(1);
            }
            Err(hidden(key, model))
        }
    }
}

/// The 404 of a name the caller's key may not use, or that nothing answers: the same
/// either way.
fn hidden(key: &Key, model: &str) -> ApiError {
    ApiError::not_found(format!(
        "no model named \"{model}\" is available to the API key \"{}\"; GET /v1/models lists what it may use",
        key.name
    ))
}

impl Caller {
    /// The 404 for a model name nothing answers: what the pipeline says (`found`, which
    /// may name what exists) to a caller that may use the name, and to a restricted key
    /// that may not, exactly what [`authorize`] says for names beyond its reach.
    pub fn not_found(&self, model: &str, found: ApiError) -> ApiError {
        match self.key.as_deref() {
            Some(key) if !key.may_use(model) => hidden(key, model),
            _ => found,
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

/// Checks the access settings of a configuration, adding each problem found.
pub fn check_config(config: &Config, problems: &mut Vec<String>) {
    problems.extend(keys::check(&config.keys, config.metrics_key.as_ref()));
    if let Some(url) = &config.state
        && let Err(problem) = redis::check_url(url)
    {
        problems.push(problem);
    }
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
    fn access_settings_are_checked_with_the_rest_of_the_file() {
        let error = Config::from_toml(
            "state = \"http://127.0.0.1:6379\"\n[[key]]\nname = \"a\"\nkey_env = \"A\"\nmax_concurrent = 0\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("state: expected redis://HOST:PORT/DB"),
            "{error}"
        );
        assert!(
            error.contains("key[0] (\"a\").max_concurrent must be at least 1"),
            "{error}"
        );
        let error = Config::from_toml("[[key]]\nname = \"a\"\nkey_env = \"A\"\nroute = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `route`"), "{error}");
        let config = Config::from_toml("state = \"redis://:secret@127.0.0.1:6390/2\"\n").unwrap();
        let access = Access::build(&config, &|_| None, None).unwrap();
        let shown = format!("{access:?}");
        assert!(
            shown.contains("127.0.0.1:6390") && !shown.contains("secret"),
            "{shown}"
        );
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
