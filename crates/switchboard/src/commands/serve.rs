//! `switchboard serve`: the gateway. Configuration comes from `switchboard.toml` (or
//! `--config`), else from embedded defaults and the environment; flags and `SWITCHBOARD_*`
//! variables override either. SIGHUP reloads it, and the characters.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use switchboard_server::{AppState, Config, ConfigError, Snapshot, shutdown_signal};

use super::check::CharactersDir;

/// Serve the gateway: OpenAI Chat Completions, Anthropic Messages and OpenAI Responses over
/// any backend, with complete tool calling, keys and limits, and the characters (their
/// tools also over MCP at /mcp).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (default: ./switchboard.toml when it exists).
    #[arg(long, env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
}

/// Settings given as flags or `SWITCHBOARD_*` variables, which win over the file's.
#[derive(Debug, Clone, clap::Args)]
pub struct Overrides {
    /// Address to listen on.
    #[arg(long, env = "SWITCHBOARD_LISTEN", value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// The route characters talk through.
    #[arg(long, env = "SWITCHBOARD_CHARACTER_ROUTE", value_name = "ROUTE")]
    character_route: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_BODY_BYTES", value_name = "BYTES")]
    max_body_bytes: Option<usize>,
    /// Whole-request deadline, in seconds.
    #[arg(long, env = "SWITCHBOARD_REQUEST_TIMEOUT_SECS", value_name = "SECS")]
    request_timeout_secs: Option<u64>,
    /// How long in-flight requests may take to finish after Ctrl-C or SIGTERM, in seconds.
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_GRACE_SECS", value_name = "SECS")]
    shutdown_grace_secs: Option<u64>,
    /// The Redis replicas share (`state`: limits, stored responses), as
    /// redis://HOST:PORT/DB; from the environment, it can come out of a secret store
    /// rather than the file.
    #[arg(
        long,
        env = "SWITCHBOARD_STATE",
        value_name = "URL",
        hide_env_values = true
    )]
    state: Option<String>,
}

/// Where `serve` reads its configuration from, decided once at start-up.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file named, else ./switchboard.toml when it exists; the environment otherwise.
    pub file: Option<PathBuf>,
    overrides: Overrides,
    characters: Option<PathBuf>,
}

impl Source {
    pub fn new(file: Option<PathBuf>, overrides: Overrides, characters: &CharactersDir) -> Self {
        let default_file = Path::new("switchboard.toml");
        Self {
            file: file.or_else(|| default_file.exists().then(|| default_file.to_owned())),
            overrides,
            characters: characters.dir.clone(),
        }
    }

    /// Reads (again) the configuration, with the flags and variables applied.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let mut config = match &self.file {
            Some(path) => Config::from_file(path)?,
            None => Config::from_environment(environment),
        };
        let overrides = &self.overrides;
        if let Some(listen) = overrides.listen {
            config.listen = listen;
        }
        if let Some(dir) = &self.characters {
            config.characters = Some(dir.clone());
        }
        if overrides.character_route.is_some() {
            config
                .character_route
                .clone_from(&overrides.character_route);
        }
        if let Some(bytes) = overrides.max_body_bytes {
            config.max_body_bytes = bytes;
        }
        if let Some(seconds) = overrides.request_timeout_secs {
            config.request_timeout_secs = seconds;
        }
        if let Some(seconds) = overrides.shutdown_grace_secs {
            config.shutdown_grace_secs = seconds;
        }
        if overrides.state.is_some() {
            config.state.clone_from(&overrides.state);
        }
        Ok(config)
    }

    /// The file's name for messages.
    pub fn name(&self) -> String {
        self.file.as_ref().map_or_else(
            || "the configuration from the environment".to_owned(),
            |file| file.display().to_string(),
        )
    }
}

/// An environment variable, unset when empty: API keys and `key_env` secrets.
pub fn environment(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    // Dropped last, once the runtime has stopped: the spans still waiting are sent then.
    let _traces = super::telemetry::init_serve()?;
    let source = Source::new(args.config, args.overrides, characters);
    let config = source.load()?;
    // Threads for every core: a large tool list compiles on one while the rest serve.
    // A worker going idle gives back what it freed (after a burst, all of it).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(crate::memory::collect_when_idle)
        .build()?;
    runtime.block_on(async move {
        tokio::spawn(crate::memory::sweep());
        let state = AppState::build(&config, &environment)?;
        report_startup(&config, &state).await;
        state.watch_health(Duration::from_secs(30));
        reload_on_hangup(state.clone(), source);
        // Kept for as long as the server runs: dropping it stops the watch. A default
        // folder that does not exist has nothing to watch (SIGHUP loads it once made).
        let unconfigured_and_absent =
            config.characters.is_none() && !config.characters_dir().exists();
        let _watching = match state.characters.watch() {
            Ok(watcher) => Some(watcher),
            Err(_) if unconfigured_and_absent => None,
            Err(error) => {
                tracing::warn!("{error}; saved characters reload only on SIGHUP");
                None
            }
        };
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        tracing::info!("listening on http://{}", listener.local_addr()?);
        switchboard_server::run(listener, state, shutdown_signal(), config.drain()).await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

/// `kill -HUP` reads the configuration again and swaps in its routes, keys and limits
/// whole, or keeps the running configuration when anything in it is wrong; and re-reads
/// every file of the characters directory (the registry logs what changed), whatever the
/// configuration's fate, as saving a character does. Requests and conversations already
/// running keep what they started with.
fn reload_on_hangup(state: AppState, source: Source) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            tracing::warn!(
                "cannot listen for SIGHUP; the configuration and characters will not reload"
            );
            return;
        };
        while hangups.recv().await.is_some() {
            reload_config(&state, &source).await;
            let registry = Arc::clone(&state.characters);
            if let Err(error) = tokio::task::spawn_blocking(move || registry.reload()).await {
                tracing::error!("reloading characters failed: {error}");
            }
        }
    });
    #[cfg(not(unix))]
    let _ = (state, source);
}

/// One reload of the configuration, logged: what changed, or every problem on a line of
/// its own and a summary.
async fn reload_config(state: &AppState, source: &Source) {
    let name = source.name();
    let outcome = source
        .load()
        .map_err(|error| match error {
            ConfigError::Invalid { problems, .. } => problems.0,
            read => vec![read.to_string()],
        })
        .and_then(|config| {
            state
                .reload(config, &environment)
                .map_err(|problems| problems.0)
        });
    state.reloaded_with(
        outcome
            .as_ref()
            .map_or_else(|problems| problems.len().max(1), |_| 0),
    );
    match outcome {
        Ok(reloaded) => {
            for key in &reloaded.needs_restart {
                tracing::warn!(
                    "{name}: {key} changed, which takes a restart; the running value stays"
                );
            }
            tracing::info!("configuration reloaded from {name}: {reloaded}");
            report_backends(&state.snapshot()).await;
        }
        Err(problems) => {
            for problem in &problems {
                tracing::error!("{name}: {problem}");
            }
            tracing::error!(
                "configuration not reloaded: {} problem(s) in {name}; the running configuration stays",
                problems.len()
            );
        }
    }
}

/// Says plainly what is served and what is not reachable, so a missing backend is noticed
/// at start rather than at the first request.
async fn report_startup(config: &Config, state: &AppState) {
    let live = state.snapshot();
    if live.pipeline.routes.all().is_empty() {
        tracing::warn!(
            "no routes: give a switchboard.toml, or set OPENAI_BASE_URL, ANTHROPIC_API_KEY or OLLAMA_HOST; requests will get 404 until then"
        );
    }
    report_backends(&live).await;
    live.access.report().await;
    let loaded = state.characters.current();
    let dir = config.characters_dir();
    if config.characters.is_none() && !dir.exists() {
        tracing::info!(
            "no characters loaded: there is no {} folder (set `characters` or --characters to serve some)",
            dir.display()
        );
        return;
    }
    tracing::info!(
        "characters from {}: {} loaded, {} rejected (switchboard check {} tells why)",
        dir.display(),
        loaded.characters.len(),
        loaded.rejections.len(),
        dir.display()
    );
}

/// Checks every route's backend once and says which answer.
async fn report_backends(live: &Snapshot) {
    live.health.check().await;
    for backend in live.health.snapshot() {
        match backend.reachable {
            Some(true) => tracing::info!(
                "route {}: backend {} is reachable",
                backend.route,
                backend.url
            ),
            _ => tracing::warn!(
                "route {}: backend {} is NOT reachable ({}); requests to it get 502 until it is",
                backend.route,
                backend.url,
                backend.detail.unwrap_or_default()
            ),
        }
    }
}
