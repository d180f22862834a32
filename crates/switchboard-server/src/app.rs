//! The router, the request-id middleware, and serving with a graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode, Version};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;

use crate::api::error::ApiError;
use crate::api::gate::Held;
use crate::api::{self, RequestId};
use crate::connections::Server;
use crate::drain::{Drain, Readiness};
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
            let error = ApiError::invalid_request("unknown endpoint; this gateway serves /v1/chat/completions, /v1/messages, /v1/messages/count_tokens, /v1/responses, /v1/models, /mcp, /healthz, /readyz and /metrics", None).with_code("not_found");
            ApiError { status: axum::http::StatusCode::NOT_FOUND, ..error }.into_response()
        })
        .method_not_allowed_fallback(|| async {
            let error = ApiError::invalid_request("this endpoint does not take that method (chat completions, messages and responses are POST, stored responses GET or DELETE, the rest GET)", None)
                .with_code("method_not_allowed");
            ApiError { status: axum::http::StatusCode::METHOD_NOT_ALLOWED, ..error }.into_response()
        })
        // The front-end path reads each body under the configured limit itself, to answer 413 in its API's shape.
        .layer(DefaultBodyLimit::disable())
        // Keys and limits are checked before routing, for every path.
        .layer(access)
        .layer(middleware::from_fn(with_request_id))
        .layer(middleware::from_fn(close_after_refused_body))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state.readiness),
            count_in_flight,
        ))
        .with_state(state)
}

/// Counts every request but the probes as in flight until its answer's body is finished
/// or abandoned, for the drain ([`Readiness::quiet`]).
async fn count_in_flight(
    State(readiness): State<Arc<Readiness>>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(request.uri().path(), "/readyz" | "/healthz" | "/metrics") {
        return next.run(request).await;
    }
    let in_flight = readiness.begin();
    next.run(request)
        .await
        .map(|body| Body::new(Held::new(body, in_flight)))
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

/// Serves until `shutdown` resolves, then drains: `/readyz` answers 503 while the gateway
/// goes on serving what reaches it, until no request has been in flight for `drain.idle`
/// (a zero idle time skips this); then it stops listening, and the requests still running finish within what is left of
/// `drain.grace`. Answers still running after it end with `server_shutting_down` (an SSE
/// error event in a stream), which they get a moment to send before their connections
/// close.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Drain,
) -> std::io::Result<()> {
    let hard_stop = state.hard_stop.clone();
    state.snapshot().health.check_routes();
    tokio::spawn(become_ready(state.clone()));
    let readiness = Arc::clone(&state.readiness);
    let mut server = Server::new(router(state.clone()), state.connections);
    let (signalled, signal_time) = tokio::sync::oneshot::channel();
    let drained = async move {
        shutdown.await;
        let _ = signalled.send(Instant::now());
        readiness.drain();
        // No idle time asked for: the listener closes at once.
        if drain.idle.is_zero() {
            return;
        }
        tracing::info!(
            in_flight = readiness.in_flight(),
            "shutting down: /readyz answers 503; serving until no request has been in flight for {} s",
            drain.idle.as_secs_f32()
        );
        tokio::select! {
            () = readiness.quiet(drain.idle) => {}
            () = tokio::time::sleep(drain.grace) => {}
        }
    };
    server.accept(listener, drained).await;
    let grace = signal_time.await.map_or(drain.grace, |signalled| {
        drain.grace.saturating_sub(signalled.elapsed())
    });
    tracing::info!("stopped listening: finishing in-flight requests");
    if server.close(grace).await {
        return Ok(());
    }
    tracing::warn!(
        grace_secs = drain.grace.as_secs(),
        "in-flight requests did not finish in time; ending them with server_shutting_down"
    );
    hard_stop.cancel();
    if !server.close(FINAL_WRITE).await {
        server.abort().await;
    }
    Ok(())
}

/// Ready once the response store answers (Redis, when configured: asked again every
/// second until it does); at once otherwise.
async fn become_ready(state: AppState) {
    let mut said = false;
    while let Err(error) = state.responses.ready().await {
        if !said {
            tracing::warn!("not ready until the shared state answers: {error}");
            said = true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    state.readiness.ready();
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
        // Stopped by its owner, not by a load balancer's signal: no drain to wait out.
        let drain = Drain {
            idle: Duration::ZERO,
            ..config.drain()
        };
        let served = tokio::spawn(run(listener, state.clone(), shutdown, drain));
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

    /// Stops accepting at once (no drain: nothing balances load onto this gateway), lets
    /// in-flight requests finish within the grace period, and waits.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served)
            .await
            .unwrap_or_else(|error| Err(std::io::Error::other(error)))
    }
}
