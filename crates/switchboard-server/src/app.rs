//! The router, the request-id middleware, and serving with a graceful shutdown.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode, Version};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;

use crate::api::error::ApiError;
use crate::api::{self, RequestId};
use crate::connections::Server;
use crate::state::AppState;
use switchboard_pipeline::ids::request_id;

pub fn router(state: AppState) -> Router {
    let access = middleware::from_fn_with_state(state.clone(), crate::api::gate::gate);
    api::FRONT_ENDS
        .iter()
        .fold(Router::new(), |router, front_end| {
            router.merge((front_end.routes)(&state))
        })
        .fallback(|| async {
            let error = ApiError::invalid_request("unknown endpoint; this gateway serves /v1/chat/completions, /v1/messages, /v1/messages/count_tokens, /v1/responses, /v1/models, /mcp, /healthz and /metrics", None).with_code("not_found");
            ApiError { status: axum::http::StatusCode::NOT_FOUND, ..error }.into_response()
        })
        .method_not_allowed_fallback(|| async {
            let error = ApiError::invalid_request("this endpoint does not take that method (chat completions, messages and responses are POST, stored responses GET or DELETE, the rest GET)", None)
                .with_code("method_not_allowed");
            ApiError { status: axum::http::StatusCode::METHOD_NOT_ALLOWED, ..error }.into_response()
        })
        // The chat handler reads its body under the configured limit itself, to answer 413 in OpenAI's shape.
        .layer(DefaultBodyLimit::disable())
        // Keys and limits are checked before routing, for every path.
        .layer(access)
        .layer(middleware::from_fn(with_request_id))
        .layer(middleware::from_fn(close_after_refused_body))
        .with_state(state)
}

/// An HTTP/1 connection whose request body was refused unread (413 past the size limit,
/// 408 when it did not arrive in time) cannot carry another request: hyper closes it once
/// the answer is out. Saying so in the answer (`Connection: close`) keeps the client from
/// sending its next request down a connection that is about to close. HTTP/2 ends only
/// the stream, and takes no such header.
async fn close_after_refused_body(request: Request, next: Next) -> Response {
    let http1 = request.version() < Version::HTTP_2;
    let mut response = next.run(request).await;
    if http1
        && matches!(
            response.status(),
            StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT
        )
    {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
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
/// Answers still running after it end with `server_shutting_down` (an SSE error event in
/// a stream), which they get a moment to send before their connections close.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    let hard_stop = state.hard_stop.clone();
    state.snapshot().health.check_routes();
    let mut server = Server::new(router(state.clone()), state.connections);
    server.accept(listener, shutdown).await;
    tracing::info!("shutting down: finishing in-flight requests");
    if server.close(grace).await {
        return Ok(());
    }
    tracing::warn!(
        grace_secs = grace.as_secs(),
        "in-flight requests did not finish in time; ending them with server_shutting_down"
    );
    hard_stop.cancel();
    if !server.close(FINAL_WRITE).await {
        server.abort().await;
    }
    Ok(())
}

/// Time answers cut at shutdown get to write their last event.
const FINAL_WRITE: Duration = Duration::from_secs(2);

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
        config: &crate::config::Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let state = AppState::build(config, env).map_err(|problems| problems.to_string())?;
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
