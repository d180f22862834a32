//! The gateway's configuration: `switchboard.toml`, or embedded defaults built from the
//! environment when there is no file. Flags and `SWITCHBOARD_*` variables override both
//! (the binary applies them).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_wire::Format;

use crate::connections::ConnectionLimits;
use crate::drain::Drain;
pub use crate::store::StoreSettings;
use switchboard_access::{KeyConfig, SecretConfig};
pub use switchboard_pipeline::tool_servers::McpServerConfig;
pub use switchboard_upstream::{Balance, RouteConfig, ToolCallPolicy, ToolCalling};

/// Everything `serve` needs to start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// The characters' folder; `characters` (and optional) when not configured.
    #[serde(default)]
    pub characters: Option<PathBuf>,
    /// The route characters talk through; the first native route when absent.
    #[serde(default)]
    pub character_route: Option<String>,
    /// The longest tool name served over MCP: 64 (what model APIs accept) less what clients
    /// put in front (Claude Code's `mcp__{server}__`). Longer names are shortened with a hash.
    #[serde(default = "default_mcp_name_chars")]
    pub mcp_tool_name_max_chars: usize,
    /// Live 2025-11-25 MCP sessions at most; past it `initialize` is 503.
    #[serde(default = "default_mcp_max_sessions")]
    pub mcp_max_sessions: usize,
    /// Live 2025-11-25 MCP sessions one key may hold; past it its `initialize` is 429.
    #[serde(default = "default_mcp_max_sessions_per_key")]
    pub mcp_max_sessions_per_key: usize,
    /// How long an MCP session nothing happens in lives, in seconds (its GET stream ends
    /// with it).
    #[serde(default = "default_mcp_session_idle")]
    pub mcp_session_idle_timeout_secs: u64,
    /// Most tokens a character's reply may take, tool rounds included; a client's smaller
    /// `max_tokens` lowers it.
    #[serde(default = "default_character_max_tokens")]
    pub character_max_tokens: u32,
    /// Largest request body accepted, in bytes.
    #[serde(default = "default_body_limit")]
    pub max_body_bytes: usize,
    /// Whole-request deadline, in seconds.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: u64,
    /// Most bytes of words, reasoning and tool calls one answer may receive from its backend
    /// (over retries and a character's tool rounds); past it the answer ends with
    /// `backend_answer_too_large` and the backend request is closed.
    #[serde(default = "default_answer_limit")]
    pub max_answer_bytes: usize,
    /// How long in-flight requests may take to finish after a shutdown signal, in seconds.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace_secs: u64,
    /// After a shutdown signal the gateway keeps listening (`/readyz` answers 503, so a
    /// load balancer takes it out) until no request has been in flight for this long, in
    /// seconds, or `shutdown_grace_secs` runs out; 0 stops listening at once.
    #[serde(default = "default_drain_idle")]
    pub drain_idle_secs: u64,
    /// Time a client has to send a request's headers, in seconds.
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout_secs: u64,
    /// Time a client has to send a request's body, in seconds (never more than the request
    /// deadline).
    #[serde(default = "default_body_read_timeout")]
    pub body_read_timeout_secs: u64,
    /// How long a connection with no request in flight stays open, in seconds: idle
    /// keep-alive connections, and connections that never send anything.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_secs: u64,
    /// Open client connections at most (never more than half the process's descriptor
    /// limit); more wait to be accepted until one closes.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// The route that answers model names no route or alias matches; off when absent.
    #[serde(default)]
    pub default_route: Option<String>,
    /// Answers name the replica that served them in `x-switchboard-upstream` (its URL,
    /// without userinfo). Off by default: a replica's address tells clients about the
    /// network behind the gateway.
    #[serde(default)]
    pub upstream_header: bool,
    /// The Responses API's store (`store: true`, `previous_response_id`).
    #[serde(default)]
    pub responses: StoreSettings,
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteConfig>,
    /// Upstream MCP servers: their tools served at `/mcp` and offered to characters.
    #[serde(default, rename = "mcp_server")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// URL globs (`https://tools.example.com/*`) of MCP servers a request may name itself
    /// for the gateway to run (OpenAI's `server_url`, Anthropic's `url`), besides the
    /// configured ones. None by default: the gateway fetches no URL a request makes up.
    #[serde(default)]
    pub mcp_allowed_urls: Vec<String>,
    /// Client keys; without any, the gateway is open (and then only on a loopback address
    /// unless `allow_unauthenticated`).
    #[serde(default, rename = "key")]
    pub keys: Vec<KeyConfig>,
    /// Serve without keys on a non-loopback address.
    #[serde(default)]
    pub allow_unauthenticated: bool,
    /// A secret that opens `/metrics` (besides any key) when listening beyond loopback.
    #[serde(default)]
    pub metrics_key: Option<SecretConfig>,
    /// `redis://HOST:PORT/DB`: rate-limit counters shared by replicas; in-process when absent.
    #[serde(default)]
    pub state: Option<String>,
    /// Admit requests unchecked (true, the default) or refuse them with 503 while Redis
    /// cannot be reached.
    #[serde(default = "default_fail_open")]
    pub rate_limit_fail_open: bool,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}

/// The settings a running gateway cannot change: the listener and the bounds its
/// connections were accepted under, the shared state and response store it opened, the
/// characters' folder it watches, and the tool names its MCP endpoint fixed. A reload keeps
/// the running value of each and names those the file changed, so a setting belongs here,
/// and nowhere else, to need a restart. Its fields are named as the file's keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartupSettings {
    pub listen: SocketAddr,
    /// The MCP endpoint's tool names are fixed when its router is built.
    pub mcp_tool_name_max_chars: usize,
    /// So are its sessions' bounds.
    pub mcp_max_sessions: usize,
    pub mcp_max_sessions_per_key: usize,
    pub mcp_session_idle_timeout_secs: u64,
    pub characters: Option<PathBuf>,
    pub shutdown_grace_secs: u64,
    pub drain_idle_secs: u64,
    pub header_read_timeout_secs: u64,
    pub body_read_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub max_connections: usize,
    pub responses: StoreSettings,
    pub state: Option<String>,
}

impl StartupSettings {
    /// The keys whose values differ in `other`, in field order.
    pub fn changed_in(&self, other: &StartupSettings) -> Vec<String> {
        // Compared as serialized fields, so the names are the keys and none can be missed.
        let fields = |settings: &StartupSettings| match serde_json::to_value(settings) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => serde_json::Map::new(),
        };
        let (before, after) = (fields(self), fields(other));
        before
            .into_iter()
            .filter(|(key, value)| after.get(key) != Some(value))
            .map(|(key, _)| key)
            .collect()
    }

    /// The bounds connections are accepted and read under; the body's time never exceeds
    /// the request's deadline.
    pub fn connection_limits(&self, request_timeout: Duration) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
            body_read_timeout: Duration::from_secs(self.body_read_timeout_secs)
                .min(request_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            max_connections: self.max_connections,
        }
    }
}

impl Config {
    /// The folder characters are loaded from.
    pub fn characters_dir(&self) -> &Path {
        self.characters
            .as_deref()
            .unwrap_or_else(|| Path::new("characters"))
    }
}

fn default_mcp_name_chars() -> usize {
    switchboard_tools::names::DEFAULT_MAX_CHARS
}

fn default_mcp_max_sessions() -> usize {
    switchboard_mcp::SessionOptions::default().limits.overall
}

fn default_mcp_max_sessions_per_key() -> usize {
    switchboard_mcp::SessionOptions::default().limits.per_owner
}

fn default_mcp_session_idle() -> u64 {
    switchboard_mcp::SessionOptions::default().idle.as_secs()
}

fn default_character_max_tokens() -> u32 {
    4096
}

fn default_body_limit() -> usize {
    4 * 1024 * 1024
}

fn default_answer_limit() -> usize {
    16 * 1024 * 1024
}

fn default_request_timeout() -> u64 {
    300
}

fn default_drain_idle() -> u64 {
    1
}

fn default_shutdown_grace() -> u64 {
    10
}

fn default_header_read_timeout() -> u64 {
    10
}

fn default_body_read_timeout() -> u64 {
    30
}

fn default_idle_timeout() -> u64 {
    60
}

fn default_max_connections() -> usize {
    4096
}

fn default_fail_open() -> bool {
    true
}

/// Every problem found in a configuration, one sentence each, starting with the key path it
/// concerns (`route[2] ("local").url: …`), so that one run names them all.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct ConfigProblems(pub Vec<String>);

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // The reason is in the message and not a `source`, so that a chain of causes does not
    // repeat it.
    #[error("cannot read {}: {reason}", path.display())]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{}: {} problem(s):\n{problems}", path.display(), problems.0.len())]
    Invalid {
        path: PathBuf,
        problems: ConfigProblems,
    },
}

impl Config {
    /// Reads and checks a `switchboard.toml`.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|reason| ConfigError::Read {
            path: path.to_owned(),
            reason,
        })?;
        Self::from_toml(&text).map_err(|problems| ConfigError::Invalid {
            path: path.to_owned(),
            problems,
        })
    }

    /// Parses and checks configuration text. Text that does not parse is one problem, named
    /// by its line and column; a parsed file is checked whole.
    pub fn from_toml(text: &str) -> Result<Self, ConfigProblems> {
        let config: Config = toml::from_str(text)
            .map_err(|error| ConfigProblems(vec![parse_problem(text, &error)]))?;
        config.check()?;
        Ok(config)
    }

    /// The embedded defaults: listen on 127.0.0.1:8080, load `./characters`, and one route
    /// per backend the environment names (`OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `OLLAMA_HOST`).
    pub fn from_environment(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut routes = Vec::new();
        if let Some(url) = lookup("OPENAI_BASE_URL") {
            routes.push(RouteConfig::new(
                "openai",
                Format::OpenAi,
                url,
                lookup("OPENAI_MODEL").unwrap_or_else(|| "default".into()),
                "OPENAI_API_KEY",
            ));
        }
        if lookup("ANTHROPIC_API_KEY").is_some() {
            let url =
                lookup("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into());
            let model = lookup("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into());
            routes.push(RouteConfig::new(
                "anthropic",
                Format::Anthropic,
                url,
                model,
                "ANTHROPIC_API_KEY",
            ));
        }
        if let Some(host) = lookup("OLLAMA_HOST") {
            let url = if host.contains("://") {
                host
            } else {
                format!("http://{host}")
            };
            routes.push(RouteConfig::new(
                "ollama",
                Format::Ollama,
                url,
                lookup("OLLAMA_MODEL").unwrap_or_else(|| "llama3.2".into()),
                "",
            ));
        }
        Config {
            listen: default_listen(),
            characters: None,
            character_route: None,
            character_max_tokens: default_character_max_tokens(),
            mcp_tool_name_max_chars: default_mcp_name_chars(),
            mcp_max_sessions: default_mcp_max_sessions(),
            mcp_max_sessions_per_key: default_mcp_max_sessions_per_key(),
            mcp_session_idle_timeout_secs: default_mcp_session_idle(),
            default_route: None,
            upstream_header: false,
            responses: StoreSettings::default(),
            max_body_bytes: default_body_limit(),
            request_timeout_secs: default_request_timeout(),
            max_answer_bytes: default_answer_limit(),
            shutdown_grace_secs: default_shutdown_grace(),
            drain_idle_secs: default_drain_idle(),
            header_read_timeout_secs: default_header_read_timeout(),
            body_read_timeout_secs: default_body_read_timeout(),
            idle_timeout_secs: default_idle_timeout(),
            max_connections: default_max_connections(),
            routes,
            mcp_servers: Vec::new(),
            mcp_allowed_urls: Vec::new(),
            keys: Vec::new(),
            allow_unauthenticated: false,
            metrics_key: None,
            state: None,
            rate_limit_fail_open: default_fail_open(),
        }
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    /// The `[[mcp_server]]` names, which characters' `MCP_SERVERS` are checked against.
    pub fn mcp_server_names(&self) -> Vec<String> {
        self.mcp_servers
            .iter()
            .map(|server| server.name.clone())
            .collect()
    }

    /// The keys and the rules around them, as the access part takes them.
    pub fn access_settings(&self) -> switchboard_access::Settings {
        switchboard_access::Settings {
            keys: self.keys.clone(),
            metrics_key: self.metrics_key.clone(),
            shared: self.state.clone(),
            fail_open: self.rate_limit_fail_open,
            listen: self.listen,
            allow_unauthenticated: self.allow_unauthenticated,
            request_timeout: self.request_timeout(),
        }
    }

    /// What bounds every answer, as the pipeline takes it.
    pub fn pipeline_settings(&self) -> switchboard_pipeline::Settings {
        switchboard_pipeline::Settings {
            request_timeout: self.request_timeout(),
            max_answer_bytes: self.max_answer_bytes,
            character_max_tokens: self.character_max_tokens,
            upstream_header: self.upstream_header,
            mcp_allowed_urls: self.mcp_allowed_urls.clone(),
        }
    }

    /// How a shutdown signal is answered: the drain, then the grace period.
    pub fn drain(&self) -> Drain {
        Drain {
            grace: Duration::from_secs(self.shutdown_grace_secs),
            idle: Duration::from_secs(self.drain_idle_secs),
        }
    }

    /// The settings only a restart applies, as the running gateway holds them.
    pub fn startup(&self) -> StartupSettings {
        StartupSettings {
            listen: self.listen,
            mcp_tool_name_max_chars: self.mcp_tool_name_max_chars,
            mcp_max_sessions: self.mcp_max_sessions,
            mcp_max_sessions_per_key: self.mcp_max_sessions_per_key,
            mcp_session_idle_timeout_secs: self.mcp_session_idle_timeout_secs,
            characters: self.characters.clone(),
            shutdown_grace_secs: self.shutdown_grace_secs,
            drain_idle_secs: self.drain_idle_secs,
            header_read_timeout_secs: self.header_read_timeout_secs,
            body_read_timeout_secs: self.body_read_timeout_secs,
            idle_timeout_secs: self.idle_timeout_secs,
            max_connections: self.max_connections,
            responses: self.responses.clone(),
            state: self.state.clone(),
        }
    }

    /// Gives the settings only a restart applies their running values, and names (by their
    /// keys) those this configuration changed.
    pub fn keep_startup_settings(&mut self, running: &StartupSettings) -> Vec<String> {
        let changed = running.changed_in(&self.startup());
        // Destructured whole: a setting added to `StartupSettings` must be kept here too.
        let StartupSettings {
            listen,
            mcp_tool_name_max_chars,
            mcp_max_sessions,
            mcp_max_sessions_per_key,
            mcp_session_idle_timeout_secs,
            characters,
            shutdown_grace_secs,
            drain_idle_secs,
            header_read_timeout_secs,
            body_read_timeout_secs,
            idle_timeout_secs,
            max_connections,
            responses,
            state,
        } = running.clone();
        self.listen = listen;
        self.mcp_tool_name_max_chars = mcp_tool_name_max_chars;
        self.mcp_max_sessions = mcp_max_sessions;
        self.mcp_max_sessions_per_key = mcp_max_sessions_per_key;
        self.mcp_session_idle_timeout_secs = mcp_session_idle_timeout_secs;
        self.characters = characters;
        self.shutdown_grace_secs = shutdown_grace_secs;
        self.drain_idle_secs = drain_idle_secs;
        self.header_read_timeout_secs = header_read_timeout_secs;
        self.body_read_timeout_secs = body_read_timeout_secs;
        self.idle_timeout_secs = idle_timeout_secs;
        self.max_connections = max_connections;
        self.responses = responses;
        self.state = state;
        changed
    }

    fn check(&self) -> Result<(), ConfigProblems> {
        let mut problems = Vec::new();
        problems.extend(switchboard_upstream::check_routes(
            &self.routes,
            self.request_timeout_secs,
        ));
        if self.character_max_tokens == 0 {
            problems.push("character_max_tokens must be at least 1".to_owned());
        }
        if !(switchboard_tools::names::MIN_MAX_CHARS..=64).contains(&self.mcp_tool_name_max_chars) {
            problems.push(format!(
                "mcp_tool_name_max_chars must be between {} and 64",
                switchboard_tools::names::MIN_MAX_CHARS
            ));
        }
        if self.mcp_max_sessions == 0 {
            problems.push("mcp_max_sessions must be at least 1".to_owned());
        }
        if self.mcp_max_sessions_per_key == 0 {
            problems.push("mcp_max_sessions_per_key must be at least 1".to_owned());
        }
        if !(1..=86_400).contains(&self.mcp_session_idle_timeout_secs) {
            problems.push(
                "mcp_session_idle_timeout_secs must be more than 0 and at most 86400".to_owned(),
            );
        }
        if let Some(name) = &self.default_route
            && !self.routes.iter().any(|route| &route.name == name)
        {
            problems.push(format!("default_route: no route is named \"{name}\""));
        }
        if self.responses.store_max_entries == 0 {
            problems.push("responses.store_max_entries must be at least 1".to_owned());
        }
        problems.extend(switchboard_pipeline::tool_servers::check_servers(
            &self.mcp_servers,
        ));
        let servers = self.mcp_server_names();
        for (index, route) in self.routes.iter().enumerate() {
            for (position, name) in route.mcp_servers.iter().enumerate() {
                if !servers.contains(name) {
                    problems.push(format!(
                        "route[{index}] (\"{}\").mcp_servers[{position}]: no [[mcp_server]] is named \"{name}\"",
                        route.name
                    ));
                }
            }
        }
        for (index, pattern) in self.mcp_allowed_urls.iter().enumerate() {
            if let Err(error) = switchboard_pipeline::allowed_urls::UrlPattern::parse(pattern) {
                problems.push(format!("mcp_allowed_urls[{index}]: {error}"));
            }
        }
        problems.extend(switchboard_access::check(
            &self.keys,
            self.metrics_key.as_ref(),
            self.state.as_deref(),
        ));
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigProblems(problems))
        }
    }
}

/// A TOML or type error as one line: where it is, the line it is on (which names the key),
/// and what is wrong.
fn parse_problem(text: &str, error: &toml::de::Error) -> String {
    let Some(span) = error.span() else {
        return error.message().to_owned();
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = before[line_start..].chars().count() + 1;
    let source = text[line_start..].lines().next().unwrap_or("").trim();
    let source = match source.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &source[..cut]),
        None => source.to_owned(),
    };
    format!(
        "line {line}, column {column} (`{source}`): {}",
        error.message().trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let config = Config::from_toml(
            r#"
listen = "127.0.0.1:8080"
characters = "characters"

[[route]]
name = "qwen"
provider = "openai"
url = "http://127.0.0.1:8000/v1"
model = "Qwen/Qwen2.5-7B-Instruct"
api_key_env = "VLLM_API_KEY"
tool_calling = "native"
"#,
        )
        .unwrap();
        assert_eq!(config.routes.len(), 1);
        assert_eq!(config.routes[0].format(), Format::OpenAi);
        assert_eq!(config.max_body_bytes, 4 * 1024 * 1024);
    }

    #[test]
    fn mistakes_are_named() {
        let error = Config::from_toml(
            "[[route]]\nname = \"a\"\nprovider = \"openia\"\nurl = \"http://x\"\nmodel = \"m\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("provider: \"openia\" is not one of openai, anthropic, ollama"),
            "{error}"
        );
        let error = Config::from_toml("listen = 8080\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("line 1") && error.contains("listen"),
            "{error}"
        );
        let error = Config::from_toml("[[route]]\nname = \"a\"\nprovider = \"openai\"\nurl = \"localhost:8000\"\nmodel = \"m\"\n[[route]]\nname = \"a\"\nprovider = \"ollama\"\nurl = \"http://x\"\nmodel = \"m\"\nformat = \"nope\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("must start with http://"), "{error}");
        assert!(error.contains("already exists"), "{error}");
        assert!(error.contains("unknown parser family \"nope\""), "{error}");
    }

    #[test]
    fn every_problem_of_a_file_is_named_with_its_key_path() {
        let problems = Config::from_toml(
            r#"
character_max_tokens = 0
default_route = "nowhere"

[responses]
store_max_entries = 0

[[route]]
name = "qwen"
provider = "openai"
url = "http://127.0.0.1:8000/v1"
model = "m"

[[route]]
name = "claude"
provider = "antropic"
url = "http://127.0.0.1:8001"
model = "m"
aliases = ["claude-*", "gpt-[5"]

[[route]]
name = "local"
provider = "ollama"
url = "127.0.0.1:11434"
model = "m"
format = "nope"

[[key]]
name = "ci"
sha256 = "abcd"

[[key]]
name = "ops"
key_env = "OPS_KEY"
requests_per_minute = 0
"#,
        )
        .unwrap_err();
        let expected = [
            "route[1] (\"claude\").aliases[1]:",
            "route[1] (\"claude\").provider: \"antropic\" is not one of openai, anthropic, ollama",
            "route[2] (\"local\").url: \"127.0.0.1:11434\" must start with http:// or https://",
            "route[2] (\"local\").format: unknown parser family \"nope\"",
            "character_max_tokens must be at least 1",
            "default_route: no route is named \"nowhere\"",
            "responses.store_max_entries must be at least 1",
            "key[0] (\"ci\").sha256: expected 64 hexadecimal digits",
            "key[1] (\"ops\").requests_per_minute must be at least 1",
        ];
        assert_eq!(problems.0.len(), expected.len(), "{problems}");
        for (problem, start) in problems.0.iter().zip(expected) {
            assert!(problem.starts_with(start), "{start}\nin:\n{problems}");
        }
    }

    #[test]
    fn text_that_does_not_parse_is_one_line_naming_where() {
        let problems =
            Config::from_toml("listen = \"127.0.0.1:1\"\n[responses]\nstore_max_entrys = 3\n")
                .unwrap_err();
        assert_eq!(problems.0.len(), 1, "{problems}");
        let problem = &problems.0[0];
        assert!(
            problem.starts_with(
                "line 3, column 1 (`store_max_entrys = 3`): unknown field `store_max_entrys`"
            ),
            "{problem}"
        );
        assert!(!problem.contains('\n'), "{problem}");
    }

    #[test]
    fn settings_that_need_a_restart_keep_their_running_values() {
        let running =
            Config::from_toml("listen = \"127.0.0.1:8080\"\nmax_body_bytes = 10\n").unwrap();
        let mut new = Config::from_toml(
            "listen = \"127.0.0.1:9090\"\nmax_connections = 5\nmax_body_bytes = 20\nstate = \"redis://127.0.0.1:6379/0\"\n",
        )
        .unwrap();
        assert_eq!(
            new.keep_startup_settings(&running.startup()),
            ["listen", "max_connections", "state"]
        );
        assert_eq!(new.listen, running.listen);
        assert_eq!(new.max_connections, running.max_connections);
        assert_eq!(new.state, None);
        assert_eq!(new.max_body_bytes, 20, "limits reload");
        assert!(new.keep_startup_settings(&running.startup()).is_empty());
    }

    #[test]
    fn the_responses_store_is_configured_and_checked() {
        let config = Config::from_toml(
            "[responses]\nstore_max_entries = 5\nstore_max_bytes = 1024\nstore_ttl_secs = 60\n",
        )
        .unwrap();
        assert_eq!(config.responses.store_max_entries, 5);
        assert_eq!(config.responses.store_ttl_secs, 60);
        assert_eq!(
            Config::from_toml("").unwrap().responses.store_max_bytes,
            64 * 1024 * 1024
        );
        let error = Config::from_toml("[responses]\nstore_max_entries = 0\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("responses.store_max_entries"), "{error}");
        let error = Config::from_toml("[responses]\nstore_max_entrys = 3\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("store_max_entrys"), "{error}");
    }

    #[test]
    fn replicas_and_fallbacks_are_checked() {
        let route = |name: &str, lines: &str| {
            format!("[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nmodel = \"m\"\n{lines}\n")
        };
        let config = Config::from_toml(&format!(
            "{}{}",
            route(
                "main",
                "urls = [\"http://a:1\", \"http://b:1\"]\nbalance = \"prefix_affinity\"\nfallbacks = [\"spare\"]\nhealth_check_secs = 2.5"
            ),
            route("spare", "url = \"http://c:1\"")
        ))
        .unwrap();
        assert_eq!(
            config.routes[0].replica_urls(),
            ["http://a:1", "http://b:1"]
        );
        assert_eq!(config.routes[0].balance, Balance::PrefixAffinity);
        assert_eq!(config.routes[0].retries, 2);
        assert_eq!(config.routes[1].balance, Balance::LeastBusy);
        let minute = Duration::from_secs(60);
        assert_eq!(
            config.routes[0].first_byte_timeout(Duration::from_secs(300)),
            minute
        );
        assert_eq!(
            config.routes[0].first_byte_timeout(Duration::from_secs(10)),
            Duration::from_secs(5),
            "half a short deadline"
        );
        let error = Config::from_toml(&format!(
            "{}{}{}",
            route(
                "main",
                "url = \"http://a:1\"\nurls = [\"http://b:1\"]\nfallbacks = [\"main\", \"nope\", \"spare\", \"spare\"]\neject_after = 0"
            ),
            route("spare", "urls = [\"http://c:1\", \"c:2\", \"http://c:1\"]\neject_secs = -1"),
            route("none", "first_byte_timeout_secs = 300")
        ))
        .unwrap_err()
        .to_string();
        for expected in [
            "route[0] (\"main\"): give `url` (one replica) or `urls` (several), not both",
            "route[0] (\"main\").fallbacks[0]: a route cannot fall back to itself",
            "route[0] (\"main\").fallbacks[1]: no route is named \"nope\"",
            "route[0] (\"main\").fallbacks[3]: \"spare\" is listed twice",
            "route[0] (\"main\").eject_after must be at least 1",
            "route[1] (\"spare\").urls[1]: \"c:2\" must start with http:// or https://",
            "route[1] (\"spare\").urls[2]: \"http://c:1\" is listed twice",
            "route[1] (\"spare\").eject_secs must be more than 0 and at most 300",
            "route[2] (\"none\"): `url` or `urls` is required",
            "route[2] (\"none\").first_byte_timeout_secs must be more than 0 and less than request_timeout_secs (300)",
        ] {
            assert!(error.contains(expected), "{expected}\n in:\n{error}");
        }
    }

    #[test]
    fn environment_gives_routes() {
        let config = Config::from_environment(|name| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1".into()),
            "OLLAMA_HOST" => Some("127.0.0.1:11434".into()),
            _ => None,
        });
        let names: Vec<&str> = config
            .routes
            .iter()
            .map(|route| route.name.as_str())
            .collect();
        assert_eq!(names, ["openai", "ollama"]);
        assert_eq!(config.routes[1].replica_urls(), ["http://127.0.0.1:11434"]);
    }

    #[test]
    fn a_bad_pattern_or_default_is_named() {
        let error = Config::from_toml(&ALIASED.replace("gpt-5*", "gpt-[5"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("route[0] (\"local\").aliases[1]"), "{error}");
        let error = Config::from_toml(&format!("default_route = \"nope\"\n{ALIASED}"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("default_route: no route is named \"nope\""),
            "{error}"
        );
    }

    const ALIASED: &str = r#"
[[route]]
name = "local"
provider = "openai"
url = "http://127.0.0.1:1/v1"
model = "m"
aliases = ["claude-*", "gpt-5*"]
"#;
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
        let access =
            switchboard_access::Access::build(&config.access_settings(), &|_| None, None).unwrap();
        let shown = format!("{access:?}");
        assert!(
            shown.contains("127.0.0.1:6390") && !shown.contains("secret"),
            "{shown}"
        );
    }

    #[test]
    fn mcp_servers_are_checked_with_the_rest_of_the_file() {
        let config = Config::from_toml(
            "[[mcp_server]]\nname = \"fs\"\ncommand = [\"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/srv\"]\n\n[[mcp_server]]\nname = \"search\"\nurl = \"https://tools.internal/mcp\"\nheaders = { authorization = \"Bearer ${SEARCH_TOKEN}\" }\ntools = [\"search_*\"]\ncall_timeout_secs = 30\n",
        )
        .unwrap();
        assert_eq!(config.mcp_server_names(), ["fs", "search"]);
        let problems = Config::from_toml(
            r#"
[[mcp_server]]
name = "bad name"
command = []

[[mcp_server]]
name = "both"
command = ["x"]
url = "http://x"

[[mcp_server]]
name = "web"
url = "ftp://x"
env = { A = "b" }
call_timeout_secs = 0

[[mcp_server]]
name = "web"
command = ["y"]
headers = { a = "b" }
tools = [""]
max_result_bytes = 0
"#,
        )
        .unwrap_err()
        .to_string();
        for expected in [
            "mcp_server[0] (\"bad name\").name: use 1 to 64 letters, digits, '-' or '_'",
            "mcp_server[0] (\"bad name\").command: name a program to run",
            "mcp_server[1] (\"both\"): give `command` (a program spoken to over stdio) or `url` (Streamable HTTP), not both",
            "mcp_server[2] (\"web\").url: \"ftp://x\" must start with http:// or https://",
            "mcp_server[2] (\"web\").env: only a spawned server (`command`) takes an environment",
            "mcp_server[2] (\"web\").call_timeout_secs must be more than 0 and at most 3600",
            "mcp_server[3] (\"web\").name: an MCP server with this name already exists",
            "mcp_server[3] (\"web\").headers: only an HTTP server (`url`) takes headers",
            "mcp_server[3] (\"web\").tools: an entry is empty",
            "mcp_server[3] (\"web\").max_result_bytes must be at least 1",
        ] {
            assert!(problems.contains(expected), "{expected}\n in:\n{problems}");
        }
    }

    #[test]
    fn the_tool_loops_bounds_are_checked() {
        let config = Config::from_toml(
            "[[route]]\nname = \"a\"\nprovider = \"openai\"\nurl = \"http://x\"\nmodel = \"m\"\n\n[[mcp_server]]\nname = \"fs\"\ncommand = [\"x\"]\n",
        )
        .unwrap();
        let route = &config.routes[0];
        assert_eq!(route.max_tool_conversation_bytes, 4 * 1024 * 1024);
        assert_eq!(route.max_tool_calls_per_round, 64);
        assert_eq!(route.max_concurrent_tool_calls, 8);
        assert_eq!(config.mcp_servers[0].max_concurrent_calls, 8);
        let problems = Config::from_toml(
            "[[route]]\nname = \"a\"\nprovider = \"openai\"\nurl = \"http://x\"\nmodel = \"m\"\nmax_tool_conversation_bytes = 0\nmax_tool_calls_per_round = 0\nmax_concurrent_tool_calls = 1000\n\n[[mcp_server]]\nname = \"fs\"\ncommand = [\"x\"]\nmax_concurrent_calls = 0\n",
        )
        .unwrap_err()
        .to_string();
        for expected in [
            "route[0] (\"a\").max_tool_conversation_bytes must be at least 1",
            "route[0] (\"a\").max_tool_calls_per_round must be from 1 to 1000",
            "route[0] (\"a\").max_concurrent_tool_calls must be from 1 to 256",
            "mcp_server[0] (\"fs\").max_concurrent_calls must be from 1 to 1024",
        ] {
            assert!(problems.contains(expected), "{expected}\n in:\n{problems}");
        }
    }
}
