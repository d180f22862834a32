//! One conversation with a character, and the single executor every tool call goes through:
//! unknown tool, argument validation, the sandboxed call under its deadline, the string
//! check, truncation, and the metrics and span of every outcome.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use switchboard_tools::{MAX_MESSAGE_CHARS, ToolCall, ToolResult, truncate_message};
use tokio::sync::oneshot;
use tracing::Instrument;
use tracing::field::Empty;

use crate::character::Character;
use crate::engine::{CallOutcome, Job, LogScope};
use crate::exception::Failure;
use crate::metrics::{self, UNKNOWN_TOOL_LABEL};

/// Why a conversation could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("character {character}: {reason}")]
    Start { character: String, reason: String },
    #[error("character {character}: its runtime has stopped")]
    Stopped { character: String },
}

/// Conversations start here, beside the session they make.
impl Character {
    /// Starts a conversation: one `new PromptGenerator(INSTRUCTIONS)` that keeps its state
    /// across turns, and the system prompt it makes now.
    pub async fn start_conversation(self: &Arc<Self>) -> Result<CharacterSession, SessionError> {
        let session = self.next_session.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        if !self.engine().send(Job::Start {
            session,
            scope: LogScope::current(),
            reply,
        }) {
            return Err(SessionError::Stopped {
                character: self.name().to_owned(),
            });
        }
        match answer.await {
            Ok(Ok(system_prompt)) => Ok(CharacterSession::new(
                Arc::clone(self),
                session,
                system_prompt,
            )),
            Ok(Err(reason)) => Err(SessionError::Start {
                character: self.name().to_owned(),
                reason,
            }),
            Err(_) => Err(SessionError::Stopped {
                character: self.name().to_owned(),
            }),
        }
    }

    /// Runs one tool call on a fresh conversation, through exactly the path a conversation's
    /// calls take (validation with defaults, sandbox, deadline, result schema, truncation,
    /// metrics and the `execute_tool` span). The one way a tool runs outside a
    /// conversation: the characters API, `switchboard call` and MCP clients all come here.
    pub async fn run_tool(self: &Arc<Self>, call: &ToolCall) -> Result<ToolResult, SessionError> {
        let session = self.start_conversation().await?;
        Ok(session.call_tool(call).await)
    }
}

/// A conversation's `PromptGenerator` instance, living in the character's runtime until
/// this is dropped.
#[derive(Debug)]
pub struct CharacterSession {
    character: Arc<Character>,
    id: u64,
    system_prompt: String,
}

/// An error result: the label it is counted under and the text the model reads.
type Refusal = (&'static str, String);

impl CharacterSession {
    pub(crate) fn new(character: Arc<Character>, id: u64, system_prompt: String) -> Self {
        Self {
            character,
            id,
            system_prompt,
        }
    }

    pub fn character(&self) -> &Arc<Character> {
        &self.character
    }

    /// The system prompt made when the conversation started.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Runs one tool call. Every failure becomes an `Error: …` result the model reads;
    /// nothing here panics or waits past the character's deadline for its own code.
    pub async fn call_tool(&self, call: &ToolCall) -> ToolResult {
        // The gateway exports spans of this target over OpenTelemetry when asked to
        // (`switchboard_server::traces::TARGET`); otherwise it is disabled where it stands,
        // and at `TRACE` level no log subscriber at its usual levels shows it.
        let span = tracing::trace_span!(
            target: "switchboard::otel",
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", call.name),
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
            switchboard.character = %self.character.name(),
            switchboard.tool.outcome = Empty,
            error.type = Empty,
        );
        let started = Instant::now();
        let outcome = self.execute(call).instrument(span.clone()).await;
        let tool_label = if self.character.tools().get(&call.name).is_some() {
            &call.name
        } else {
            UNKNOWN_TOOL_LABEL
        };
        let error_type = outcome.as_ref().err().map(|(error_type, _)| *error_type);
        if !span.is_disabled() {
            span.record("switchboard.tool.outcome", tool_outcome(error_type));
            if let Some(error_type) = error_type {
                span.record("error.type", error_type);
                span.record("otel.status_code", "error");
            }
        }
        metrics::tool_call(
            self.character.name(),
            tool_label,
            started.elapsed(),
            error_type,
        );
        let (content, is_error) = match outcome {
            Ok(content) => (content, false),
            Err((_, message)) => (message, true),
        };
        ToolResult {
            call_id: call.id.clone(),
            content,
            is_error,
        }
    }

    async fn execute(&self, call: &ToolCall) -> Result<String, Refusal> {
        let tools = self.character.tools();
        let arguments = tools
            .check_call(&call.name, &call.arguments)
            .map_err(|error| (error.kind(), error.to_string()))?;
        let arguments = serde_json::Value::Object(arguments).to_string();
        let (reply, answer) = oneshot::channel();
        let job = Job::Call {
            session: self.id,
            tool: call.name.clone(),
            arguments,
            scope: LogScope::current(),
            reply,
        };
        let outcome = if self.character.engine().send(job) {
            answer.await.ok()
        } else {
            None
        };
        let text = match outcome {
            Some(CallOutcome::Returned(text)) => text,
            Some(CallOutcome::NotAString(found)) => {
                return Err((
                    "bad_return",
                    format!("Error: Tool must return string, got {found}"),
                ));
            }
            Some(CallOutcome::Failed(failure)) => return Err(self.failure(failure)),
            Some(CallOutcome::NeverSettled) => {
                return Err((
                    "execution",
                    "Error: Tool returned a promise that never settles".to_owned(),
                ));
            }
            None => {
                return Err((
                    "execution",
                    "Error: InternalError - the character's runtime has stopped".to_owned(),
                ));
            }
        };
        if let Some(tool) = tools.get(&call.name) {
            tool.check_result(&serde_json::Value::String(text.clone()))
                .map_err(|error| (error.kind(), error.to_string()))?;
        }
        Ok(truncate_result(text))
    }

    fn failure(&self, failure: Failure) -> Refusal {
        match failure {
            Failure::TimedOut => (
                "timeout",
                format!(
                    "Error: Tool execution timed out (exceeded {}ms)",
                    self.character.tool_timeout().as_millis()
                ),
            ),
            Failure::OutOfMemory => (
                "out_of_memory",
                format!(
                    "Error: Tool ran out of memory (the character's limit is {} MiB)",
                    self.character.memory_limit() / (1024 * 1024)
                ),
            ),
            Failure::Threw { name, message, .. } => (
                "execution",
                truncate_message(format!("Error: {name} - {message}"), MAX_MESSAGE_CHARS),
            ),
        }
    }
}

impl Drop for CharacterSession {
    fn drop(&mut self) {
        // The engine may already be gone with the character; nothing is left to free then.
        let _ = self.character.engine().send(Job::End { session: self.id });
    }
}

/// A call's outcome as its span says it: `ok`, `timeout`, or `error` for every other failure.
fn tool_outcome(error_type: Option<&str>) -> &'static str {
    match error_type {
        None => "ok",
        Some("timeout") => "timeout",
        Some(_) => "error",
    }
}

/// Results longer than [`MAX_MESSAGE_CHARS`] are cut, with a marker the model can see.
fn truncate_result(text: String) -> String {
    let length = text.chars().count();
    if length <= MAX_MESSAGE_CHARS {
        return text;
    }
    format!(
        "{} [truncated: the result had {length} characters, at most {MAX_MESSAGE_CHARS} are shown]",
        truncate_message(text, MAX_MESSAGE_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_results_are_kept_and_long_ones_cut_with_a_marker() {
        assert_eq!(truncate_result("short".to_owned()), "short");
        let exact = "é".repeat(MAX_MESSAGE_CHARS);
        assert_eq!(truncate_result(exact.clone()), exact);
        let long = truncate_result("x".repeat(1500));
        assert!(long.starts_with(&"x".repeat(999)));
        assert!(
            long.ends_with("… [truncated: the result had 1500 characters, at most 1000 are shown]"),
            "{long}"
        );
    }
}
