//! Who sent a request ([`Caller`]), as the [gate](super::gate) found it, and what the
//! endpoints ask of it once they have parsed the body: may this key use the model it names
//! ([`authorize`]), and may it spend what the request may cost ([`reserve`]). The answer's
//! log line settles what was reserved ([`Caller::charge`]).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::http::StatusCode;
use switchboard_access::{Exceeded, Key, Limits, Verdict, decide};

use crate::api::error::ApiError;
use crate::state::Snapshot;
use switchboard_mcp::names;
use switchboard_pipeline::{
    Asked, GatewayTools, Target, ToolFilter, estimate_text, estimate_tokens,
};
use switchboard_wire::ChatRequest;
use switchboard_wire::mcp::McpServerRequest;

/// What a request without `max_tokens` reserves for its answer (a character's reserves
/// `character_max_tokens`).
const DEFAULT_ANSWER_TOKENS: u64 = 1024;

/// Who sent a request, as the [gate](super::gate) found it: a key, or nobody on a gateway without keys.
/// It carries the configuration the gate admitted the request under, which the request
/// keeps to its end whatever a reload swaps in meanwhile.
#[derive(Debug, Clone)]
pub struct Caller {
    pub(super) key: Option<Arc<Key>>,
    pub(super) live: Arc<Snapshot>,
    /// A request subject to its key's `tokens_per_minute`: its part of the budget.
    pub(super) share: Option<Arc<Share>>,
}

/// A token-limited request's part of its key's budget, shared by the gate (which answers
/// with its headers), the endpoint (which reserves it) and the log line (which settles it).
#[derive(Debug, Default)]
pub(super) struct Share(Mutex<Standing>);

#[derive(Debug, Default)]
pub(super) struct Standing {
    /// Tokens reserved and not yet settled.
    pub(super) reserved: u64,
    /// The prompt's estimate: what an answer left before its usage came costs at least.
    pub(super) prompt: u64,
    /// The reservation's refusal, whose headers the gate sends.
    pub(super) refused: Option<Verdict>,
}

impl Share {
    pub(super) fn lock(&self) -> MutexGuard<'_, Standing> {
        // A poisoned lock only means another request panicked mid-update; the numbers are
        // still numbers.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Caller {
    /// The configuration this request runs under.
    pub fn snapshot(&self) -> &Snapshot {
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

    /// Whether the caller may list and call a tool, by its catalog name (`{server}_{tool}`,
    /// `{character file stem}_{tool}`). The key's globs match the name `/mcp` serves for it
    /// (shortened to `mcp_tool_name_max_chars`), on every path: one spelling, so that no
    /// path offers what another hides.
    pub fn may_use_tool(&self, name: &str) -> bool {
        self.key.as_ref().is_none_or(|key| {
            key.may_use_tool(&names::served(
                name,
                self.live.config.mcp_tool_name_max_chars,
            ))
        })
    }

    /// [`Caller::may_use_tool`] for a character's conversation, which runs after the
    /// request's handler has returned.
    pub fn tool_filter(&self) -> ToolFilter {
        match self.key {
            None => ToolFilter::all(),
            Some(_) => {
                let caller = self.clone();
                ToolFilter::new(move |name| caller.may_use_tool(name))
            }
        }
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
        self.live.access.charge(key, tokens);
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
pub fn reserve(caller: &Caller, target: &Target, request: &ChatRequest) -> Result<(), ApiError> {
    let (Some(key), Some(share)) = (&caller.key, &caller.share) else {
        return Ok(());
    };
    let Some(limit) = key.limits.tokens_per_minute else {
        return Ok(());
    };
    let prompt = estimate_tokens(request);
    let asked = request.max_tokens.map(u64::from);
    let answer = match target {
        Target::Character(_) => u64::from(caller.live.pipeline.character_max_tokens(request)),
        Target::Route(_) => asked.unwrap_or(DEFAULT_ANSWER_TOKENS),
    };
    let tokens = prompt.saturating_add(answer).min(limit);
    share.lock().prompt = prompt;
    let Some((refused, level)) = caller.live.access.reserve(key, tokens) else {
        return Ok(());
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
    Err(too_many(&key.name, &verdict, Exceeded::Tokens))
}

/// The route or character a request's model name resolves to (a route, an alias of one, the
/// default route, or `character/<name>`), once the caller may use it: every API front-end
/// calls this once it has parsed the request's body, and the value it returns is the one
/// the request runs on.
pub fn resolve(caller: &Caller, model: &str) -> Result<Target, ApiError> {
    let resolved = caller.live.pipeline.resolve(model);
    match caller.key.as_deref().filter(|key| key.is_restricted()) {
        None => Ok(resolved?),
        // A name nothing answers is told to a restricted key exactly like a name beyond its
        // reach: the pipeline's own 404 lists every route; this key sees only its own.
        Some(key) => {
            let target = resolved.map_err(|_| hidden(key, model))?;
            authorize(caller, &target, model)?;
            Ok(target)
        }
    }
}

/// Checks that the caller may use a resolved route or character: a key's `routes` globs
/// are matched against the route or character that answers, so an alias cannot reach a
/// route the key may not use. A 404 when it may not, worded as for a name that does not
/// exist: a 403 would tell the key which names exist beyond its reach.
pub fn authorize(caller: &Caller, target: &Target, model: &str) -> Result<(), ApiError> {
    let Some(key) = caller.key.as_deref().filter(|key| key.is_restricted()) else {
        return Ok(());
    };
    match target.id() {
        Some(id) if key.may_use(&id) => Ok(()),
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
    /// that may not, exactly what [`resolve`] says for names beyond its reach.
    pub fn not_found(&self, model: &str, found: ApiError) -> ApiError {
        match self.key.as_deref() {
            Some(key) if !key.may_use(model) => hidden(key, model),
            _ => found,
        }
    }
}

/// The 429 of a key past one of its limits, saying which and when to come back.
pub(super) fn too_many(name: &str, verdict: &Verdict, exceeded: Exceeded) -> ApiError {
    let wait = verdict
        .refused
        .map_or(0, |(_, wait)| wait.as_millis().div_ceil(1000).max(1));
    let what = match (exceeded, verdict.requests, verdict.tokens) {
        (Exceeded::Requests, Some(budget), _) => format!("{} requests per minute", budget.limit),
        (Exceeded::Tokens, _, Some(budget)) => format!("{} tokens per minute", budget.limit),
        _ => "its limit of open requests".to_owned(),
    };
    ApiError {
        status: StatusCode::TOO_MANY_REQUESTS,
        message: format!("the API key \"{name}\" has reached {what}; try again in {wait} s"),
        kind: "rate_limit_error",
        param: None,
        code: Some("rate_limit_exceeded".into()),
    }
}

/// The tools the gateway runs for this request: the MCP servers it names (`servers`) and
/// those its route offers, as far as the caller's key allows; the request's own tools
/// (`request`) keep their names.
pub async fn gateway_tools(
    caller: &Caller,
    target: &Target,
    servers: &[McpServerRequest],
    request: &ChatRequest,
    max_calls: Option<usize>,
) -> Result<Option<GatewayTools>, ApiError> {
    let asked = Asked {
        servers,
        taken: request
            .tools
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect(),
        may_use: &|name| caller.may_use_tool(name),
        max_calls,
    };
    caller
        .snapshot()
        .pipeline
        .gateway_tools(target, asked)
        .await
        .map_err(ApiError::from)
}
