//! The HTTP endpoints. Each handler is small: parse, validate, hand the work to the
//! pipeline or a character, present the answer.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_wire::ChatRequest;
use switchboard_wire::openai::{ChatCompletionRequest, parse_request};

use crate::character::{self, PREFIX};
use crate::error::ApiError;
use crate::ids::completion_id;
use crate::pipeline::{self, Completion, Outputs};
use crate::respond::{Presentation, Tally, streamed, whole};
use crate::state::AppState;
use crate::validate::check_request;

/// The id the request-id middleware gave this request.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// `POST /v1/chat/completions`
pub async fn chat_completions(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    body: Body,
) -> Response {
    let started = Instant::now();
    let (route, stream, response) = match prepare(&state, body).await {
        Ok(prepared) => {
            let route = prepared.route_name.clone();
            let stream = prepared.presentation_stream;
            (
                route,
                stream,
                answer(prepared, request_id.clone(), started).await,
            )
        }
        Err(error) => {
            let response = error.clone().into_response();
            log_request(
                &request_id,
                "-",
                response.status(),
                started,
                Tally::default(),
                false,
            );
            return response;
        }
    };
    if !stream {
        log_request(
            &request_id,
            &route,
            response.status(),
            started,
            tally_of(&response),
            false,
        );
    }
    response
}

struct Prepared {
    route_name: String,
    outputs: Outputs,
    presentation: Presentation,
    presentation_stream: bool,
}

async fn prepare(state: &AppState, body: Body) -> Result<Prepared, ApiError> {
    let bytes = axum::body::to_bytes(body, state.max_body_bytes)
        .await
        .map_err(|error| {
            if is_length_limit(&error) {
                ApiError::payload_too_large(state.max_body_bytes)
            } else {
                ApiError::invalid_request(format!("could not read the request body: {error}"), None)
            }
        })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|error| {
        ApiError::invalid_request(format!("the request body is not valid JSON: {error}"), None)
    })?;
    let checked = check_request(&value)?;
    let wire: ChatCompletionRequest = serde_json::from_value(value).map_err(|error| {
        ApiError::invalid_request(
            format!("the request does not match the chat completions format: {error}"),
            None,
        )
    })?;
    let request: ChatRequest =
        parse_request(wire).map_err(|error| ApiError::invalid_request(error.to_string(), None))?;
    let presentation = Presentation {
        id: completion_id(),
        model: checked.model.clone(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs()),
        include_usage: checked.include_usage,
    };
    let outputs = if let Some(name) = checked.model.strip_prefix(PREFIX) {
        let character = state.characters.get(name).ok_or_else(|| {
            ApiError::not_found(format!(
                "no character named \"{name}\" is loaded; GET /v1/models lists them"
            ))
        })?;
        let route = state.character_route.clone().ok_or_else(|| {
            ApiError::upstream(
                StatusCode::SERVICE_UNAVAILABLE,
                "no route is configured for characters to talk through",
                "no_character_route",
            )
        })?;
        let (text, history) = character::split_request(&request)?;
        character::start(character, route, text, history, state.request_timeout)
    } else {
        let route = state.route(&checked.model).ok_or_else(|| {
            let known: Vec<&str> = state
                .routes
                .iter()
                .map(|route| route.name.as_str())
                .collect();
            ApiError::not_found(format!(
                "no route is named \"{}\"; configured routes: {}",
                checked.model,
                known.join(", ")
            ))
        })?;
        pipeline::start(Completion {
            route,
            request,
            tools: checked.tools,
            timeout: state.request_timeout,
        })
    };
    Ok(Prepared {
        route_name: checked.model,
        outputs,
        presentation,
        presentation_stream: checked.stream,
    })
}

async fn answer(prepared: Prepared, request_id: String, started: Instant) -> Response {
    let Prepared {
        route_name,
        outputs,
        presentation,
        presentation_stream,
    } = prepared;
    if presentation_stream {
        return streamed(outputs, presentation, move |tally| {
            log_request(
                &request_id,
                &route_name,
                StatusCode::OK,
                started,
                tally,
                true,
            );
        })
        .await;
    }
    match whole(outputs, &presentation).await {
        Ok((body, tally)) => {
            let mut response = Json(body).into_response();
            response.extensions_mut().insert(tally);
            response
        }
        Err(error) => error.into_response(),
    }
}

fn tally_of(response: &Response) -> Tally {
    response
        .extensions()
        .get::<Tally>()
        .copied()
        .unwrap_or_default()
}

fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = current.source();
    }
    false
}

/// One structured line per request, and the request metrics.
fn log_request(
    request_id: &str,
    route: &str,
    status: StatusCode,
    started: Instant,
    tally: Tally,
    streamed: bool,
) {
    let latency = started.elapsed();
    tracing::info!(
        target: "switchboard::request",
        request_id,
        route,
        status = status.as_u16(),
        latency_ms = latency.as_secs_f64() * 1000.0,
        prompt_tokens = tally.prompt_tokens,
        completion_tokens = tally.completion_tokens,
        tool_calls = tally.tool_calls,
        streamed,
        "chat completion"
    );
    let labels = [
        ("route", route.to_owned()),
        ("status", status.as_u16().to_string()),
    ];
    metrics::counter!("gateway_requests_total", &labels).increment(1);
    metrics::histogram!("gateway_request_duration_seconds", "route" => route.to_owned())
        .record(latency.as_secs_f64());
    metrics::counter!("gateway_tokens_total", "route" => route.to_owned(), "direction" => "in")
        .increment(tally.prompt_tokens);
    metrics::counter!("gateway_tokens_total", "route" => route.to_owned(), "direction" => "out")
        .increment(tally.completion_tokens);
    metrics::counter!("gateway_tool_calls_total", "route" => route.to_owned())
        .increment(tally.tool_calls as u64);
}

/// `GET /v1/models`: the routes, then the listed characters.
pub async fn models(State(state): State<AppState>) -> Json<Value> {
    let routes = state.routes.iter().map(|route| route.name.clone());
    // File stems make ids without spaces; `character/<CHARACTER_NAME>` is accepted too.
    let characters = state
        .characters
        .current()
        .listed()
        .filter_map(|character| {
            character
                .file()
                .file_stem()
                .map(|stem| format!("{PREFIX}{}", stem.to_string_lossy()))
        })
        .collect::<Vec<_>>();
    let data: Vec<Value> = routes
        .chain(characters)
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "switchboard"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
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
