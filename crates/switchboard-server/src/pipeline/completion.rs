//! One answer from a backend route, as a channel of outputs: the native path hands the
//! backend's events through the finisher; the prompted path parses the model's text first.
//! A streaming response and a whole one read the same channel, so they cannot disagree.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use futures::StreamExt;
use switchboard_parsers::{ToolRequirement, parser};
use switchboard_providers::BackendError;
use switchboard_tools::{Message, Toolset};
use switchboard_wire::{ChatRequest, StreamEvent};
use tokio::sync::mpsc;

use super::finisher::{Finisher, Output};
use super::prompted::{
    Parsed, from_parse_event, requirement, retry_messages, rewrite_messages, satisfies,
};
use crate::error::ApiError;
use crate::ids::CallIds;
use crate::upstream::Route;

pub type Outputs = mpsc::UnboundedReceiver<Result<Output, ApiError>>;
pub type Sender = mpsc::UnboundedSender<Result<Output, ApiError>>;

/// What one completion needs.
#[derive(Debug)]
pub struct Completion {
    pub route: Arc<Route>,
    /// The client's request, validated.
    pub request: ChatRequest,
    /// The request's tools, compiled, to check the model's calls.
    pub tools: Toolset,
    pub timeout: Duration,
}

/// Starts the answer. Dropping the receiver (the client went away) cancels the backend
/// request.
pub fn start(completion: Completion) -> Outputs {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let timeout = completion.timeout;
        let work = async {
            if let Err(error) = answer(&completion, &sender).await {
                let _ = sender.send(Err(error));
            }
        };
        tokio::select! {
            finished = tokio::time::timeout(timeout, work) => {
                if finished.is_err() {
                    let _ = sender.send(Err(ApiError::request_timeout(timeout)));
                }
            }
            () = sender.closed() => {}
        }
    });
    receiver
}

/// The backend's request: the client's, aimed at the route's model, with only the extra
/// fields the route forwards. Backends are always asked to stream: the answer arrives the
/// same either way, and a stream lets the client's stream start early.
fn backend_request(
    completion: &Completion,
    messages: Vec<Message>,
    with_tools: bool,
) -> ChatRequest {
    let route = &completion.route;
    let mut request = completion.request.clone();
    request.model = route.model.clone();
    request.messages = messages;
    request.stream = true;
    request
        .extra
        .retain(|field, _| route.forward_fields.contains(field));
    if !with_tools {
        request.tools = Vec::new();
        request.tool_choice = None;
        request.parallel_tool_calls = None;
    }
    request
}

fn call_ids(completion: &Completion) -> CallIds {
    CallIds::new(
        completion
            .request
            .messages
            .iter()
            .flat_map(|message| match message {
                Message::Assistant { tool_calls, .. } => {
                    tool_calls.iter().map(|call| call.id.clone()).collect()
                }
                Message::Tool { tool_call_id, .. } => vec![tool_call_id.clone()],
                _ => Vec::new(),
            }),
    )
}

pub async fn send(sender: &Sender, outputs: Vec<Output>) -> Result<(), ApiError> {
    for output in outputs {
        if sender.send(Ok(output)).is_err() {
            return Err(ApiError::invalid_request("the client went away", None));
        }
    }
    Ok(())
}

/// Both paths: native routes pass the backend's events through; prompted routes parse the
/// model's text first. `tool_choice: required` or a named function is enforced on both
/// (backends that ignore it exist): nothing reaches the client until a satisfying call
/// appears, one retry follows an answer without one, then an error.
async fn answer(completion: &Completion, sender: &Sender) -> Result<(), ApiError> {
    let request = &completion.request;
    let family = completion.route.prompted;
    let requirement =
        requirement(request.tool_choice.as_ref()).filter(|_| !request.tools.is_empty());
    let parallel = request.parallel_tool_calls != Some(false);
    let mut messages = match family {
        Some(family) => rewrite_messages(
            family,
            &request.messages,
            &request.tools,
            requirement.as_ref(),
            parallel,
        ),
        None => request.messages.clone(),
    };
    let enforced = requirement
        .clone()
        .filter(|requirement| *requirement != ToolRequirement::Auto);
    let attempts = if enforced.is_some() { 2 } else { 1 };
    let mut usage = None;
    for attempt in 1..=attempts {
        // Only prompted routes cap the calls themselves; native backends get the flag.
        let max_calls = (family.is_some() && !parallel).then_some(1);
        let mut finisher = Finisher::new(
            call_ids(completion),
            completion.tools.clone(),
            completion.route.policy,
            family.is_some(),
            max_calls,
        );
        if let Some(earlier) = usage {
            finisher.add_usage(earlier);
        }
        let mut gate = Gate {
            requirement: enforced.clone(),
            held: Vec::new(),
        };
        let mut parser = family
            .filter(|_| requirement.is_some())
            .map(|family| parser(family, &request.tools));
        let mut text = String::new();
        let mut events = completion
            .route
            .backend
            .chat(backend_request(
                completion,
                messages.clone(),
                family.is_none(),
            ))
            .await
            .map_err(backend_error)?;
        while let Some(event) = events.next().await {
            let outputs = match (event.map_err(backend_error)?, parser.as_mut()) {
                (StreamEvent::TextDelta(delta), Some(parser)) => {
                    text.push_str(&delta);
                    through(&mut finisher, parser.feed(&delta))?
                }
                (event, _) => finisher.push(event)?,
            };
            send(sender, gate.pass(outputs)).await?;
        }
        if let Some(parser) = parser.as_mut() {
            let outputs = through(&mut finisher, parser.finish())?;
            send(sender, gate.pass(outputs)).await?;
        }
        if gate.is_open() {
            return send(sender, finisher.finish()?).await;
        }
        usage = finisher.usage();
        if attempt < attempts
            && let Some(enforced) = &enforced
        {
            tracing::info!(route = %completion.route.name, "the model made no required tool call; asking once more");
            if let Some(family) = family {
                messages.extend(retry_messages(family, enforced, text));
            }
        }
    }
    let what = match &enforced {
        Some(ToolRequirement::Named(name)) => format!("a call to {name}"),
        _ => "a tool call".to_owned(),
    };
    Err(ApiError::upstream(
        StatusCode::BAD_GATEWAY,
        format!("tool_choice asked for {what}, and the model answered without one twice"),
        "tool_call_required",
    ))
}

/// Parser events through the finisher.
fn through(
    finisher: &mut Finisher,
    events: Vec<switchboard_parsers::ParseEvent>,
) -> Result<Vec<Output>, ApiError> {
    let mut outputs = Vec::new();
    for event in events {
        match from_parse_event(event) {
            Parsed::Event(event) => outputs.extend(finisher.push(event)?),
            Parsed::Withdraw { index, text } => {
                finisher.withdraw(index);
                outputs.extend(finisher.push(StreamEvent::TextDelta(text))?);
            }
        }
    }
    Ok(outputs)
}

/// Holds everything back until a call that satisfies `tool_choice` appears, so an answer
/// that will be retried never reaches the client.
struct Gate {
    requirement: Option<ToolRequirement>,
    held: Vec<Output>,
}

impl Gate {
    fn is_open(&self) -> bool {
        self.requirement.is_none()
    }

    fn pass(&mut self, outputs: Vec<Output>) -> Vec<Output> {
        let Some(requirement) = &self.requirement else {
            return outputs;
        };
        let opens = outputs.iter().position(|output| {
            matches!(output, Output::Event(StreamEvent::ToolCallStart { name, .. }) if satisfies(requirement, name))
        });
        self.held.extend(outputs);
        if opens.is_some() {
            self.requirement = None;
            std::mem::take(&mut self.held)
        } else {
            Vec::new()
        }
    }
}

/// A backend failure in OpenAI's error shape, with the status the provider layer chose.
pub fn backend_error(error: BackendError) -> ApiError {
    // A backend refusing the route's key tends to quote the key back (masked or not): that
    // text is the operator's business, never the client's.
    if let BackendError::Http {
        status: status @ (401 | 403),
        ..
    } = &error
    {
        return ApiError::upstream(
            StatusCode::BAD_GATEWAY,
            format!(
                "the backend refused the gateway's credentials for this route (HTTP {status}); the route's api_key_env needs attention"
            ),
            "backend_auth_failed",
        );
    }
    let code = match &error {
        BackendError::Http { status: 429, .. } => "rate_limited",
        BackendError::Http { .. } => "backend_error",
        BackendError::Connect { .. } => "backend_unreachable",
        BackendError::Timeout { .. } => "backend_timeout",
        BackendError::StreamCut { .. } => "backend_stream_cut",
        BackendError::Decode(_) | BackendError::Incomplete(_) => "backend_bad_answer",
        BackendError::Unsupported(_) => "unsupported_by_backend",
        BackendError::Config(_) => "backend_config",
    };
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_GATEWAY);
    ApiError::upstream(status, error.to_string(), code)
}
