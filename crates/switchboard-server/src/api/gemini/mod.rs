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

use std::borrow::Cow;

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, routing::get};
use percent_encoding::percent_decode_str;
use serde_json::{Value, json};

use super::body::PathStyle;
use super::front_end::RequestId;
use super::log::RequestLog;
use super::path::{self, Api, Context, Counts, Head};
use super::sse::Delivery;
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::AppState;
pub use render::error_response;
use render::{ChunkRenderer, Framing, Presentation, WholeResponse};
use request::GenerateBody;
use switchboard_pipeline::ids::{CallIdShape, completion_id};
use switchboard_pipeline::{GatewayRequest, TokenCount};
use validate::{Checked, check_request};

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
        query_param(request.uri().query(), "key").and_then(|key| HeaderValue::from_str(&key).ok());
    if let Some(mut key) = key {
        key.set_sensitive(true);
        request.headers_mut().insert(KEY_HEADER, key);
    }
}

/// The value of `name` in a query string, percent-decoded (a key may hold `+` or `/`).
fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<Cow<'q, str>> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| percent_decode_str(value).decode_utf8_lossy())
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

/// `POST …/models/{model}:generateContent`, `:streamGenerateContent` (on the one
/// front-end path) and `:countTokens`.
pub async fn handle(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match Call::of(&uri) {
        Ok(call) if call.method == Method::CountTokens => {
            path::count::<Gemini>(
                State(state),
                Extension(RequestId(request_id)),
                Extension(caller),
                uri,
                headers,
                body,
            )
            .await
        }
        Ok(_) => {
            path::serve::<Gemini>(
                State(state),
                Extension(RequestId(request_id)),
                Extension(caller),
                uri,
                headers,
                body,
            )
            .await
        }
        Err(error) => RequestLog::new(request_id, Gemini::ENDPOINT)
            .with_caller(&caller)
            .fail("-", error, FRONT_END.error),
    }
}

/// A model's methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Generate,
    /// Streamed, framed so.
    Stream(Framing),
    CountTokens,
}

/// What the path asks: `{model}:{method}`, and for a stream `?alt=sse` or not.
#[derive(Debug)]
struct Call {
    model: String,
    method: Method,
}

impl Call {
    fn of(uri: &Uri) -> Result<Self, ApiError> {
        let path = uri.path();
        let rest = path
            .strip_prefix("/v1beta/models/")
            .or_else(|| path.strip_prefix("/v1/models/"))
            .unwrap_or(path);
        // A client may escape the model's `/` or `:` (`character%2Fnarrator`), as Google's
        // own paths allow; the name is the decoded one.
        let rest = percent_decode_str(rest).decode_utf8_lossy();
        let method = match model_and_method(&rest) {
            Some((model, "generateContent")) => Some((model, Method::Generate)),
            Some((model, "streamGenerateContent")) => {
                let framing = match query_param(uri.query(), "alt").as_deref() {
                    Some("sse") => Framing::Sse,
                    _ => Framing::JsonArray,
                };
                Some((model, Method::Stream(framing)))
            }
            Some((model, "countTokens")) => Some((model, Method::CountTokens)),
            _ => None,
        };
        let Some((model, method)) = method else {
            return Err(ApiError {
                status: StatusCode::NOT_FOUND,
                message: format!(
                    "no method at {rest}: a model's methods here are :generateContent, :streamGenerateContent and :countTokens"
                ),
                kind: "invalid_request_error",
                param: None,
                code: Some("unknown_method".into()),
            });
        };
        Ok(Self {
            model: model.to_owned(),
            method,
        })
    }
}

/// Gemini's model methods on the one front-end path.
pub struct Gemini;

impl Api for Gemini {
    type Body = GenerateBody;
    type Presentation = Presentation;
    type Streamed = ChunkRenderer;
    type Whole = WholeResponse;

    const ENDPOINT: &'static str = "generate_content";
    const PATH_STYLE: PathStyle = PathStyle::Brackets;

    fn error(error: ApiError) -> Response {
        error_response(error)
    }

    async fn check(
        mut body: GenerateBody,
        context: &Context<'_>,
    ) -> Result<path::Checked<Presentation>, ApiError> {
        let Call { model, method } = Call::of(context.uri)?;
        let counting = method == Method::CountTokens;
        // `countTokens` may wrap a whole request; only it.
        let body = match body.generate_content_request.take() {
            Some(inner) if counting => *inner,
            Some(_) => {
                return Err(ApiError::invalid_request(
                    "generateContentRequest: only :countTokens takes a wrapped request",
                    Some("generateContentRequest".into()),
                ));
            }
            None => body,
        };
        let framing = match method {
            Method::Stream(framing) => Some(framing),
            _ => None,
        };
        let Checked {
            request,
            tools,
            include_thoughts,
            dropped_fields,
            dropped_tools,
        } = check_request(body, model, framing.is_some())?;
        let presentation = Presentation {
            id: completion_id(),
            model: request.model.clone(),
            include_thoughts,
            framing: framing.unwrap_or(Framing::Sse),
            dropped_fields,
            gateway_tools: false,
        };
        Ok(path::Checked {
            dropped: dropped_tools,
            ..path::Checked::new(request, tools, CallIdShape::OpenAi, presentation)
        })
    }

    fn with_gateway_tools(
        request: &mut GatewayRequest,
        presentation: &mut Presentation,
    ) -> Result<(), ApiError> {
        presentation.gateway_tools = request.gateway.is_some();
        Ok(())
    }

    fn delivery(
        presentation: Presentation,
        streamed: Option<Head>,
    ) -> Delivery<ChunkRenderer, WholeResponse> {
        match streamed {
            Some(_) => Delivery::Streamed(ChunkRenderer::new(presentation)),
            None => Delivery::Whole(WholeResponse(presentation)),
        }
    }
}

impl Counts for Gemini {
    /// `:countTokens`' answer, `{"totalTokens": N}`: counted by the tokenizer of the
    /// backend that would answer where it offers one, estimated otherwise.
    fn counted(count: TokenCount, presentation: &Presentation) -> Response {
        let mut response = Json(json!({"totalTokens": count.tokens})).into_response();
        render::name_dropped(&presentation.dropped_fields, response.headers_mut());
        response
    }
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
    let size = match query_param(query, "pageSize").map(|size| size.parse::<usize>()) {
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
    let ids: Vec<String> = state
        .model_ids(caller.snapshot())
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
/// use it; 404 otherwise. Under `/v1/`, a client that is not Google's (OpenAI's SDK
/// retrieving a model) gets OpenAI's shapes.
async fn get_model(
    Extension(caller): Extension<Caller>,
    Path(rest): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let model = rest.strip_prefix("models/").unwrap_or(&rest);
    let google = uri.path().starts_with("/v1beta/") || asks_as_google(&headers, uri.query());
    match (caller::resolve(&caller, model), google) {
        (Ok(_), true) => Json(model_entry(model)).into_response(),
        (Ok(_), false) => {
            Json(json!({"id": model, "object": "model", "created": 0, "owned_by": "switchboard"}))
                .into_response()
        }
        (Err(error), true) => error_response(error),
        (Err(error), false) => error.into_response(),
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
    fn query_parameters_are_found_by_name_and_decoded() {
        assert_eq!(
            query_param(Some("alt=sse&key=k1"), "key").as_deref(),
            Some("k1")
        );
        assert_eq!(
            query_param(Some("key=sk%2Bab%2Fc"), "key").as_deref(),
            Some("sk+ab/c")
        );
        assert_eq!(query_param(Some("alt=sse"), "key"), None);
        assert_eq!(query_param(None, "alt"), None);
    }

    #[test]
    fn an_escaped_model_name_is_read_decoded() {
        let call = |path: &str| Call::of(&path.parse::<Uri>().unwrap()).unwrap();
        let escaped = call("/v1beta/models/character%2Fnarrator:generateContent");
        assert_eq!(escaped.model, "character/narrator");
        assert_eq!(escaped.method, Method::Generate);
        let colon = call("/v1/models/models%2Fqwen%3Alatest:streamGenerateContent?alt=sse");
        assert_eq!(colon.model, "qwen:latest");
        assert_eq!(colon.method, Method::Stream(Framing::Sse));
    }
}
