//! Ollama's API (`/api/chat`, `/api/generate` and the endpoints its clients ask around
//! them): Home Assistant, Open WebUI and the `ollama` clients reach every route and
//! character through it. Requests become the pipeline's through the wire crate's reader of
//! Ollama requests; answers are NDJSON lines or one JSON object; errors are
//! `{"error": "…"}` with the HTTP status. Model names take Ollama's tags: `qwen:latest` is
//! the route `qwen`, and a character answers to `narrator` as to `character/narrator`.
//! The gateway downloads and loads nothing: a served name "pulls" at once, is always
//! "running", and an unload request is answered without asking the model.

mod render;
mod request;
mod validate;

use std::marker::PhantomData;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::body::{PathStyle, read_json};
use super::front_end::traced;
use super::path::{self, Api, Checked, Context, Head};
use super::sse::Delivery;
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::{AppState, Snapshot};
use render::{ChunkLines, Endpoint, NDJSON, Presentation, WholeChunk, rfc3339};
use request::{ChatBody, GenerateBody};
use switchboard_pipeline::ids::CallIdShape;
use switchboard_pipeline::{CharacterId, Target};
use validate::{check_chat, check_generate};

/// The Ollama release whose API this front-end serves, as `/api/version` reports it
/// (clients compare it as dotted integers).
const OLLAMA_VERSION: &str = "0.12.6";

/// The tag every served name has; the only one.
const TAG: &str = ":latest";

/// Ollama's API, in Ollama's error shape.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        traced(
            Router::new()
                .route("/api/chat", post(path::serve::<OllamaChat>))
                .route("/api/generate", post(path::serve::<OllamaGenerate>)),
        )
        .route("/api/version", get(version))
        .route("/api/tags", get(tags))
        .route("/api/ps", get(ps))
        .route("/api/show", post(show))
        .route("/api/pull", post(pull))
        .route("/api/embed", post(embed))
        .route("/api/embeddings", post(embed))
        .route("/api/{*rest}", any(unsupported))
    },
    owns: |path| path.starts_with("/api/"),
    error: render::error_response,
};

/// `POST /api/chat` (with [`ChatBody`]) or `POST /api/generate` (with [`GenerateBody`]) on
/// the one front-end path: the two differ only in their body and its checks.
pub struct Ollama<B>(PhantomData<fn() -> B>);

/// `POST /api/chat`.
pub type OllamaChat = Ollama<ChatBody>;

/// `POST /api/generate`.
pub type OllamaGenerate = Ollama<GenerateBody>;

/// The body of one of Ollama's two model endpoints, and its checks.
pub trait ModelBody: serde::de::DeserializeOwned + Send + 'static {
    const KIND: Endpoint;
    /// The endpoint's label in log lines, metrics and spans.
    const ENDPOINT: &'static str;
    fn check(self) -> Result<validate::Checked, ApiError>;
}

impl ModelBody for ChatBody {
    const KIND: Endpoint = Endpoint::Chat;
    const ENDPOINT: &'static str = "ollama_chat";

    fn check(self) -> Result<validate::Checked, ApiError> {
        check_chat(self)
    }
}

impl ModelBody for GenerateBody {
    const KIND: Endpoint = Endpoint::Generate;
    const ENDPOINT: &'static str = "ollama_generate";

    fn check(self) -> Result<validate::Checked, ApiError> {
        check_generate(self)
    }
}

impl<B: ModelBody> Api for Ollama<B> {
    type Body = B;
    type Presentation = Presentation;
    type Streamed = ChunkLines;
    type Whole = WholeChunk;

    const ENDPOINT: &'static str = B::ENDPOINT;
    const PATH_STYLE: PathStyle = PathStyle::Brackets;

    fn error(error: ApiError) -> Response {
        render::error_response(error)
    }

    async fn check(body: B, context: &Context<'_>) -> Result<Checked<Presentation>, ApiError> {
        Ok(for_path(body.check()?, context, B::KIND))
    }

    fn answered(presentation: &Presentation) -> Option<Response> {
        loaded(presentation)
    }

    fn delivery(
        presentation: Presentation,
        streamed: Option<Head>,
    ) -> Delivery<ChunkLines, WholeChunk> {
        match streamed {
            Some(_) => Delivery::Streamed(ChunkLines::new(presentation)),
            None => Delivery::Whole(WholeChunk(presentation)),
        }
    }
}

/// The checked request as the path takes it: the model's name as Ollama's clients send it
/// kept for the answer, the one the pipeline resolves in the request.
fn for_path(
    checked: validate::Checked,
    context: &Context<'_>,
    endpoint: Endpoint,
) -> Checked<Presentation> {
    let validate::Checked {
        mut request,
        tools,
        load,
    } = checked;
    let mut presentation = Presentation::new(request.model.clone(), endpoint);
    presentation.load = load;
    request.model = served_name(context.caller.snapshot(), &request.model);
    Checked::new(request, tools, CallIdShape::OpenAi, presentation)
}

/// Ollama's answer to a request with no messages or an empty prompt: the model is loaded
/// (or unloaded, with `keep_alive: 0`), one JSON object whatever `stream` says.
/// `None` for a request that asks the model.
fn loaded(presentation: &Presentation) -> Option<Response> {
    let unload = presentation.load?;
    let mut body = json!({"model": presentation.model, "created_at": rfc3339(SystemTime::now()),
        "done": true, "done_reason": if unload { "unload" } else { "load" }});
    match presentation.endpoint {
        Endpoint::Chat => body["message"] = json!({"role": "assistant", "content": ""}),
        Endpoint::Generate => body["response"] = json!(""),
    }
    Some(Json(body).into_response())
}

/// The name the pipeline resolves for a name an Ollama client sends: without the `:latest`
/// tag Ollama's clients add (unless a route has the tagged name itself), and a character's
/// bare name as `character/<name>` when no route has it.
fn served_name(snapshot: &Snapshot, model: &str) -> String {
    let routes = &snapshot.pipeline.routes;
    if routes.named(model).is_some() {
        return model.to_owned();
    }
    let name = model.strip_suffix(TAG).unwrap_or(model);
    if routes.named(name).is_none()
        && !name.contains('/')
        && snapshot.pipeline.characters.get(name).is_some()
    {
        return CharacterId::named(name).as_str().to_owned();
    }
    name.to_owned()
}

/// `GET /api/version`
async fn version() -> Json<Value> {
    Json(json!({"version": OLLAMA_VERSION}))
}

/// Every name the caller may use, tagged: the routes, then the listed characters.
fn served_models(state: &AppState, caller: &Caller) -> Vec<Value> {
    let snapshot = caller.snapshot();
    let modified_at = rfc3339(SystemTime::now());
    state
        .model_ids(snapshot)
        .into_iter()
        .filter(|id| caller.may_use(id))
        .map(|id| {
            let name = format!("{id}{TAG}");
            json!({"name": name, "model": name, "modified_at": modified_at, "size": 0,
                "digest": digest(&id), "details": details(snapshot, &id)})
        })
        .collect()
}

/// A stable digest for a name: Ollama's clients show and compare it.
fn digest(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

/// What Ollama says of a model's files; the gateway knows the backend's model name, and
/// nothing of its size or quantization.
fn details(snapshot: &Snapshot, id: &str) -> Value {
    let family = snapshot
        .pipeline
        .routes
        .named(id)
        .map(|route| route.model.clone())
        .unwrap_or_default();
    json!({"parent_model": "", "format": "", "family": family, "families": [family],
        "parameter_size": "", "quantization_level": ""})
}

/// `GET /api/tags`
async fn tags(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Json<Value> {
    Json(json!({"models": served_models(&state, &caller)}))
}

/// `GET /api/ps`: every served model is always loaded; it "expires" at Ollama's default
/// keep-alive from now.
async fn ps(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Json<Value> {
    let expires_at = rfc3339(SystemTime::now() + Duration::from_secs(300));
    let models: Vec<Value> = served_models(&state, &caller)
        .into_iter()
        .map(|mut model| {
            model["expires_at"] = json!(expires_at);
            model["size_vram"] = json!(0);
            model
        })
        .collect();
    Json(json!({"models": models}))
}

/// The model a `/api/show` or `/api/pull` body names (`model`, or the older `name`), once
/// the caller may use it, as the pipeline resolves it.
fn named_model(caller: &Caller, body: &Value) -> Result<(String, Target), ApiError> {
    let Some(model) = ["model", "name"]
        .iter()
        .find_map(|field| body.get(*field).and_then(Value::as_str))
        .filter(|model| !model.is_empty())
    else {
        return Err(ApiError::invalid_request(
            "model: you must name a model (a route, an alias of one, or character/<name>)",
            Some("model".into()),
        ));
    };
    let served = served_name(caller.snapshot(), model);
    let target = caller::resolve(caller, &served)?;
    Ok((served, target))
}

/// The body of `/api/show` or `/api/pull`, as JSON.
async fn read_body(caller: &Caller, body: Body) -> Result<Value, ApiError> {
    read_json(body, caller.snapshot().config.max_body_bytes).await
}

/// `POST /api/show`: what Ollama's clients read of a model. `model_info` is always there
/// (the `ollama` Python client needs it); the capabilities are what every route serves
/// through the gateway: completion and tool calling, native or prompted.
async fn show(Extension(caller): Extension<Caller>, body: Body) -> Response {
    let served = match read_body(&caller, body)
        .await
        .and_then(|body| named_model(&caller, &body))
    {
        Ok((served, _)) => served,
        Err(error) => return render::error_response(error),
    };
    let details = details(caller.snapshot(), &served);
    Json(
        json!({"modelfile": "", "parameters": "", "template": "{{ .Prompt }}",
        "details": details, "model_info": {"general.architecture": details["family"],
        "general.basename": served}, "capabilities": ["completion", "tools"],
        "modified_at": rfc3339(SystemTime::now())}),
    )
    .into_response()
}

/// `POST /api/pull`: nothing to download for a name the gateway serves, so Ollama's
/// success stream (or its last line, with `stream: false`) at once; another name is
/// Ollama's error for a model the registry lacks.
async fn pull(Extension(caller): Extension<Caller>, body: Body) -> Response {
    let body = match read_body(&caller, body).await {
        Ok(body) => body,
        Err(error) => return render::error_response(error),
    };
    if let Err(error) = named_model(&caller, &body) {
        return render::error_response(ApiError {
            message: format!(
                "pull model manifest: file does not exist: {}",
                error.message
            ),
            ..error
        });
    }
    if body.get("stream").and_then(Value::as_bool) == Some(false) {
        return Json(json!({"status": "success"})).into_response();
    }
    let lines: String = [
        "pulling manifest",
        "verifying sha256 digest",
        "writing manifest",
        "success",
    ]
    .iter()
    .map(|status| format!("{}\n", json!({"status": status})))
    .collect();
    ([(header::CONTENT_TYPE, NDJSON)], lines).into_response()
}

/// `POST /api/embed` and `/api/embeddings`: passed on to the route the model names where
/// its backend embeds (an Ollama server, which takes the request as its clients send it);
/// elsewhere a clear error saying why.
async fn embed(Extension(caller): Extension<Caller>, uri: Uri, body: Body) -> Response {
    let answer = async {
        let body = read_body(&caller, body).await?;
        let asked = body.get("model").cloned();
        let (served, target) = named_model(&caller, &body)?;
        let pipeline = &caller.snapshot().pipeline;
        let Some(answer) = pipeline.embed(&target, uri.path(), body).await else {
            return Err(not_implemented(&format!(
                "{served} does not embed: its backend serves no embeddings (the gateway passes /api/embed on to routes whose provider is \"ollama\"); its chat is served at /api/chat"
            )));
        };
        let mut answer = answer?;
        // Named as the client asked, not as the backend knows the model.
        if let (Some(fields), Some(asked)) = (answer.as_object_mut(), asked)
            && fields.contains_key("model")
        {
            fields.insert("model".into(), asked);
        }
        Ok::<_, ApiError>(answer)
    }
    .await;
    match answer {
        Ok(answer) => Json(answer).into_response(),
        Err(error) => render::error_response(error),
    }
}

/// Every other `/api/` endpoint: Ollama's model management, which a gateway has no models
/// to do for.
async fn unsupported(Path(rest): Path<String>) -> Response {
    render::error_response(not_implemented(&format!(
        "/api/{rest} is not served: the gateway serves Ollama's chat, generate, tags, show, ps, pull and version endpoints; it manages no model files"
    )))
}

fn not_implemented(message: &str) -> ApiError {
    ApiError {
        status: StatusCode::NOT_IMPLEMENTED,
        ..ApiError::invalid_request(message, None)
    }
}

/// `GET /` for an API client: Ollama's clients check that the server is up by this text,
/// and they ask for a type (`application/json`); a browser asks for `text/html`, and a
/// client that takes anything (`*/*`, or no `Accept`) gets the page as it always has.
pub fn wants_ollama(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| !accept.contains("text/html") && !accept.contains("*/*"))
}

/// What Ollama answers at `/`.
pub const RUNNING: &str = "Ollama is running";
