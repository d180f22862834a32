//! Google's Gemini API (`/v1beta/models/{model}:generateContent`, its stream, `:countTokens`
//! and the model list, the same under `/v1/`): what Gemini CLI and the google-genai SDKs
//! speak, on every route and character. The request is read once into the front-end's own
//! types (`request.rs`), checked and turned into the pipeline's request (`validate.rs`),
//! and the answer is rendered as `GenerateContentResponse`s (`render.rs`), errors in
//! Google's shape. What no backend here can honour is named in
//! `x-switchboard-dropped-fields`; Google's built-in tools are left out and named in
//! `x-switchboard-dropped-tools`.

mod render;
mod request;
mod validate;

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, http::header::HeaderName};
use serde_json::{Value, json};

use super::body::{PathStyle, read_typed};
use super::front_end::RequestId;
use super::log::{RequestLog, Tally};
use super::sse::{self, Delivery};
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::AppState;
pub use render::error_response;
use render::{ChunkRenderer, Framing, Presentation, WholeResponse};
use request::{CountBody, GenerateBody};
use switchboard_pipeline::ids::{CallIdShape, completion_id};
use switchboard_pipeline::{GatewayRequest, Started};
use validate::{Checked, check_request};

/// Names the request's settings that no backend here honours.
const DROPPED_FIELDS: &str = "x-switchboard-dropped-fields";
/// Names Google's built-in tools, which were left out.
const DROPPED_TOOLS: &str = "x-switchboard-dropped-tools";

/// The header Google's clients send their key in.
const KEY_HEADER: &str = "x-goog-api-key";

/// Models listed on a page when the client does not say, and at most.
const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 1000;

/// Gemini's API under both its versions, in Google's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new()
                .route("/v1beta/models", get(list_models))
                .route("/v1beta/models/{*rest}", get(get_model).post(handle))
                .route("/v1/models/{*rest}", get(get_model).post(handle)),
        )
    },
    owns,
    error: error_response,
};

/// The paths of Gemini's API: all of `/v1beta/`, and the models' own paths under `/v1/`
/// (`/v1/models` itself is the OpenAI-shaped list).
fn owns(path: &str) -> bool {
    path.starts_with("/v1beta/") || path.starts_with("/v1/models/")
}

/// Google's clients may send the key as `?key=`: for the gate, which reads keys from
/// headers, it becomes the `x-goog-api-key` header where that header does not name one
/// (on Gemini's paths, and the model list they share with OpenAI's).
pub fn key_from_query(request: &mut Request) {
    let path = request.uri().path();
    if !(owns(path) || path == "/v1/models")
        || request
            .headers()
            .get(KEY_HEADER)
            .is_some_and(|value| !value.as_bytes().trim_ascii().is_empty())
    {
        return;
    }
    let key =
        query_param(request.uri().query(), "key").and_then(|key| HeaderValue::from_str(key).ok());
    if let Some(mut key) = key {
        key.set_sensitive(true);
        request.headers_mut().insert(KEY_HEADER, key);
    }
}

/// The value of `name` in a query string (as sent: Google's parameters need no decoding).
fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// Whether a request to a path both APIs share (`GET /v1/models`) comes from Google's
/// clients: they send their key as `x-goog-api-key` (Gemini CLI sends it even empty) or
/// `?key=`. The SDKs ask `/v1/` when given a base URL.
pub(super) fn asks_as_google(headers: &HeaderMap, query: Option<&str>) -> bool {
    headers.contains_key(KEY_HEADER) || query_param(query, "key").is_some()
}

/// The model and method of `{model}:{method}`; the SDKs' `models/` prefix is left out.
fn model_and_method(rest: &str) -> Option<(&str, &str)> {
    let (model, method) = rest.rsplit_once(':')?;
    let model = model.strip_prefix("models/").unwrap_or(model);
    (!model.is_empty()).then_some((model, method))
}

/// `POST …/models/{model}:generateContent`, `:streamGenerateContent`, `:countTokens`.
pub async fn handle(
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    Path(rest): Path<String>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    let method = model_and_method(&rest);
    let (model, stream) = match method {
        Some((model, "generateContent")) => (model, None),
        Some((model, "streamGenerateContent")) => {
            let framing = match query_param(query.as_deref(), "alt") {
                Some("sse") => Framing::Sse,
                _ => Framing::JsonArray,
            };
            (model, Some(framing))
        }
        Some((model, "countTokens")) => {
            return count_tokens(request_id, &caller, model, body).await;
        }
        _ => {
            let log = RequestLog::new(request_id, "generate_content").with_caller(&caller);
            let error = ApiError {
                status: StatusCode::NOT_FOUND,
                message: format!(
                    "no method at {rest}: a model's methods are :generateContent, :streamGenerateContent and :countTokens"
                ),
                kind: "invalid_request_error",
                param: None,
                code: Some("unknown_method".into()),
            };
            return log.fail("-", error, FRONT_END.error);
        }
    };
    let log = RequestLog::new(request_id, "generate_content").with_caller(&caller);
    match start(&caller, &log, model, body, stream).await {
        Ok((started, delivery, dropped)) => {
            let response = sse::answer(started, delivery, FRONT_END.error, log).await;
            with_dropped(response, &dropped)
        }
        Err(error) => log.fail("-", error, FRONT_END.error),
    }
}

/// What a request named that was left out: its settings, and its tools.
type Dropped = (Vec<String>, Vec<String>);

/// The request read, resolved, admitted and started, and how its answer goes out.
async fn start(
    caller: &Caller,
    log: &RequestLog,
    model: &str,
    body: Body,
    stream: Option<Framing>,
) -> Result<(Started, Delivery<ChunkRenderer, WholeResponse>, Dropped), ApiError> {
    let snapshot = caller.snapshot();
    let body: GenerateBody =
        read_typed(body, snapshot.config.max_body_bytes, PathStyle::Brackets).await?;
    let checked = check_request(body, model.to_owned(), stream.is_some())?;
    log.requested(&checked.request.model);
    let presentation = Presentation {
        id: completion_id(),
        model: checked.request.model.clone(),
        include_thoughts: checked.include_thoughts,
    };
    let (request, dropped) = gateway_request(caller, checked, true).await?;
    caller::reserve(caller, &request)?;
    let started = snapshot.pipeline.start(request)?;
    let delivery = match stream {
        Some(framing) => Delivery::Streamed(ChunkRenderer::new(presentation, framing)),
        None => Delivery::Whole(WholeResponse(presentation)),
    };
    Ok((started, delivery, dropped))
}

/// The checked request resolved: its route or character and, when it is to be answered
/// (`run_tools`), the tools the gateway runs for it.
async fn gateway_request(
    caller: &Caller,
    checked: Checked,
    run_tools: bool,
) -> Result<(GatewayRequest, Dropped), ApiError> {
    let Checked {
        request,
        tools,
        dropped_fields,
        dropped_tools,
        ..
    } = checked;
    let target = caller::resolve(caller, &request.model)?;
    let gateway = if run_tools {
        caller::gateway_tools(caller, &target, &[], &request, None).await?
    } else {
        None
    };
    let request = GatewayRequest {
        target,
        request,
        tools,
        call_ids: CallIdShape::OpenAi,
        gateway,
        tool_filter: caller.tool_filter(),
    };
    Ok((request, (dropped_fields, dropped_tools)))
}

fn with_dropped(mut response: Response, (fields, tools): &Dropped) -> Response {
    for (name, dropped) in [(DROPPED_FIELDS, fields), (DROPPED_TOOLS, tools)] {
        if !dropped.is_empty()
            && let Ok(value) = HeaderValue::from_str(&dropped.join(", "))
        {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
    response
}

/// `POST …/models/{model}:countTokens`: `{"totalTokens": N}`, counted by the tokenizer of
/// the backend that would answer where it offers one, estimated otherwise.
async fn count_tokens(request_id: String, caller: &Caller, model: &str, body: Body) -> Response {
    let log = RequestLog::new(request_id, "count_tokens").with_caller(caller);
    let counted = async {
        let body: CountBody = read_typed(
            body,
            caller.snapshot().config.max_body_bytes,
            PathStyle::Brackets,
        )
        .await?;
        let body = body.generate_content_request.unwrap_or(body.rest);
        let checked = check_request(body, model.to_owned(), false)?;
        log.requested(&checked.request.model);
        gateway_request(caller, checked, false).await
    };
    let (request, dropped) = match counted.await {
        Ok(counted) => counted,
        Err(error) => return log.fail("-", error, FRONT_END.error),
    };
    let count = caller.snapshot().pipeline.count_tokens(&request).await;
    // A count consumes nothing: no tokens are tallied.
    log.finish(
        &request.target.label(),
        StatusCode::OK,
        Tally::default(),
        false,
    );
    with_dropped(
        Json(json!({"totalTokens": count.tokens})).into_response(),
        &dropped,
    )
}

/// A model as Google lists it.
fn model_entry(id: &str) -> Value {
    json!({"name": format!("models/{id}"), "baseModelId": id, "version": "switchboard",
        "displayName": id, "description": "served by Switchboard",
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]})
}

/// `GET /v1beta/models`: the routes, then the listed characters, that the caller may use,
/// paged as Google pages (`pageSize`, `pageToken`, `nextPageToken`).
pub(super) async fn list_models(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.as_deref();
    let size = match query_param(query, "pageSize").map(str::parse::<usize>) {
        None | Some(Ok(0)) => DEFAULT_PAGE_SIZE,
        Some(Ok(size)) => size.min(MAX_PAGE_SIZE),
        Some(Err(_)) => {
            return error_response(ApiError::invalid_request(
                "pageSize: must be a whole number",
                Some("pageSize".into()),
            ));
        }
    };
    // The token is where the next page starts.
    let start = match query_param(query, "pageToken").filter(|token| !token.is_empty()) {
        None => 0,
        Some(token) => match token.parse::<usize>() {
            Ok(start) => start,
            Err(_) => {
                return error_response(ApiError::invalid_request(
                    "pageToken: not a token this gateway gave",
                    Some("pageToken".into()),
                ));
            }
        },
    };
    let ids: Vec<String> = super::ops::model_ids(&state, caller.snapshot())
        .into_iter()
        .filter(|id| caller.may_use(id))
        .collect();
    let models: Vec<Value> = ids
        .iter()
        .skip(start)
        .take(size)
        .map(|id| model_entry(id))
        .collect();
    let mut body = json!({"models": models});
    if start.saturating_add(size) < ids.len() {
        body["nextPageToken"] = json!((start + size).to_string());
    }
    Json(body).into_response()
}

/// `GET …/models/{model}`: a route, an alias of one, or `character/NAME`, as the caller may
/// use it; 404 otherwise.
async fn get_model(Extension(caller): Extension<Caller>, Path(rest): Path<String>) -> Response {
    let model = rest.strip_prefix("models/").unwrap_or(&rest);
    match caller::resolve(&caller, model) {
        Ok(_) => Json(model_entry(model)).into_response(),
        Err(error) => error_response(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_the_model_and_the_method() {
        assert_eq!(
            model_and_method("gemini-2.5-flash:generateContent"),
            Some(("gemini-2.5-flash", "generateContent"))
        );
        assert_eq!(
            model_and_method("character/narrator:streamGenerateContent"),
            Some(("character/narrator", "streamGenerateContent"))
        );
        assert_eq!(
            model_and_method("models/qwen:countTokens"),
            Some(("qwen", "countTokens"))
        );
        assert_eq!(model_and_method("qwen"), None);
        assert_eq!(model_and_method(":generateContent"), None);
    }

    #[test]
    fn query_parameters_are_found_by_name() {
        assert_eq!(query_param(Some("alt=sse&key=k1"), "key"), Some("k1"));
        assert_eq!(query_param(Some("alt=sse"), "key"), None);
        assert_eq!(query_param(None, "alt"), None);
    }
}
