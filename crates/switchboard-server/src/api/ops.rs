//! The operational endpoints: `/v1/models`, `/healthz` and `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::pipeline::CHARACTER_PREFIX;
use crate::state::AppState;

/// `GET /v1/models`: the routes, then the listed characters.
pub async fn models(State(state): State<AppState>) -> Json<Value> {
    let data: Vec<Value> = model_ids(&state)
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "switchboard"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// Every model name a client can send: route names, then `character/<file stem>` (file
/// stems make ids without spaces; `character/<CHARACTER_NAME>` is accepted too).
pub fn model_ids(state: &AppState) -> Vec<String> {
    let routes = state.routes.all().iter().map(|route| route.name.clone());
    let characters = state
        .characters
        .current()
        .listed()
        .filter_map(|character| {
            character
                .file()
                .file_stem()
                .map(|stem| format!("{CHARACTER_PREFIX}{}", stem.to_string_lossy()))
        })
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
