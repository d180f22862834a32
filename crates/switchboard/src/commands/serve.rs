//! `switchboard serve`: the gateway. Configuration comes from `switchboard.toml` (or
//! `--config`), else from embedded defaults and the environment; flags and `SWITCHBOARD_*`
//! variables override either.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use switchboard_server::{AppState, Config, shutdown_signal};

use super::check::CharactersDir;

/// Serve OpenAI-compatible chat completions with tool calling, and the characters.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (default: ./switchboard.toml when it exists).
    #[arg(long, env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
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
}

pub fn run(args: Args, characters: &CharactersDir) -> anyhow::Result<ExitCode> {
    // Dropped last, once the runtime has stopped: the spans still waiting are sent then.
    let _traces = super::telemetry::init_serve()?;
    let config = load_config(&args, characters)?;
    // Threads for every core: a large tool list compiles on one while the rest serve.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        let state = AppState::build(&config, &env).map_err(anyhow::Error::msg)?;
        report_startup(&config, &state).await;
        Arc::clone(&state.health).watch(Duration::from_secs(30));
        reload_on_hangup(Arc::clone(&state.characters));
        // Kept for as long as the server runs: dropping it stops the watch.
        let _watching = match state.characters.watch() {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                tracing::warn!("{error}; saved characters reload only on SIGHUP");
                None
            }
        };
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        tracing::info!("listening on http://{}", listener.local_addr()?);
        switchboard_server::run(listener, state, shutdown_signal(), config.shutdown_grace())
            .await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

fn load_config(args: &Args, characters: &CharactersDir) -> anyhow::Result<Config> {
    let default_file = Path::new("switchboard.toml");
    let mut config = match &args.config {
        Some(path) => Config::from_file(path)?,
        None if default_file.exists() => Config::from_file(default_file)?,
        None => Config::from_environment(|name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        }),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(dir) = &characters.dir {
        config.characters.clone_from(dir);
    }
    if args.character_route.is_some() {
        config.character_route.clone_from(&args.character_route);
    }
    if let Some(bytes) = args.max_body_bytes {
        config.max_body_bytes = bytes;
    }
    if let Some(seconds) = args.request_timeout_secs {
        config.request_timeout_secs = seconds;
    }
    if let Some(seconds) = args.shutdown_grace_secs {
        config.shutdown_grace_secs = seconds;
    }
    Ok(config)
}

/// `kill -HUP` re-reads every file of the characters directory (the registry logs what
/// changed); conversations already running keep the character they started with.
fn reload_on_hangup(characters: Arc<switchboard_characters::CharacterRegistry>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            tracing::warn!("cannot listen for SIGHUP; characters will not reload");
            return;
        };
        while hangups.recv().await.is_some() {
            let registry = Arc::clone(&characters);
            if let Err(error) = tokio::task::spawn_blocking(move || registry.reload()).await {
                tracing::error!("reloading characters failed: {error}");
            }
        }
    });
    #[cfg(not(unix))]
    let _ = characters;
}

/// Says plainly what is served and what is not reachable, so a missing backend is noticed
/// at start rather than at the first request.
async fn report_startup(config: &Config, state: &AppState) {
    if state.routes.all().is_empty() {
        tracing::warn!(
            "no routes: give a switchboard.toml, or set OPENAI_BASE_URL, ANTHROPIC_API_KEY or OLLAMA_HOST; requests will get 404 until then"
        );
    }
    state.health.check().await;
    for backend in state.health.snapshot() {
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
    state.access.report().await;
    let loaded = state.characters.current();
    tracing::info!(
        "characters from {}: {} loaded, {} rejected (switchboard check {} tells why)",
        config.characters.display(),
        loaded.characters.len(),
        loaded.rejections.len(),
        config.characters.display()
    );
}
