//! One answer from a backend route, as a channel of outputs: the native path hands the
//! backend's events through the finisher (recovering calls written as text where the
//! route's markup family is known); the prompted path parses the model's text first.
//! A streaming response and a whole one read the same channel, so they cannot disagree.

use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use switchboard_parsers::{
    Family, Markup, ParseEvent, ToolCallParser, ToolRequirement, markup_parser,
};
use switchboard_tools::{Message, Toolset};
use switchboard_wire::{ChatRequest, Format, StreamEvent};
use tracing::Instrument;

use crate::error::PipelineError;
use crate::finisher::Finisher;
use crate::ids::{CallIdShape, CallIds};
use crate::output::{self, Output, Outputs, Sender, send};
use crate::prompted::{
    Parsed, from_parse_event, requirement, retry_messages as prompted_retry, rewrite_messages,
    satisfies,
};
use crate::repair::retry_messages;
use switchboard_upstream::ToolCallPolicy;
use switchboard_upstream::{PoolError, RetryReason, Route, SendOptions, UpstreamRecord};

/// What bounds one answer, from the configuration, and where it notes what its backends
/// did.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The whole request's deadline.
    pub timeout: std::time::Duration,
    /// When `timeout` runs out: no backend retry starts that would end after it.
    pub deadline: std::time::Instant,
    pub upstreams: Arc<UpstreamRecord>,
    /// Bytes of words, reasoning and calls the answer may receive from its backend.
    pub max_answer_bytes: usize,
    /// Cancelled when the gateway stops waiting for answers at shutdown.
    pub hard_stop: tokio_util::sync::CancellationToken,
}

/// What one completion needs.
#[derive(Debug)]
pub struct Completion {
    pub route: Arc<Route>,
    /// Tried in order when every replica of `route` failed before answering.
    pub fallbacks: Vec<Arc<Route>>,
    /// The client's request, validated.
    pub request: ChatRequest,
    /// The request's tools, compiled, to check the model's calls.
    pub tools: Toolset,
    pub call_ids: CallIdShape,
    pub limits: Limits,
    /// The names of the tools among `tools` the gateway runs itself (a tool loop's).
    pub gateway_run: Arc<[String]>,
    /// Bytes received from backends so far, over a tool loop's rounds: `max_answer_bytes`
    /// bounds the whole answer.
    pub received: usize,
}

/// Starts the answer. Dropping the receiver (the client went away) cancels the backend
/// request.
pub fn start(completion: Completion) -> Outputs {
    spawn(completion, |completion, sender| {
        Box::pin(answer_or_fall_back(completion, sender))
    })
}

/// Runs `work` for an answer on a task of its own, under the request's deadline and the
/// gateway's hard stop, its error the answer's last output; dropping the receiver (the
/// client went away) cancels it.
pub fn spawn(
    mut completion: Completion,
    work: impl for<'a> FnOnce(
        &'a mut Completion,
        &'a Sender,
    ) -> BoxFuture<'a, Result<(), PipelineError>>
    + Send
    + 'static,
) -> Outputs {
    let (sender, receiver) = output::channel();
    let answering = async move {
        let timeout = completion.limits.timeout;
        let hard_stop = completion.limits.hard_stop.clone();
        let work = async {
            if let Err(error) = work(&mut completion, &sender).await {
                let _ = sender.send(Err(error));
            }
        };
        tokio::select! {
            finished = tokio::time::timeout(timeout, work) => {
                if finished.is_err() {
                    let _ = sender.send(Err(PipelineError::Timeout(timeout)));
                }
            }
            () = sender.closed() => {}
            () = hard_stop.cancelled() => {
                let _ = sender.send(Err(PipelineError::ShuttingDown));
            }
        }
    };
    // Under the request's span, so that its backend attempts are children of it.
    tokio::spawn(answering.in_current_span());
    receiver
}

/// One answer of the route, or of its fallbacks in order when every replica of the route
/// failed before answering. The fallbacks are used up: a later answer of the same request
/// (a tool loop's next round) stays where this one was answered.
pub async fn answer_or_fall_back(
    completion: &mut Completion,
    sender: &Sender,
) -> Result<(), PipelineError> {
    let mut fallbacks = std::mem::take(&mut completion.fallbacks).into_iter();
    loop {
        let mut received = completion.received;
        let answered = answer(completion, sender, fallbacks.len() > 0, &mut received).await;
        completion.received = received;
        match answered {
            Ok(()) => return Ok(()),
            Err(Failure::Unanswered { error, reason }) => match fallbacks.next() {
                Some(fallback) => {
                    tracing::warn!(route = %completion.route.name, fallback = %fallback.name, reason = reason.label(), "every replica failed; falling back");
                    metrics::counter!("gateway_fallbacks_total", "route" => completion.route.name.clone(), "fallback" => fallback.name.clone(), "reason" => reason.label())
                        .increment(1);
                    completion.route = fallback;
                }
                None => return Err(error),
            },
            Err(Failure::Answered(error)) => return Err(error),
        }
    }
}

/// Fields of the OpenAI API that `ChatRequest` keeps in `extra`: forwarded to every
/// backend (the Anthropic and Ollama conversions translate them or drop them).
const OPENAI_FIELDS: &[&str] = &[
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "metadata",
    "service_tier",
];

/// The backend's request: the client's, aimed at the route's model, with the OpenAI API's
/// fields and the vendor extensions the route forwards. Backends are always asked to
/// stream: the answer arrives the same either way, and a stream lets the client's stream
/// start early.
pub fn backend_request(
    route: &Route,
    request: &ChatRequest,
    messages: Vec<Message>,
    with_tools: bool,
) -> ChatRequest {
    let mut request = request.clone();
    request.model = route.model.clone();
    request.messages = messages;
    request.stream = true;
    let forwarded = |field: &str| route.forward_fields.iter().any(|named| named == field);
    request
        .extra
        .retain(|field, _| OPENAI_FIELDS.contains(&field.as_str()) || forwarded(field));
    // `top_k` is native to Anthropic and Ollama, an extension OpenAI's own API refuses.
    if route.format == Format::OpenAi && !forwarded("top_k") {
        request.top_k = None;
    }
    if !with_tools {
        request.tools = Arc::default();
        request.tool_choice = None;
        request.parallel_tool_calls = None;
    }
    request
}

/// The conversation as the route's model sees it: on prompted routes, the tools in the
/// system prompt and past calls and results in the model's markup.
pub fn backend_messages(
    route: &Route,
    request: &ChatRequest,
    messages: &[Message],
    requirement: Option<&ToolRequirement>,
) -> Vec<Message> {
    match route.prompted {
        Some(family) => rewrite_messages(
            family,
            messages,
            &request.tools,
            requirement,
            request.parallel_tool_calls != Some(false),
        ),
        None => messages.to_vec(),
    }
}

/// What the request asks of the model's calls; `None` when it offers no tools.
pub fn tool_requirement(request: &ChatRequest) -> Option<ToolRequirement> {
    requirement(request.tool_choice.as_ref()).filter(|_| !request.tools.is_empty())
}

fn call_ids(completion: &Completion) -> CallIds {
    CallIds::new(
        completion.call_ids,
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

/// Why an answer failed.
enum Failure {
    /// Every replica failed before the answer began, in a way another route might not:
    /// nothing reached the client, so a fallback may answer instead.
    Unanswered {
        error: PipelineError,
        reason: RetryReason,
    },
    Answered(PipelineError),
}

impl From<PipelineError> for Failure {
    fn from(error: PipelineError) -> Self {
        Failure::Answered(error)
    }
}

/// Both paths: native routes pass the backend's events through; prompted routes parse the
/// model's text first. `tool_choice: required` or a named function is enforced on both
/// (backends that ignore it exist): nothing reaches the client until a satisfying call
/// appears, one retry follows an answer without one, then an error. Under the `repair`
/// policy an answer with a broken call is followed by one more request (see `repair`).
/// `fallback`: another route takes the request if this one fails before answering.
/// `received`: bytes of the answer received so far.
async fn answer(
    completion: &Completion,
    sender: &Sender,
    fallback: bool,
    received: &mut usize,
) -> Result<(), Failure> {
    let request = &completion.request;
    let route = &completion.route;
    let family = route.prompted;
    let requirement = tool_requirement(request);
    let parallel = request.parallel_tool_calls != Some(false);
    let rewrite = |messages: &[Message], requirement: Option<&ToolRequirement>| {
        backend_messages(route, request, messages, requirement)
    };
    let mut messages = rewrite(&request.messages, requirement.as_ref());
    // The markup read out of the model's text: the prompted family, or on a native route
    // the family whose calls are recovered from text. No tools asked for, nothing to read.
    let markup = family
        .map(Markup::Family)
        .or(route.recover)
        .filter(|_| requirement.is_some());
    let enforced = requirement
        .clone()
        .filter(|requirement| *requirement != ToolRequirement::Auto);
    let attempts = if enforced.is_some() { 2 } else { 1 };
    let mut usage = None;
    // `received` counts over every attempt: held calls, a gate's held outputs and the
    // prompted text all grow with the answer, and a whole answer is collected in full.
    for number in 1..=attempts {
        // Native backends get the flag; where we parse calls ourselves we cap them.
        let max_calls = (markup.is_some() && !parallel).then_some(1);
        let mut finisher = Finisher::new(
            call_ids(completion),
            completion.tools.clone(),
            Arc::clone(&completion.gateway_run),
            route.policy,
            markup.is_some(),
            max_calls,
        );
        if let Some(earlier) = usage {
            finisher.add_usage(earlier);
        }
        let mut attempt = Attempt {
            completion,
            sender,
            fallback,
            markup,
            finisher,
            gate: ChoiceGate {
                requirement: enforced.clone(),
                held: Vec::new(),
            },
            received: &mut *received,
        };
        // Only the first backend request of an answer can fail with nothing said yet.
        let first = number == 1;
        let words = attempt.stream(&messages, Shown::Everything, first).await?;
        if let Some(broken) = attempt.finisher.take_broken() {
            attempt.deliver(broken.released.clone()).await?;
            tracing::info!(route = %route.name, broken = broken.broken.len(), "the model's tool call breaks the request's tools; asking once more");
            let retry = retry_messages(words.shown, &broken, &completion.tools);
            let mut repaired = messages.clone();
            repaired.extend(rewrite(&retry, None));
            attempt.stream(&repaired, Shown::CallsOnly, false).await?;
        }
        if attempt.gate.is_open() {
            return Ok(send(sender, attempt.finisher.finish()?).await?);
        }
        usage = attempt.finisher.usage();
        if number < attempts
            && let Some(enforced) = &enforced
        {
            tracing::info!(route = %route.name, "the model made no required tool call; asking once more");
            if let Some(family) = family {
                messages.extend(prompted_retry(family, enforced, words.raw));
            }
        }
    }
    let what = match &enforced {
        Some(ToolRequirement::Named(name)) => format!("a call to {name}"),
        _ => "a tool call".to_owned(),
    };
    Err(PipelineError::BadAnswer {
        message: format!("tool_choice asked for {what}, and the model answered without one twice"),
        code: "tool_call_required",
    }
    .into())
}

/// Which of the model's words reach the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Everything,
    /// A second try's calls only: its words were said already, in the first answer.
    CallsOnly,
}

/// The text of one backend answer: as the model wrote it (kept for prompted routes, whose
/// retries show it to the model) and as the client saw it (kept for `repair`).
#[derive(Debug, Default)]
struct Words {
    raw: String,
    shown: String,
}

/// One attempt at the answer on its way to the client, over one or more backend requests
/// (a `repair` asks once more within it); `tool_choice` enforcement makes a second.
struct Attempt<'a> {
    completion: &'a Completion,
    sender: &'a Sender,
    /// Another route takes the request if this one fails before answering.
    fallback: bool,
    markup: Option<Markup>,
    finisher: Finisher,
    gate: ChoiceGate,
    /// Bytes of the answer received so far, bounded by `max_answer_bytes`.
    received: &'a mut usize,
}

impl Attempt<'_> {
    /// Sends one backend request and passes its answer through the parser (if any), the
    /// finisher and the gate to the client.
    /// `first`: no backend request of this answer was made before, so a failure of every
    /// replica leaves the answer to a fallback.
    async fn stream(
        &mut self,
        messages: &[Message],
        shown: Shown,
        first: bool,
    ) -> Result<Words, Failure> {
        let route = &self.completion.route;
        let native = route.prompted.is_none();
        // The text is read for calls while `reading`; its parser is made at the first text,
        // so an answer of native calls alone never builds one.
        let mut reading = self.markup;
        let mut parser: Option<Box<dyn ToolCallParser>> = None;
        let mut words = Words::default();
        let request = backend_request(
            &self.completion.route,
            &self.completion.request,
            messages.to_vec(),
            native,
        );
        let limits = &self.completion.limits;
        let ask = SendOptions {
            deadline: limits.deadline,
            affinity: route.pool.affinity(&request),
            upstreams: Arc::clone(&limits.upstreams),
            fallback: first && self.fallback,
        };
        let mut events = match route.pool.send(&request, &ask).await {
            Ok(events) => events,
            Err(PoolError::Exhausted { error, reason }) if first => {
                return Err(Failure::Unanswered {
                    error: PipelineError::from(error),
                    reason,
                });
            }
            Err(error) => return Err(PipelineError::from(error.into_backend_error()).into()),
        };
        while let Some(event) = events.next().await {
            let event = event.map_err(PipelineError::from)?;
            *self.received += event.text_len();
            let limit = self.completion.limits.max_answer_bytes;
            if *self.received > limit {
                return Err(PipelineError::AnswerTooLarge(format!(
                    "more than max_answer_bytes ({limit} bytes)"
                ))
                .into());
            }
            let mut outputs = Vec::new();
            if native
                && matches!(event, StreamEvent::ToolCallStart { .. })
                && reading.take().is_some()
            {
                // The backend parses calls itself after all: recovery stops, and what the
                // text held so far stands.
                if let Some(mut recovering) = parser.take() {
                    let events = recovering.finish();
                    outputs = self.through(events, recovering.as_ref());
                }
                self.finisher.stream_calls();
            }
            match (event, reading) {
                (StreamEvent::TextDelta(delta), Some(markup)) => {
                    if !native {
                        words.raw.push_str(&delta);
                    }
                    let parser = parser.get_or_insert_with(|| {
                        markup_parser(markup, Arc::clone(&self.completion.request.tools))
                    });
                    let parsed = parser.feed(&delta);
                    outputs.extend(self.through(parsed, parser.as_ref()));
                }
                (event, _) => outputs.extend(self.finisher.push(event)),
            }
            self.show(outputs, shown, &mut words).await?;
        }
        if let Some(parser) = parser.as_mut() {
            let events = parser.finish();
            let outputs = self.through(events, parser.as_ref());
            self.show(outputs, shown, &mut words).await?;
        }
        Ok(words)
    }

    async fn show(
        &mut self,
        mut outputs: Vec<Output>,
        shown: Shown,
        words: &mut Words,
    ) -> Result<(), PipelineError> {
        let repairing = self.completion.route.policy == ToolCallPolicy::Repair;
        outputs.retain(|output| match output {
            Output::Event(StreamEvent::TextDelta(text)) => {
                if repairing && shown == Shown::Everything {
                    words.shown.push_str(text);
                }
                shown == Shown::Everything
            }
            Output::Event(StreamEvent::ReasoningDelta(_)) => shown == Shown::Everything,
            _ => true,
        });
        self.deliver(outputs).await
    }

    async fn deliver(&mut self, outputs: Vec<Output>) -> Result<(), PipelineError> {
        send(self.sender, self.gate.pass(outputs)).await
    }

    /// Parser events through the finisher. On a native route each call the parser completes
    /// is one recovered from text, counted by the family whose markup it was in.
    fn through(&mut self, events: Vec<ParseEvent>, parser: &dyn ToolCallParser) -> Vec<Output> {
        let route = &self.completion.route;
        let mut outputs = Vec::new();
        for event in events {
            if route.prompted.is_none() && matches!(event, ParseEvent::ToolCallEnd { .. }) {
                let family = match self.markup {
                    Some(Markup::Family(family)) => Some(family),
                    _ => parser.family(),
                };
                metrics::counter!(
                    "gateway_recovered_tool_calls_total",
                    "route" => route.name.clone(),
                    "family" => family.map_or("unknown", Family::name)
                )
                .increment(1);
            }
            match from_parse_event(event) {
                Parsed::Event(event) => outputs.extend(self.finisher.push(event)),
                Parsed::Withdraw { index, text } => {
                    self.finisher.withdraw(index);
                    outputs.extend(self.finisher.push(StreamEvent::TextDelta(text)));
                }
            }
        }
        outputs
    }
}

/// Holds everything back until a call that satisfies `tool_choice` appears, so an answer
/// that will be retried never reaches the client.
struct ChoiceGate {
    requirement: Option<ToolRequirement>,
    held: Vec<Output>,
}

impl ChoiceGate {
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
