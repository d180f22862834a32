//! The operational endpoints: `/v1/models`, `/healthz` and `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::pipeline::CHARACTER_PREFIX;
use crate::state::AppState;

/// `GET /v1/models`: the routes, then the listed characters; in Anthropic's list shape
/// when the request carries `anthropic-version` (Anthropic's clients always send it),
/// OpenAI's otherwise.
pub async fn models(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let ids = model_ids(&state);
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
