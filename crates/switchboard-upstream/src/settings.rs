//! A route's settings, as a plain value the route is built from (`[[route]]` entries of
//! the configuration deserialize into it), and their checks: what the upstream part needs
//! to know of the configuration, and no more.

use std::time::Duration;

use serde::Deserialize;
use switchboard_wire::Format;

/// One backend model clients can name in `"model"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub name: String,
    /// Glob patterns (`claude-*`) for other model names this route answers: clients send
    /// the names they know.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The backend's wire format: `openai`, `anthropic` or `ollama`.
    pub provider: String,
    /// The backend's root URL: the one-replica spelling of `urls`.
    #[serde(default)]
    pub url: Option<String>,
    /// Replicas serving the same model, requests spread over them by `balance`.
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default)]
    pub balance: Balance,
    /// Attempts after the first for a request that failed before its answer began
    /// (connect error, reset, 429, 5xx; on another replica only: no first event in time, a
    /// 200 that is no answer, 404, 501), each on another replica where there is one.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Routes tried in order when every attempt on this one failed that way. A fallback's
    /// own fallbacks are not followed.
    #[serde(default)]
    pub fallbacks: Vec<String>,
    /// Consecutive failures (those retried but 429, and streams broken after they began)
    /// that take a replica out of the pool.
    #[serde(default = "default_eject_after")]
    pub eject_after: u32,
    /// How long the first ejection lasts, in seconds; each further one in a row doubles it
    /// (up to five minutes).
    #[serde(default = "default_eject_secs")]
    pub eject_secs: f64,
    /// Ask each replica whether it serves (its model list) this often, in seconds: one
    /// that answers is back at once, one that does not counts a failure. Off when absent.
    #[serde(default)]
    pub health_check_secs: Option<f64>,
    /// Longest wait for an attempt's first event, in seconds; past it the attempt counts as
    /// the replica's failure and the request is tried on another. When absent, 60 s, or
    /// half the request deadline when that is shorter.
    #[serde(default)]
    pub first_byte_timeout_secs: Option<f64>,
    pub model: String,
    /// Name of the environment variable holding the API key (the key itself never lives in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub tool_calling: ToolCalling,
    /// The model's tool-call markup family (a parser name such as `hermes`): what prompted
    /// routes ask the model to write, and what native routes recover calls from. Chosen
    /// from the model name when absent.
    #[serde(default)]
    pub format: Option<String>,
    /// Native routes: tool calls the model wrote as text (a server whose parser or template
    /// did not match) become tool calls: in the family's markup where it is known, in any
    /// markup prose cannot produce where it is not. On by default; `false` turns it off.
    #[serde(default)]
    pub recover_text_calls: Option<bool>,
    /// What to do when the model's tool call breaks the request's tools.
    #[serde(default)]
    pub tool_call_errors: ToolCallPolicy,
    /// Vendor extensions forwarded to this OpenAI-compatible backend (`chat_template_kwargs`,
    /// `top_k`, …); the OpenAI API's own fields are always forwarded.
    #[serde(default)]
    pub forward_fields: Vec<String>,
    /// `[[mcp_server]]` names whose tools the gateway offers the model on every request to
    /// this route and runs itself.
    #[serde(default)]
    pub mcp_servers: Vec<String>,
    /// Rounds of gateway-run tool calls one request may take (model answers, the gateway
    /// runs its calls, the model answers again); at the bound the answer ends unfinished.
    #[serde(default = "default_max_tool_rounds")]
    pub max_tool_rounds: usize,
    /// Seconds all the gateway-run tool calls of one request may take together.
    #[serde(default = "default_max_tool_time_secs")]
    pub max_tool_time_secs: f64,
    /// Bytes the rounds of one request may add to its conversation (the model's answers and
    /// the results of its gateway-run calls); at the bound the answer ends with `length`.
    #[serde(default = "default_max_tool_conversation_bytes")]
    pub max_tool_conversation_bytes: usize,
    /// Gateway-run calls one answer of the model may make; each past it is answered with
    /// an `Error: …` result, unrun.
    #[serde(default = "default_max_tool_calls_per_round")]
    pub max_tool_calls_per_round: usize,
    /// Gateway-run calls of one request running at once; the rest wait their turn.
    #[serde(default = "default_max_concurrent_tool_calls")]
    pub max_concurrent_tool_calls: usize,
    /// The most tools one tool search the gateway runs returns (Chat Completions and
    /// Responses; Messages returns at most 5, as Anthropic does).
    #[serde(default = "default_tool_search_max_results")]
    pub tool_search_max_results: usize,
}

fn default_max_tool_rounds() -> usize {
    10
}

fn default_max_tool_time_secs() -> f64 {
    120.0
}

/// `max_body_bytes`' default: the rounds may add as much as a client may send.
fn default_max_tool_conversation_bytes() -> usize {
    4 * 1024 * 1024
}

fn default_max_tool_calls_per_round() -> usize {
    64
}

fn default_max_concurrent_tool_calls() -> usize {
    8
}

fn default_tool_search_max_results() -> usize {
    5
}

/// How a route spreads requests over its replicas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// Fewer requests in flight wins, between two replicas chosen at random.
    #[default]
    LeastBusy,
    /// The turns of one conversation (same system prompt and first message) go to the same
    /// replica while it takes requests, so the server's prompt cache is reused.
    PrefixAffinity,
}

fn default_retries() -> u32 {
    2
}

fn default_eject_after() -> u32 {
    3
}

fn default_eject_secs() -> f64 {
    5.0
}

/// The wait for a first event when the route names none: long enough for a local server to
/// read a long prompt, short enough that a replica that never answers costs a minute, not
/// the whole deadline.
const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalling {
    /// The backend parses tool calls itself.
    #[default]
    Native,
    /// Tools go into the prompt and Switchboard parses the model's text.
    Prompted,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallPolicy {
    /// Pass the call to the client unchanged and describe the problem in `tool_call_errors`.
    #[default]
    Report,
    /// Answer with an error instead of the call.
    Reject,
    /// Ask the model once more, showing it the broken call and what is wrong with it, and
    /// pass on the corrected calls; what is still wrong after that is reported.
    Repair,
}

/// Every problem of the configured routes, each starting with its key path
/// (`route[2] ("local").url: …`). `request_timeout_secs` bounds their first-byte waits.
/// The model-name prefix that names a character (`character/narrator`): spelled here, where
/// routes are refused names that start with it, and read by the pipeline, which resolves it.
pub const CHARACTER_PREFIX: &str = "character/";

pub fn check_routes(routes: &[RouteConfig], request_timeout_secs: u64) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, route) in routes.iter().enumerate() {
        let place = format!("route[{index}] (\"{}\")", route.name);
        if route.name.trim().is_empty() {
            problems.push(format!("route[{index}].name must not be empty"));
        }
        if route.name.starts_with(CHARACTER_PREFIX) {
            problems.push(format!(
                "{place}.name: \"{CHARACTER_PREFIX}\" names are reserved for characters"
            ));
        }
        if routes[..index].iter().any(|other| other.name == route.name) {
            problems.push(format!(
                "{place}.name: a route with this name already exists"
            ));
        }
        for (position, alias) in route.aliases.iter().enumerate() {
            if let Err(error) = globset::Glob::new(alias) {
                problems.push(format!("{place}.aliases[{position}]: {error}"));
            }
        }
        if Format::from_name(&route.provider).is_none() {
            problems.push(format!(
                "{place}.provider: \"{}\" is not one of {}",
                route.provider,
                Format::NAMES.join(", ")
            ));
        }
        check_replicas(routes, route, request_timeout_secs, &place, &mut problems);
        if !(1..=100).contains(&route.max_tool_rounds) {
            problems.push(format!("{place}.max_tool_rounds must be from 1 to 100"));
        }
        if !(route.max_tool_time_secs > 0.0 && route.max_tool_time_secs <= 3600.0) {
            problems.push(format!(
                "{place}.max_tool_time_secs must be more than 0 and at most 3600"
            ));
        }
        if route.max_tool_conversation_bytes == 0 {
            problems.push(format!(
                "{place}.max_tool_conversation_bytes must be at least 1"
            ));
        }
        if !(1..=1000).contains(&route.max_tool_calls_per_round) {
            problems.push(format!(
                "{place}.max_tool_calls_per_round must be from 1 to 1000"
            ));
        }
        if !(1..=50).contains(&route.tool_search_max_results) {
            problems.push(format!(
                "{place}.tool_search_max_results must be from 1 to 50"
            ));
        }
        if !(1..=256).contains(&route.max_concurrent_tool_calls) {
            problems.push(format!(
                "{place}.max_concurrent_tool_calls must be from 1 to 256"
            ));
        }
        if let Some(format) = &route.format
            && switchboard_parsers::Family::from_name(format).is_none()
        {
            problems.push(format!(
                "{place}.format: unknown parser family \"{format}\""
            ));
        }
    }
    problems
}

/// A route's replicas, settings and fallbacks.
fn check_replicas(
    routes: &[RouteConfig],
    route: &RouteConfig,
    request_timeout_secs: u64,
    place: &str,
    problems: &mut Vec<String>,
) {
    match (&route.url, route.urls.is_empty()) {
        (Some(_), false) => problems.push(format!(
            "{place}: give `url` (one replica) or `urls` (several), not both"
        )),
        (None, true) => problems.push(format!("{place}: `url` or `urls` is required")),
        _ => {}
    }
    let spelled: Vec<(String, &String)> = match &route.url {
        Some(url) => vec![(format!("{place}.url"), url)],
        None => route
            .urls
            .iter()
            .enumerate()
            .map(|(index, url)| (format!("{place}.urls[{index}]"), url))
            .collect(),
    };
    for (position, (key, url)) in spelled.iter().enumerate() {
        let url = &switchboard_providers::shown_url(url);
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(format!(
                "{key}: \"{url}\" must start with http:// or https://"
            ));
        }
        if spelled[..position]
            .iter()
            .any(|(_, other)| switchboard_providers::shown_url(other) == *url)
        {
            problems.push(format!("{key}: \"{url}\" is listed twice"));
        }
    }
    if route.eject_after == 0 {
        problems.push(format!("{place}.eject_after must be at least 1"));
    }
    if !(route.eject_secs.is_finite() && route.eject_secs > 0.0 && route.eject_secs <= 300.0) {
        problems.push(format!(
            "{place}.eject_secs must be more than 0 and at most 300"
        ));
    }
    if let Some(seconds) = route.health_check_secs
        && !(seconds.is_finite() && (0.1..=86_400.0).contains(&seconds))
    {
        problems.push(format!(
            "{place}.health_check_secs must be between 0.1 and 86400"
        ));
    }
    if let Some(seconds) = route.first_byte_timeout_secs
        && !(seconds.is_finite() && seconds > 0.0 && seconds < request_timeout_secs as f64)
    {
        problems.push(format!(
            "{place}.first_byte_timeout_secs must be more than 0 and less than request_timeout_secs ({})",
            request_timeout_secs
        ));
    }
    for (index, fallback) in route.fallbacks.iter().enumerate() {
        let key = format!("{place}.fallbacks[{index}]");
        if fallback == &route.name {
            problems.push(format!("{key}: a route cannot fall back to itself"));
        } else if !routes.iter().any(|other| &other.name == fallback) {
            problems.push(format!("{key}: no route is named \"{fallback}\""));
        } else if route.fallbacks[..index].contains(fallback) {
            problems.push(format!("{key}: \"{fallback}\" is listed twice"));
        }
    }
}

impl RouteConfig {
    /// The replicas' root URLs, `url` or `urls`.
    pub fn replica_urls(&self) -> Vec<&str> {
        match &self.url {
            Some(url) => vec![url.as_str()],
            None => self.urls.iter().map(String::as_str).collect(),
        }
    }

    /// The longest wait for an attempt's first event under a request deadline of
    /// `request_timeout`.
    pub fn first_byte_timeout(&self, request_timeout: Duration) -> Duration {
        self.first_byte_timeout_secs
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            .unwrap_or_else(|| DEFAULT_FIRST_BYTE_TIMEOUT.min(request_timeout / 2))
    }

    /// The wire format; [`check_routes`] has made sure the name is known.
    pub fn format(&self) -> Format {
        Format::from_name(&self.provider).unwrap_or(Format::OpenAi)
    }

    /// A route of one backend with every setting at its default (a configuration made from
    /// the environment).
    pub fn new(
        name: &str,
        provider: Format,
        url: String,
        model: String,
        api_key_env: &str,
    ) -> Self {
        Self {
            name: name.into(),
            aliases: Vec::new(),
            provider: provider.name().into(),
            url: Some(url),
            urls: Vec::new(),
            balance: Balance::LeastBusy,
            retries: default_retries(),
            fallbacks: Vec::new(),
            eject_after: default_eject_after(),
            eject_secs: default_eject_secs(),
            health_check_secs: None,
            first_byte_timeout_secs: None,
            model,
            api_key_env: (!api_key_env.is_empty()).then(|| api_key_env.into()),
            tool_calling: ToolCalling::Native,
            format: None,
            recover_text_calls: None,
            tool_call_errors: ToolCallPolicy::Report,
            forward_fields: Vec::new(),
            mcp_servers: Vec::new(),
            max_tool_rounds: default_max_tool_rounds(),
            max_tool_time_secs: default_max_tool_time_secs(),
            max_tool_conversation_bytes: default_max_tool_conversation_bytes(),
            max_tool_calls_per_round: default_max_tool_calls_per_round(),
            max_concurrent_tool_calls: default_max_concurrent_tool_calls(),
            tool_search_max_results: default_tool_search_max_results(),
        }
    }
}
