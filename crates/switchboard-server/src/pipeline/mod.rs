//! The one pipeline every API front-end feeds. A front-end parses its own request format
//! into a [`GatewayRequest`] (the gateway's own request model); the pipeline sends it to a
//! route's backend (native or prompted tool calling) or plays a character, and hands back a
//! channel of [`Output`]s that the front-end renders, whole or streamed, in its own format.
//! No front-end knows about another, and no backend format knows about a front-end.

mod character;
mod collect;
mod completion;
mod finisher;
mod prompted;
pub mod tool_checks;
mod tools;

use axum::http::StatusCode;
use switchboard_tools::Toolset;
use switchboard_wire::ChatRequest;

use crate::error::ApiError;
use crate::state::AppState;

pub use character::{CharacterEvent, PREFIX as CHARACTER_PREFIX};
pub use collect::{Answer, collect};
pub use completion::Outputs;
pub use finisher::Output;
pub use tools::compile_tools;

/// A request in the gateway's own model, whatever API it arrived through.
#[derive(Debug)]
pub struct GatewayRequest {
    /// The model name the client sent: a route, or `character/<name>`.
    pub model: String,
    /// The request; its tools are plain function tools whatever the API offered.
    pub request: ChatRequest,
    /// The same tools compiled, to check the model's calls against.
    pub tools: Toolset,
}

/// An answer under way.
#[derive(Debug)]
pub struct Started {
    /// The route or character that answers, for logs and metric labels: never the raw
    /// client string.
    pub label: String,
    pub outputs: Outputs,
}

/// Resolves the model name and starts the answer. Dropping the outputs (the client went
/// away) cancels the work.
pub fn start(state: &AppState, request: GatewayRequest) -> Result<Started, ApiError> {
    let GatewayRequest {
        model,
        request,
        tools,
    } = request;
    if let Some(name) = model.strip_prefix(character::PREFIX) {
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
        let label = format!("{}{}", character::PREFIX, character.name());
        let outputs = character::start(character, route, text, history, state.request_timeout);
        return Ok(Started { label, outputs });
    }
    let route = state.routes.resolve(&model).cloned().ok_or_else(|| {
        let known: Vec<&str> = state
            .routes
            .all()
            .iter()
            .map(|route| route.name.as_str())
            .collect();
        ApiError::not_found(format!(
            "no route is named \"{model}\"; configured routes: {}",
            known.join(", ")
        ))
    })?;
    Ok(Started {
        label: route.name.clone(),
        outputs: completion::start(completion::Completion {
            route,
            request,
            tools,
            timeout: state.request_timeout,
        }),
    })
}
