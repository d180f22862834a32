//! The operational endpoints: `/v1/models`, `/healthz`, `/readyz` and `/metrics`.

use axum::extract::{Extension, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::api::caller::Caller;
use crate::drain::Phase;
use crate::state::AppState;
use switchboard_upstream::Health;

/// What operators and clients ask of the gateway itself: the model list, health, metrics.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        Router::new()
            .route("/v1/models", get(models))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics))
    },
    owns: |path| matches!(path, "/v1/models" | "/healthz" | "/readyz" | "/metrics"),
    error: IntoResponse::into_response,
};

/// `GET /v1/models`: the routes, then the listed characters, that the caller may use; in
/// Anthropic's list shape when the request carries `anthropic-version` (Anthropic's clients
/// always send it), Google's when it carries a Google key (see [`super::gemini::asks_as_google`]),
/// OpenAI's otherwise.
pub async fn models(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if super::gemini::asks_as_google(&headers, query.as_deref()) {
        return super::gemini::list_models(State(state), Extension(caller), RawQuery(query)).await;
    }
    openai_or_anthropic_models(&state, &caller, &headers).into_response()
}

fn openai_or_anthropic_models(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
) -> Json<Value> {
    let ids: Vec<String> = state
        .model_ids(caller.snapshot())
        .into_iter()
        .filter(|id| caller.may_use(id))
        .collect();
    if headers.contains_key("anthropic-version") {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": "1970-01-01T00:00:00Z"}))
            .collect();
        return Json(json!({
            "data": data,
            "has_more": false,
            "first_id": ids.first(),
            "last_id": ids.last(),
        }));
    }
    let data: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "switchboard"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// `GET /healthz`: alive, and `degraded` while some route has no replica taking requests,
/// some MCP server is down, or the last reload failed (then `reload` says so). Which routes, replicas and MCP servers there are, and how
/// each fares, only to those who may read `/metrics`: the open endpoint must not map the
/// network behind the gateway.
pub async fn healthz(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let snapshot = state.snapshot();
    let backends = snapshot.health.snapshot();
    let tool_servers = snapshot.pipeline.tool_servers.health();
    // A tool server that is down (restarting after a failure) fails its calls meanwhile.
    let servers_up = tool_servers
        .iter()
        .all(|server| matches!(server["state"].as_str(), Some("ready" | "starting")));
    let failed_reload = state.failed_reload();
    let status = if Health::every_route_serves(&backends) && servers_up && failed_reload.is_none() {
        "ok"
    } else {
        "degraded"
    };
    let mut body = json!({"status": status});
    // Which configuration runs is no secret; the problems themselves are in the log.
    if let Some(problems) = failed_reload {
        body["reload"] = json!(format!(
            "failed with {problems} problem(s): the previous configuration runs"
        ));
    }
    if !snapshot.access.metrics_allowed(&headers) {
        return Json(body);
    }
    body["backends"] = json!(backends);
    if !tool_servers.is_empty() {
        body["mcp_servers"] = json!(tool_servers);
    }
    Json(body)
}

/// `GET /readyz`, open like `/healthz`: 200 while the gateway takes new work; 503 while it
/// starts (until the shared state answers) and from the moment a shutdown signal arrives,
/// while it drains (it still serves what reaches it meanwhile). `/healthz` is liveness: it
/// stays 200 until the process exits.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let phase = state.readiness.phase();
    let status = if phase == Phase::Ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({"status": phase.label()}))).into_response()
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        state.metrics.render(),
    )
        .into_response()
}
