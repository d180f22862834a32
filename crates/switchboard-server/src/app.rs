//! The router, the request-id middleware, and serving with a graceful shutdown.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::api::{self, RequestId};
use crate::error::ApiError;
use crate::ids::request_id;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(api::chat::handle))
        .route("/v1/models", get(api::ops::models))
        .route("/healthz", get(api::ops::healthz))
        .route("/metrics", get(api::ops::metrics))
        .route("/v1/characters", get(api::characters::list))
        .route("/v1/characters/{name}", get(api::characters::show))
        .route("/v1/characters/{name}/tools/{tool}", post(api::characters::call_tool))
        .route("/", get(api::playground::index))
        .route("/playground/{name}", get(api::playground::file))
        .fallback(|| async {
            let error = ApiError::invalid_request("unknown endpoint; this gateway serves /v1/chat/completions, /v1/models, /healthz and /metrics", None).with_code("not_found");
            ApiError { status: axum::http::StatusCode::NOT_FOUND, ..error }.into_response()
        })
        .method_not_allowed_fallback(|| async {
            let error = ApiError::invalid_request("this endpoint does not take that method (chat completions are POST, the rest GET)", None)
                .with_code("method_not_allowed");
            ApiError { status: axum::http::StatusCode::METHOD_NOT_ALLOWED, ..error }.into_response()
        })
        // The chat handler reads its body under the configured limit itself, to answer 413 in OpenAI's shape.
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn(with_request_id))
        .with_state(state)
}

/// Gives every request an id (the client's `x-request-id` when it sent one) and echoes it.
async fn with_request_id(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .filter(|value| !value.is_empty() && value.len() <= 200)
        .map_or_else(request_id, str::to_owned);
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Serves until `shutdown` resolves; in-flight requests then have `grace` to finish.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    // Without TCP_NODELAY a streamed answer's small SSE writes can wait on the client's
    // delayed ACK (Nagle's algorithm).
    let listener = listener.tap_io(|connection| {
        let _ = connection.set_nodelay(true);
    });
    let server = axum::serve(listener, router(state)).with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stopping.send(());
    });
    tokio::select! {
        served = server => served,
        () = async {
            if stopped.await.is_ok() {
                tokio::time::sleep(grace).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => {
            tracing::warn!(grace_secs = grace.as_secs(), "in-flight requests did not finish in time; stopping anyway");
            Ok(())
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// A gateway running in this process, for embedding it (and for tests and benchmarks).
#[derive(Debug)]
pub struct RunningGateway {
    pub address: std::net::SocketAddr,
    pub state: AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningGateway {
    /// Builds the state from `config` (API keys read through `env`), binds `config.listen`
    /// (port 0 picks a free one) and serves in the background.
    pub async fn start(
        config: &crate::Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let state = AppState::build(config, env)?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|error| format!("cannot listen on {}: {error}", config.listen))?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let served = tokio::spawn(run(
            listener,
            state.clone(),
            shutdown,
            config.shutdown_grace(),
        ));
        Ok(Self {
            address,
            state,
            stop: Some(stop),
            served,
        })
    }

    /// `http://ADDRESS`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops accepting, lets in-flight requests finish within the grace period, and waits.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served)
            .await
            .unwrap_or_else(|error| Err(std::io::Error::other(error)))
    }
}
