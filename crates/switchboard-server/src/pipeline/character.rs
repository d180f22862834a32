//! `character/<name>` routes: the gateway plays the character itself, with its system
//! prompt and its tools (the conversation loop), and streams the character's words. A
//! client's own tools make no sense here and are refused. The client's `max_tokens`, under
//! the gateway's `character_max_tokens`, bounds the whole turn with its tool rounds: the
//! client asked for one reply, however many requests it takes. What the character did on
//! its own (the prompt it built, each tool call and its result) travels beside the words as
//! [`GatewayEvent`]s, which a front-end shows only to clients that ask for them.

use std::sync::Arc;

use switchboard_characters::Character;
use switchboard_runtime::{Conversation, ConversationOptions, ToolEvent, ToolExecutor, TurnEvent};
use switchboard_tools::{Content, Message};
use switchboard_wire::{ChatRequest, StreamEvent};
use tokio::sync::mpsc;
use tracing::Instrument;

use super::Limits;
use super::output::{GatewayEvent, Output, Outputs, ToolSource};
use crate::error::ApiError;
use crate::tool_servers::{CharacterToolbox, ToolServers};
use crate::upstream::{PoolBackend, Route, SendOptions};

/// The route prefix that names a character.
pub const PREFIX: &str = "character/";

/// The model id a character is listed and authorized under: `character/<file stem>` (file
/// stems make ids without spaces; `character/<CHARACTER_NAME>` reaches the same character).
pub fn id(character: &Character) -> Option<String> {
    character
        .file()
        .file_stem()
        .map(|stem| format!("{PREFIX}{}", stem.to_string_lossy()))
}

/// Checks what a character route cannot take; returns the new user message and the history.
pub fn split_request(request: &ChatRequest) -> Result<(String, Vec<Message>), ApiError> {
    if !request.tools.is_empty() {
        return Err(ApiError::invalid_request(
            "character routes run the character's own tools; send the request without tools",
            Some("tools".into()),
        ));
    }
    match request.messages.split_last() {
        Some((Message::User { content, .. }, history)) => Ok((content.text(), history.to_vec())),
        _ => Err(ApiError::invalid_request(
            "the last message must be the user's message to the character",
            Some(format!(
                "messages[{}]",
                request.messages.len().saturating_sub(1)
            )),
        )),
    }
}

/// One turn asked of a character.
#[derive(Debug)]
pub struct Turn {
    /// The user's new message.
    pub text: String,
    pub history: Vec<Message>,
    /// Tokens the whole turn may take, tool rounds included: the client's `max_tokens`
    /// under the gateway's `character_max_tokens`.
    pub max_tokens: u32,
    pub limits: Limits,
}

/// Runs one turn with the character (its own tools and those of the MCP servers it
/// declares) and reports its words as outputs; `length` when the turn ran out of tokens.
pub fn start(
    character: Arc<Character>,
    route: Arc<Route>,
    tool_servers: &ToolServers,
    turn: Turn,
) -> Outputs {
    let servers = tool_servers.declared_by(&character);
    let Turn {
        text,
        history,
        max_tokens,
        limits,
    } = turn;
    let timeout = limits.timeout;
    let hard_stop = limits.hard_stop.clone();
    let (sender, receiver) = mpsc::unbounded_channel();
    let playing = async move {
        let turn = async {
            let session = character.start_conversation().await.map_err(|error| {
                ApiError::upstream(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    error.to_string(),
                    "character_failed",
                )
            })?;
            let prompt = session.system_prompt().to_owned();
            let _ = sender.send(Ok(Output::Gateway(GatewayEvent::SystemPrompt {
                content: prompt.clone(),
            })));
            let toolbox = Arc::new(CharacterToolbox::new(session, &servers));
            let tools: Arc<dyn ToolExecutor> = Arc::clone(&toolbox) as Arc<dyn ToolExecutor>;
            let history = history
                .into_iter()
                .filter(|message| !is_empty_assistant(message));
            let mut conversation = Conversation::new(
                Some(prompt),
                tools,
                Arc::new(PoolBackend {
                    pool: Arc::clone(&route.pool),
                    ask: SendOptions {
                        deadline: limits.deadline,
                        affinity: None,
                        trail: Arc::clone(&limits.trail),
                        fallback: false,
                    },
                }),
                route.model.clone(),
                ConversationOptions {
                    max_tokens: Some(max_tokens),
                    max_reply_bytes: limits.max_answer_bytes,
                    ..ConversationOptions::default()
                },
            )
            .with_history(history);
            let events = sender.clone();
            let mut forward = move |event: TurnEvent| {
                let output = match event {
                    TurnEvent::Text(text) => Output::Event(StreamEvent::TextDelta(text)),
                    TurnEvent::Reasoning(text) => Output::Event(StreamEvent::ReasoningDelta(text)),
                    TurnEvent::Tool(event) => {
                        if let ToolEvent::ToolStarted {
                            name, arguments, ..
                        } = &event
                        {
                            tracing::info!(character = %character.name(), tool = %name, %arguments, "character tool call");
                        }
                        let name = match &event {
                            ToolEvent::ToolStarted { name, .. }
                            | ToolEvent::ToolFinished { name, .. } => name,
                        };
                        let source = toolbox
                            .source(name)
                            .map(|(server, tool)| ToolSource { server, tool });
                        Output::Gateway(GatewayEvent::Tool { event, source })
                    }
                    TurnEvent::Round { .. } => return,
                };
                let _ = events.send(Ok(output));
            };
            let summary =
                conversation
                    .send(text, &mut forward)
                    .await
                    .map_err(|error| match error {
                        switchboard_runtime::TurnError::Backend(error) => ApiError::from(error),
                        switchboard_runtime::TurnError::TooLarge { limit } => {
                            ApiError::answer_too_large(format_args!(
                                "more than max_answer_bytes ({limit} bytes)"
                            ))
                        }
                        other => ApiError::upstream(
                            axum::http::StatusCode::BAD_GATEWAY,
                            other.to_string(),
                            "backend_bad_answer",
                        ),
                    })?;
            let _ = sender.send(Ok(Output::Event(StreamEvent::Finish(
                summary.finish_reason,
            ))));
            let _ = sender.send(Ok(Output::Event(StreamEvent::Usage(summary.usage))));
            Ok::<(), ApiError>(())
        };
        tokio::select! {
            outcome = tokio::time::timeout(timeout, turn) => {
                let failure = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(error)) => Some(error),
                    Err(_) => Some(ApiError::request_timeout(timeout)),
                };
                if let Some(error) = failure {
                    let _ = sender.send(Err(error));
                }
            }
            () = sender.closed() => {}
            () = hard_stop.cancelled() => {
                let _ = sender.send(Err(ApiError::shutting_down()));
            }
        }
    };
    // Under the request's span, so that its backend attempts and tool executions are
    // children of it.
    tokio::spawn(playing.in_current_span());
    receiver
}

fn is_empty_assistant(message: &Message) -> bool {
    matches!(message, Message::Assistant { content, tool_calls, .. }
        if tool_calls.is_empty() && content.as_ref().is_none_or(|content| matches!(content, Content::Text(text) if text.is_empty())))
}
