//! The layer in front of every endpoint: who is calling (401 without a known key), the
//! key's rate limits on every request that does work (429; see [`counted`]), and the
//! `/metrics` rule. It runs before routing, so an endpoint never sees an unauthenticated
//! request, and its errors take the shape of the API the path belongs to.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};

use super::caller::{Caller, Share, too_many};
use super::error_response;
use super::front_end::RequestId;
use crate::api::error::ApiError;
use crate::state::AppState;
use switchboard_access::{Admission, Exceeded, Presented, StoreError, Verdict};

/// The access layer (`axum::middleware::from_fn_with_state`).
pub async fn gate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    // The one snapshot of the configuration this request sees, here and in its endpoint.
    let live = state.snapshot();
    let access = &live.access;
    super::gemini::key_from_query(&mut request);
    let path = request.uri().path();
    // The playground's page and its static files hold nothing secret; what it asks of the
    // API goes through here with the key the user gives it.
    if matches!(path, "/healthz" | "/readyz" | "/") || path.starts_with("/playground/") {
        return next.run(request).await;
    }
    if path == "/metrics" {
        return if access.metrics_allowed(request.headers()) {
            next.run(request).await
        } else {
            let path = path.to_owned();
            denied(&request, &path, "metrics_key_needed")
        };
    }
    let key = if !access.has_keys() {
        None
    } else {
        match access.identify(request.headers()) {
            Presented::Key(key) => Some(Arc::clone(key)),
            Presented::Nothing => {
                let path = path.to_owned();
                return denied(&request, &path, "missing_api_key");
            }
            Presented::Unknown => {
                let path = path.to_owned();
                return denied(&request, &path, "invalid_api_key");
            }
        }
    };
    let mut limited = key
        .as_ref()
        .filter(|key| key.limits.any() && counted(&request))
        .cloned();
    if limited.is_some() && is_mcp(request.uri().path()) && request.method() == Method::POST {
        let limit = live.config.max_body_bytes;
        let path = path.to_owned();
        let Some((read, call)) = mcp_tool_call(request, limit).await else {
            return error_response(&path, ApiError::payload_too_large(limit));
        };
        request = read;
        limited = limited.filter(|_| call);
    }
    let share = limited
        .as_ref()
        .filter(|key| key.limits.tokens_per_minute.is_some())
        .map(|_| Arc::new(Share::default()));
    request.extensions_mut().insert(Caller {
        key,
        live: Arc::clone(&live),
        share: share.clone(),
    });
    let Some(key) = limited else {
        return next.run(request).await;
    };
    match access.admit(&key).await {
        Admission::Admitted(verdict, lease) => {
            let mut response = next.run(request).await;
            // The endpoint's refusal of the request's reservation, with the budget it saw.
            let refused = share.as_ref().and_then(|share| share.lock().refused);
            let verdict = match (refused, verdict) {
                (Some(refused), verdict) => Some(Verdict {
                    requests: verdict.and_then(|verdict| verdict.requests),
                    ..refused
                }),
                (None, verdict) => verdict,
            };
            if let Some(verdict) = verdict {
                verdict.headers(response.headers_mut());
            }
            key.count_request();
            match lease {
                Some(lease) => response.map(|body| Body::new(Held::new(body, lease))),
                None => response,
            }
        }
        Admission::Refused(verdict) => {
            let (exceeded, _) = verdict
                .refused
                .unwrap_or((Exceeded::Requests, Default::default()));
            metrics::counter!("gateway_rate_limited_total", "key" => key.name.clone(), "limit" => exceeded.label())
                .increment(1);
            let path = request.uri().path().to_owned();
            log(&request, 429, exceeded.label(), Some(&key.name));
            let mut response = error_response(&path, too_many(&key.name, &verdict, exceeded));
            verdict.headers(response.headers_mut());
            response
        }
        Admission::Unavailable(error) => {
            let path = request.uri().path().to_owned();
            log(
                &request,
                503,
                "rate_limit_state_unavailable",
                Some(&key.name),
            );
            error_response(&path, unavailable(&error))
        }
    }
}

/// Whether a request counts against its key's limits: every POST (the requests that ask for
/// an answer or run a tool; of MCP's, only `tools/call` and `initialize`: see
/// [`mcp_tool_call`]), an MCP session's GET stream (which holds one of the key's
/// `max_concurrent` slots while open), and `GET /v1/characters/{name}` (and its `HEAD`,
/// which runs the same handler), which runs the character's code to make its system prompt.
/// Other reads (`/v1/models`, `/v1/characters`, stored responses) are not counted.
fn counted(request: &Request) -> bool {
    let (method, path) = (request.method(), request.uri().path());
    *method == Method::POST
        || (*method == Method::GET
            && is_mcp(path)
            && request.headers().contains_key("mcp-session-id"))
        || (matches!(*method, Method::GET | Method::HEAD)
            && path
                .strip_prefix("/v1/characters/")
                .is_some_and(|name| !name.is_empty() && !name.contains('/')))
}

fn is_mcp(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}

/// Whether an MCP request counts against a key's limits: a `tools/call` (as a model request
/// does), and an `initialize`, which opens a session (memory held for its idle timeout);
/// lists and notifications do no work worth limiting. The body is read to tell, and handed
/// on; `None` when it is larger than `limit` (or breaks off), which the endpoint would
/// refuse anyway.
async fn mcp_tool_call(request: Request, limit: usize) -> Option<(Request, bool)> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, limit).await.ok()?;
    let call = serde_json::from_slice::<Message>(&bytes).map_or(true, |message| {
        matches!(message.method.as_deref(), Some("tools/call" | "initialize"))
    });
    Some((Request::from_parts(parts, Body::from(bytes)), call))
}

/// A 401 in the path's API shape.
fn denied(request: &Request, path: &str, code: &'static str) -> Response {
    metrics::counter!("gateway_access_denied_total", "reason" => code, "key" => "-").increment(1);
    log(request, 401, code, None);
    let message = match code {
        "missing_api_key" => {
            "no API key: send it as `Authorization: Bearer KEY` or `x-api-key: KEY`"
        }
        "metrics_key_needed" => {
            "/metrics needs an API key or the metrics key when the gateway listens beyond loopback"
        }
        _ => "the API key is not valid for this gateway",
    };
    let mut response = error_response(
        path,
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            kind: "authentication_error",
            param: None,
            code: Some(code.into()),
        },
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// The log line of a request refused here (endpoints write their own for the rest).
fn log(request: &Request, status: u16, reason: &str, key: Option<&str>) {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map_or("-", |RequestId(id)| id.as_str());
    tracing::info!(
        target: "switchboard::request",
        request_id,
        path = request.uri().path(),
        key = key.unwrap_or("-"),
        outcome = status,
        reason,
        "refused"
    );
}

/// A response body that holds something until the body is finished or dropped (a stream
/// ends, or its client leaves): the request's lease on an open-request slot, or its place
/// among the requests in flight.
pub struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G> Held<G> {
    pub fn new(body: Body, guard: G) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl<G: Send + Unpin + 'static> HttpBody for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The 503 of a request whose limits cannot be checked (`rate_limit_fail_open = false`).
fn unavailable(error: &StoreError) -> ApiError {
    ApiError::upstream(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("rate limits cannot be checked, so the request was not served: {error}"),
        "rate_limit_state_unavailable",
    )
}
