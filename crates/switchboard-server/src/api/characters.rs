//! The characters API (what the playground page reads, and any other tool may):
//! `GET /v1/characters` lists every running character with its tools and the problems of its
//! file, and the files that failed with theirs; `GET /v1/characters/{name}` adds the system
//! prompt a new conversation gets; `POST /v1/characters/{name}/tools/{tool}` runs one tool
//! on a fresh conversation through exactly the path a conversation's calls take (the same
//! one `switchboard call` uses): validation, sandbox, timeout, truncation.

use std::path::Path as FilePath;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use switchboard_characters::{Character, Loaded, Rejection};
use switchboard_tools::{CallError, ToolCall, ToolResult};

use super::body::read_json;
use super::front_end::RequestId;
use super::log::{RequestLog, Tally};
use crate::api::caller::{self, Caller};
use crate::api::error::ApiError;
use crate::state::AppState;
use switchboard_pipeline::{CharacterId, Target, catalog};

/// The characters over HTTP: listed, shown, and their tools called.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        super::front_end::traced(
            Router::new().route("/v1/characters/{name}/tools/{tool}", post(call_tool)),
        )
        .route("/v1/characters", get(list))
        .route("/v1/characters/{name}", get(show))
    },
    owns: |path| path == "/v1/characters" || path.starts_with("/v1/characters/"),
    error: IntoResponse::into_response,
};

/// `GET /v1/characters`
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let loaded = state.characters.current();
    let characters: Vec<Value> = loaded
        .characters
        .iter()
        .filter(|character| {
            CharacterId::of(character).is_some_and(|id| caller.may_use(id.as_str()))
        })
        .map(|character| describe(character, &loaded))
        .collect();
    let running = |rejection: &&Rejection| {
        loaded
            .characters
            .iter()
            .any(|character| character.file() == rejection.file)
    };
    // A file's problems are shown to keys that may use the character it would be: they
    // quote its code, which is no business of keys kept away from it.
    let may_see = |rejection: &&Rejection| {
        rejection.file.file_stem().is_some_and(|stem| {
            caller.may_use(CharacterId::named(&stem.to_string_lossy()).as_str())
        })
    };
    let rejected: Vec<Value> = loaded
        .rejections
        .iter()
        .filter(|rejection| !running(rejection) && may_see(rejection))
        .map(
            |rejection| json!({"file": file_name(&rejection.file), "problems": rejection.problems}),
        )
        .collect();
    Json(json!({"characters": characters, "rejected": rejected}))
}

/// `GET /v1/characters/{name}`: the character and the system prompt a new conversation gets
/// now (made by the character's own code; `system_prompt_error` says why when it failed).
pub async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Response {
    let loaded = state.characters.current();
    let Some(character) = loaded.get(&name).cloned() else {
        return not_found(&caller, &name, &loaded).into_response();
    };
    let model = CharacterId::named(&name);
    let target = Target::Character(Arc::clone(&character));
    if let Err(error) = caller::authorize(&caller, &target, model.as_str()) {
        return error.into_response();
    }
    let mut body = describe(&character, &loaded);
    match character.start_conversation().await {
        Ok(session) => body["system_prompt"] = json!(session.system_prompt()),
        Err(error) => body["system_prompt_error"] = json!(error.to_string()),
    }
    Json(body).into_response()
}

/// `POST /v1/characters/{name}/tools/{tool}` with `{"arguments": …}`: an object, or the raw
/// text a model would write (to try malformed arguments); absent means none. The answer is
/// what the model would read, `Error: …` strings included (those are answers, not failures).
pub async fn call_tool(
    State(state): State<AppState>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    Extension(caller): Extension<Caller>,
    Path((name, tool)): Path<(String, String)>,
    body: Body,
) -> Response {
    let log = RequestLog::new(request_id, "character_tool").with_caller(&caller);
    let loaded = state.characters.current();
    let Some(character) = loaded.get(&name).cloned() else {
        return log.fail("-", not_found(&caller, &name, &loaded), FRONT_END.error);
    };
    let model = CharacterId::named(&name);
    let target = Target::Character(Arc::clone(&character));
    if let Err(error) = caller::authorize(&caller, &target, model.as_str()) {
        return log.fail("-", error, FRONT_END.error);
    }
    let route = Target::character_label(&character);
    let arguments = match read_json(body, caller.snapshot().config.max_body_bytes)
        .await
        .and_then(|body| arguments(&body))
    {
        Ok(arguments) => arguments,
        Err(error) => return log.fail(&route, error, FRONT_END.error),
    };
    let call = ToolCall {
        id: "call_playground".to_owned(),
        name: tool.clone(),
        arguments,
    };
    let started = Instant::now();
    // A key's `tools` globs hold here as on `/mcp` (`{file stem}_{tool}`): a tool beyond
    // them is answered as one that does not exist.
    let refused = !caller.may_use_tool(&catalog::character_tool_name(&character, &tool));
    let outcome = if refused {
        Ok(ToolResult {
            call_id: call.id.clone(),
            content: CallError::UnknownTool(tool.clone()).to_string(),
            is_error: true,
        })
    } else {
        character.run_tool(&call).await
    };
    let result = match outcome {
        Ok(result) => result,
        Err(error) => {
            let error = ApiError::upstream(
                StatusCode::INTERNAL_SERVER_ERROR,
                error.to_string(),
                "character_failed",
            );
            return log.fail(&route, error, FRONT_END.error);
        }
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    log.finish(&route, StatusCode::OK, Tally::default(), false);
    Json(
        json!({"tool": tool, "content": result.content, "is_error": result.is_error,
        "duration_ms": duration_ms}),
    )
    .into_response()
}

/// The call's arguments as the model would have written them.
fn arguments(body: &Value) -> Result<String, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::invalid_request(
            "the request body must be a JSON object: {\"arguments\": {…}}",
            None,
        ));
    };
    match body.get("arguments") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(raw)) => Ok(raw.clone()),
        Some(object @ Value::Object(_)) => Ok(object.to_string()),
        Some(_) => Err(ApiError::invalid_request(
            "arguments: expected an object, or the raw text a model would write as a string",
            Some("arguments".into()),
        )),
    }
}

/// A character as the API shows it; `problems` are those of its file's last load when that
/// failed (this is then the last good version, still serving).
fn describe(character: &Character, loaded: &Loaded) -> Value {
    let id = character
        .file()
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let problems = loaded
        .rejection(character.file())
        .map(|rejection| rejection.problems.as_slice())
        .unwrap_or_default();
    let tools: Vec<_> = character.tools().definitions().collect();
    json!({
        "id": id,
        "name": character.name(),
        "model": CharacterId::named(&id).as_str(),
        "file": file_name(character.file()),
        "listed": character.is_listed(),
        "voice_source": character.voice_source(),
        "instructions": character.instructions(),
        "metadata": character.metadata(),
        "tool_timeout_ms": character.tool_timeout().as_millis() as u64,
        "tools": tools,
        "problems": problems,
    })
}

fn file_name(file: &FilePath) -> String {
    file.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// 404 naming what is loaded, and why a file of that name is not, when one failed.
/// Why no character answers `name`; a file's failure is told only to a caller that may use
/// the character.
fn not_found(caller: &Caller, name: &str, loaded: &Loaded) -> ApiError {
    caller.not_found(
        CharacterId::named(name).as_str(),
        file_not_found(name, loaded),
    )
}

fn file_not_found(name: &str, loaded: &Loaded) -> ApiError {
    let failed = loaded.rejections.iter().find(|rejection| {
        rejection
            .file
            .file_stem()
            .is_some_and(|stem| stem.to_string_lossy().eq_ignore_ascii_case(name))
    });
    let message = match failed {
        Some(rejection) => format!(
            "character \"{name}\" did not load ({} problem(s), first: {}); GET /v1/characters lists them",
            rejection.problems.len(),
            rejection
                .problems
                .first()
                .map_or("", |problem| problem.message.as_str())
        ),
        None => format!("no character named \"{name}\" is loaded; GET /v1/characters lists them"),
    };
    ApiError {
        status: StatusCode::NOT_FOUND,
        message,
        kind: "invalid_request_error",
        param: None,
        code: Some("character_not_found".into()),
    }
}
