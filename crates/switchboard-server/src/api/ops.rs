//! The operational endpoints: `/v1/models`, `/healthz` and `/metrics`.

use axum::Json;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::access::Caller;
use crate::pipeline::character_id;
use crate::state::AppState;

/// `GET /v1/models`: the routes, then the listed characters, that the caller may use.
pub async fn models(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let data: Vec<Value> = model_ids(&state)
        .into_iter()
        .filter(|id| caller.may_use(id))
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "switchboard"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// Every model name a client can send: route names, then the listed characters' ids.
pub fn model_ids(state: &AppState) -> Vec<String> {
    let routes = state.routes.all().iter().map(|route| route.name.clone());
    let characters = state
        .characters
        .current()
        .listed()
        .filter_map(|character| character_id(character))
        .collect::<Vec<_>>();
    routes.chain(characters).collect()
}

/// `GET /healthz`: alive, and which backends answered at the last check.
pub async fn healthz(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"status": "ok", "backends": state.health.snapshot()}))
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
