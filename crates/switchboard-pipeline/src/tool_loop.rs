//! The tool loop of a request whose tools the gateway runs (MCP servers the request or its
//! route names): the model answers; each call to a gateway-run tool runs as soon as it is
//! complete, concurrently with the rest of the answer, and its progress goes to the client
//! as [`GatewayEvent`]s while its result is appended to the conversation; then the model
//! answers again, until it stops calling them.
//!
//! Every round is an ordinary answer of the route (native or prompted, checked by the
//! finisher, with its retries), so nothing about tool calling differs inside the loop.
//! Calls to the client's own tools end the loop: they go back to the client as they always
//! do, after the round's gateway calls have run and shown their results. What bounds it:
//! the route's `max_tool_rounds` (and OpenAI's `max_tool_calls`), each server's call
//! deadline, the request's total tool time, each result's size (cut by the MCP client),
//! the bytes the rounds add to the conversation (`max_tool_conversation_bytes`), and the
//! client's `max_tokens` across all rounds. At a bound the answer ends cleanly with
//! [`FinishReason::ToolLimit`] or `Length`, never with a call that has no result. A round
//! runs at most `max_tool_calls_per_round` calls (the model reads an error for each past
//! it), at most `max_concurrent_tool_calls` of them at once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use switchboard_runtime::ToolEvent;
use switchboard_tools::{Message, ToolCall, ToolResult};
use switchboard_wire::{Collector, FinishReason, StreamEvent, ToolChoice, Usage};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::completion::{self, Completion, answer_or_fall_back};
use crate::error::PipelineError;
use crate::gateway_tools::{GatewayTool, GatewayTools, Runner};
use crate::output::{self, GatewayEvent, Output, Outputs, Sender, ToolSource, send};
use crate::tool_search;
use crate::tools::compile_converted;

/// Starts the answer: the request's rounds on a task of their own.
pub fn start(mut completion: Completion, tools: GatewayTools) -> Result<Outputs, PipelineError> {
    offer(&mut completion, &tools)?;
    let tools = Arc::new(tools);
    Ok(completion::spawn(completion, move |completion, sender| {
        Box::pin(run(completion, tools, sender))
    }))
}

/// Offers the model the client's tools and the gateway's alike; the finisher checks calls
/// to the client's, and leaves the gateway's to what runs them. Deferred tools are checked
/// against from the start but offered only once a search has found them.
pub fn offer(completion: &mut Completion, tools: &GatewayTools) -> Result<(), PipelineError> {
    let request = &mut completion.request;
    let offered = tools.offered_beside(&request.tools);
    let checked: Vec<_> = offered
        .iter()
        .chain(tools.search.iter().flat_map(|search| search.deferred()))
        .cloned()
        .collect();
    completion.tools = compile_converted("openai", &checked, || {
        serde_json::to_value(&checked).unwrap_or_default()
    })
    .map_err(|problems| {
        PipelineError::invalid(
            format!("the tools the gateway runs (an MCP server's or a character's) cannot be offered beside the request's: {problems}"),
            Some("tools".into()),
        )
    })?;
    request.tools = offered.into();
    completion.gateway_run = tools
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .chain(tools.search.as_ref().map(|search| search.name.clone()))
        .collect();
    Ok(())
}

/// Runs the request's rounds to the end of its answer; the tools must have been offered.
pub async fn run(
    completion: &mut Completion,
    tools: Arc<GatewayTools>,
    sender: &Sender,
) -> Result<(), PipelineError> {
    let deadline = Instant::now() + tools.max_tool_time;
    let asked_tokens = completion.request.max_tokens;
    let route = completion.route.name.clone();
    let mut usage: Option<Usage> = None;
    let mut calls = 0;
    send(
        sender,
        tools
            .listings
            .iter()
            .map(|listing| Output::Gateway(GatewayEvent::ToolList(Arc::clone(listing))))
            .collect(),
    )
    .await?;
    // Calls run under the span the loop began in (the request's), where exported traces
    // show them beside the backend attempts: a round's span is for logs only, and a task
    // entered in it alone would lose the request as its exported parent.
    let calls_under = CallsUnder {
        sender,
        deadline,
        span: tracing::Span::current(),
        room: Arc::new(Room::new(tools.max_conversation_bytes)),
        permits: Arc::new(Semaphore::new(tools.max_concurrent_calls)),
    };
    let answered = answer_approvals(&tools, &calls_under).await;
    calls += answered.len();
    completion.request.messages.extend(answered);
    // Where the client offered no tools (deferred or not), every call is the gateway's to
    // answer.
    let client_offered = completion
        .request
        .tools
        .iter()
        .chain(tools.search.iter().flat_map(|search| search.deferred()))
        .any(|tool| {
            !completion
                .gateway_run
                .iter()
                .any(|name| name == tool.name())
        });
    let mut rounds = 0;
    let reason = loop {
        let spent = usage.map_or(0, |usage| usage.completion_tokens);
        if let Some(asked) = asked_tokens {
            let left = u64::from(asked).saturating_sub(spent);
            if left == 0 {
                break FinishReason::Length;
            }
            completion.request.max_tokens = Some(u32::try_from(left).unwrap_or(u32::MAX));
        }
        rounds += 1;
        let in_words = tools.answer_at_bound && rounds > tools.max_rounds;
        if in_words {
            let request = &mut completion.request;
            request.tools = Arc::default();
            request.tool_choice = None;
        }
        let budget = tools.max_calls.map(|max| max.saturating_sub(calls));
        let round = one_round(completion, &tools, &calls_under, budget, client_offered)
            .instrument(tracing::info_span!("tool_round", round = rounds))
            .await?;
        if let Some(round_usage) = round.usage {
            usage = Some(usage.map_or(round_usage, |total| total.plus(round_usage)));
        }
        calls += round.results.len();
        // The model's answer joins the conversation beside its results (charged as they
        // arrived) only while both fit.
        let answer_bytes = serde_json::to_vec(&round.message).map_or(0, |bytes| bytes.len());
        let fits = calls_under.room.take(answer_bytes) && !calls_under.room.is_full();
        let end = if round.client_calls {
            Some(FinishReason::ToolCalls)
        } else if round.awaiting_approval {
            Some(FinishReason::Stop)
        } else if round.results.is_empty() {
            Some(if round.limited {
                FinishReason::ToolLimit
            } else {
                round.finish.clone()
            })
        } else if round.finish == FinishReason::Length || !fits {
            Some(FinishReason::Length)
        } else if round.limited
            || in_words
            || (rounds >= tools.max_rounds && !tools.answer_at_bound)
            || tools.max_calls.is_some_and(|max| calls >= max)
        {
            Some(FinishReason::ToolLimit)
        } else {
            None
        };
        if let Some(reason) = end {
            break reason;
        }
        completion.request.messages.push(round.message);
        completion.request.messages.extend(
            round
                .results
                .into_iter()
                .map(|result| Message::tool(result.call_id, result.content)),
        );
        load_found(completion, &tools, &round.found);
        // A forced call is asked for once: later rounds let the model answer in words.
        if completion.request.tool_choice.is_some() {
            completion.request.tool_choice = Some(ToolChoice::Auto);
        }
    };
    metrics::histogram!("gateway_tool_rounds", "route" => route).record(rounds as f64);
    let mut end = vec![Output::Event(StreamEvent::Finish(reason))];
    end.extend(usage.map(|usage| Output::Event(StreamEvent::Usage(usage))));
    send(sender, end).await
}

/// Offers the tools a search found from the next round on, each once.
fn load_found(completion: &mut Completion, tools: &GatewayTools, found: &[String]) {
    let Some(search) = &tools.search else {
        return;
    };
    let request = &mut completion.request;
    let new: Vec<_> = found
        .iter()
        .filter(|name| {
            !request
                .tools
                .iter()
                .any(|tool| tool.name() == name.as_str())
        })
        .filter_map(|name| search.get(name))
        .cloned()
        .collect();
    if !new.is_empty() {
        let mut offered = request.tools.to_vec();
        offered.extend(new);
        request.tools = offered.into();
    }
}

/// Runs the calls the client approved (and answers those it refused) before the model's
/// first answer: the model asked for them in the answer that requested approval.
async fn answer_approvals(tools: &GatewayTools, calls_under: &CallsUnder<'_>) -> Vec<Message> {
    let mut running = Running::new(calls_under);
    for answer in &tools.approvals {
        let call = ToolCall {
            id: answer.id.clone(),
            name: answer.tool.clone(),
            arguments: answer.arguments.clone(),
        };
        match tools.find(&answer.label, &answer.tool) {
            Some(tool) if answer.approve => {
                running.start(call, tool.source.clone(), tool.runner.clone());
            }
            found => {
                let why = if found.is_none() {
                    format!(
                        "the MCP server {} offers no tool {} in this request",
                        answer.label, answer.tool
                    )
                } else {
                    match &answer.reason {
                        Some(reason) => format!("the user refused this call: {reason}"),
                        None => "the user refused this call".to_owned(),
                    }
                };
                let source = ToolSource {
                    server: answer.label.clone(),
                    tool: answer.tool.clone(),
                };
                running.refuse(call, Some(source), format!("Error: {why}"));
            }
        }
    }
    running
        .finish()
        .await
        .into_iter()
        .map(|result| Message::tool(result.call_id, result.content))
        .collect()
}

/// What one round did.
struct Round {
    /// The model's answer, as the conversation records it.
    message: Message,
    /// The gateway-run calls' results, in the order the model made the calls.
    results: Vec<ToolResult>,
    finish: FinishReason,
    usage: Option<Usage>,
    /// The model called the client's own tools too.
    client_calls: bool,
    /// Calls wait for the client's approval.
    awaiting_approval: bool,
    /// Calls past `max_tool_calls` were left out.
    limited: bool,
    /// The tools the round's searches found.
    found: Vec<String>,
}

/// One answer of the route, its gateway-run calls taken out of the stream and run.
async fn one_round(
    completion: &mut Completion,
    tools: &GatewayTools,
    calls_under: &CallsUnder<'_>,
    budget: Option<usize>,
    client_offered: bool,
) -> Result<Round, PipelineError> {
    let sender = calls_under.sender;
    let (round_sender, mut outputs) = output::channel();
    let mut taker = Taker {
        tools,
        client_offered,
        sender,
        collector: Collector::new(),
        receiving: BTreeSet::new(),
        client_indices: HashMap::new(),
        running: Running::new(calls_under),
        in_round: 0,
        finish: None,
        usage: None,
        budget,
        limited: false,
        awaiting_approval: false,
        found: Vec::new(),
    };
    let answering = async move {
        let answered = answer_or_fall_back(completion, &round_sender).await;
        drop(round_sender);
        answered
    };
    let taking = async {
        while let Some(output) = outputs.recv().await {
            taker.take(output?)?;
        }
        Ok::<_, PipelineError>(())
    };
    let (answered, taken) = tokio::join!(answering, taking);
    answered?;
    taken?;
    taker.finish().await
}

/// Takes one round's outputs: the gateway's calls out, the rest on to the client.
struct Taker<'a> {
    tools: &'a GatewayTools,
    /// The client offered tools of its own: calls to tools no one offered are its.
    client_offered: bool,
    sender: &'a Sender,
    /// The whole round, gateway calls included, for the conversation.
    collector: Collector,
    /// The indexes of the gateway-run calls being received (the collector has them).
    receiving: BTreeSet<usize>,
    /// The client's calls renumbered 0, 1, … as the client sees them.
    client_indices: HashMap<usize, usize>,
    running: Running<'a>,
    /// The round's gateway-run calls so far (`max_tool_calls_per_round`).
    in_round: usize,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Calls the request may still make (`max_tool_calls`).
    budget: Option<usize>,
    limited: bool,
    awaiting_approval: bool,
    /// The tools the round's searches found.
    found: Vec<String>,
}

impl Taker<'_> {
    fn take(&mut self, output: Output) -> Result<(), PipelineError> {
        let event = match output {
            Output::Event(event) => event,
            // The client hears only of its own calls' problems, by their numbers.
            Output::CallProblems(problems) => {
                let problems: Vec<_> = problems
                    .into_iter()
                    .filter_map(|mut problem| {
                        problem.index = *self.client_indices.get(&problem.index)?;
                        Some(problem)
                    })
                    .collect();
                if problems.is_empty() {
                    return Ok(());
                }
                return pass(self.sender, Output::CallProblems(problems));
            }
            output => return pass(self.sender, output),
        };
        self.collector.push(&event);
        match event {
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.tools.runs(&name) || !self.client_offered {
                    self.receiving.insert(index);
                    return Ok(());
                }
                let client = self.client_indices.len();
                self.client_indices.insert(index, client);
                pass(
                    self.sender,
                    Output::Event(StreamEvent::ToolCallStart {
                        index: client,
                        id,
                        name,
                    }),
                )
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                if self.receiving.contains(&index) {
                    return Ok(());
                }
                let index = self.client_indices.get(&index).copied().unwrap_or(index);
                pass(
                    self.sender,
                    Output::Event(StreamEvent::ToolCallArguments { index, delta }),
                )
            }
            StreamEvent::ToolCallEnd { index } => {
                if self.receiving.remove(&index) {
                    self.ended(index);
                    return Ok(());
                }
                let index = self.client_indices.get(&index).copied().unwrap_or(index);
                pass(
                    self.sender,
                    Output::Event(StreamEvent::ToolCallEnd { index }),
                )
            }
            StreamEvent::Finish(reason) => {
                self.finish = Some(reason);
                Ok(())
            }
            StreamEvent::Usage(usage) => {
                self.usage = Some(usage);
                Ok(())
            }
            event => pass(self.sender, Output::Event(event)),
        }
    }

    /// A gateway-run call is complete: it runs, waits for approval, is left out past the
    /// request's call budget, or is answered with an error past the round's.
    fn ended(&mut self, index: usize) {
        let Some(call) = self.collector.call(index).cloned() else {
            return;
        };
        let tool = self.tools.get(&call.name);
        if let Some(left) = &mut self.budget {
            if *left == 0 {
                self.limited = true;
                return;
            }
            *left -= 1;
        }
        self.in_round += 1;
        let max = self.tools.max_calls_per_round;
        if self.in_round > max {
            // The model reads why, and may make the rest in its next round.
            let source = tool.and_then(|tool| tool.source.clone());
            self.running.refuse(
                call,
                source,
                format!(
                    "Error: this call was not run: the model made more than {max} calls in one answer (max_tool_calls_per_round); make at most {max} at a time"
                ),
            );
            return;
        }
        if let Some(search) = self
            .tools
            .search
            .as_ref()
            .filter(|search| search.name == call.name)
        {
            // A search runs at once, in the gateway: it is quick and reads only the request.
            let found = search.run(&call.arguments);
            let content = tool_search::result_text(&found);
            let found = found
                .map(|found| {
                    found
                        .iter()
                        .map(|tool| tool.name().to_owned())
                        .collect::<Vec<_>>()
                })
                .map_err(|error| error.to_string());
            if let Ok(names) = &found {
                self.found.extend(names.iter().cloned());
            }
            let _ = pass(
                self.sender,
                Output::Gateway(GatewayEvent::ToolSearch {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    found,
                }),
            );
            self.running.answer(call, content);
            return;
        }
        if let Some(GatewayTool {
            needs_approval: true,
            source: Some(source),
            ..
        }) = tool
        {
            self.awaiting_approval = true;
            let _ = pass(
                self.sender,
                Output::Gateway(GatewayEvent::ApprovalRequest {
                    id: call.id,
                    source: source.clone(),
                    arguments: call.arguments,
                }),
            );
            return;
        }
        match tool {
            Some(tool) => self
                .running
                .start(call, tool.source.clone(), tool.runner.clone()),
            None => self.running.start(call, None, self.tools.strays.clone()),
        }
    }

    async fn finish(mut self) -> Result<Round, PipelineError> {
        // Calls the stream never closed explicitly are complete once it is.
        for index in std::mem::take(&mut self.receiving) {
            self.ended(index);
        }
        let results = self.running.finish().await;
        let response = self.collector.finish().map_err(PipelineError::incomplete)?;
        Ok(Round {
            message: response.message(),
            results,
            finish: self.finish.unwrap_or(response.finish_reason),
            usage: self.usage,
            client_calls: !self.client_indices.is_empty(),
            awaiting_approval: self.awaiting_approval,
            limited: self.limited,
            found: self.found,
        })
    }
}

fn pass(sender: &Sender, output: Output) -> Result<(), PipelineError> {
    sender
        .send(Ok(output))
        .map_err(|_| PipelineError::ClientGone)
}

/// What every call of a request shares: where its events go, when the request's time for
/// tools ends, the span it runs under, the room left in the conversation and the turns to
/// run.
struct CallsUnder<'a> {
    sender: &'a Sender,
    deadline: Instant,
    span: tracing::Span,
    room: Arc<Room>,
    /// `max_concurrent_tool_calls` permits: a call runs holding one.
    permits: Arc<Semaphore>,
}

/// What is left of the bytes the rounds may add to the conversation
/// (`max_tool_conversation_bytes`): each result is charged as it arrives, before the client
/// or the model sees it, and the model's answers at each round's end. Once something did
/// not fit, the answer ends after its round.
struct Room {
    bound: usize,
    left: AtomicUsize,
    full: AtomicBool,
}

impl Room {
    fn new(bound: usize) -> Self {
        Self {
            bound,
            left: AtomicUsize::new(bound),
            full: AtomicBool::new(false),
        }
    }

    /// Takes `bytes` from what is left; `false`, and full from then on, when they do not
    /// fit.
    fn take(&self, bytes: usize) -> bool {
        let taken = self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(bytes)
            })
            .is_ok();
        if !taken {
            self.full.store(true, Ordering::SeqCst);
        }
        taken
    }

    fn is_full(&self) -> bool {
        self.full.load(Ordering::SeqCst)
    }

    /// `result` if it fits; else an error saying why it was left out, which is all the
    /// client and the model get of it.
    fn fit(&self, result: ToolResult) -> ToolResult {
        if self.take(result.content.len()) {
            return result;
        }
        ToolResult {
            content: format!(
                "Error: this result ({} bytes) was left out: this request's tool rounds reached max_tool_conversation_bytes ({} bytes)",
                result.content.len(),
                self.bound
            ),
            is_error: true,
            call_id: result.call_id,
        }
    }
}

/// Gateway-run calls under way, each reporting its start and its result to the client as
/// they happen; dropped, it stops them.
struct Running<'a> {
    sender: &'a Sender,
    deadline: Instant,
    span: tracing::Span,
    room: Arc<Room>,
    permits: Arc<Semaphore>,
    tasks: JoinSet<(usize, ToolResult)>,
    /// Each task's call, by order and id, for a result should the task fail.
    spawned: HashMap<tokio::task::Id, (usize, String)>,
    /// Results known without running (refusals), by order.
    known: Vec<(usize, ToolResult)>,
    started: usize,
}

impl<'a> Running<'a> {
    fn new(under: &CallsUnder<'a>) -> Self {
        Self {
            sender: under.sender,
            deadline: under.deadline,
            span: under.span.clone(),
            room: Arc::clone(&under.room),
            permits: Arc::clone(&under.permits),
            tasks: JoinSet::new(),
            spawned: HashMap::new(),
            known: Vec::new(),
            started: 0,
        }
    }

    fn start(&mut self, call: ToolCall, source: Option<ToolSource>, runner: Runner) {
        let order = self.next(&call, source.clone());
        let sender = self.sender.clone();
        let deadline = self.deadline;
        let room = Arc::clone(&self.room);
        let permits = Arc::clone(&self.permits);
        let call_id = call.id.clone();
        let running = async move {
            let started = Instant::now();
            // Waiting for a turn counts against the request's time for tools.
            let turn = async {
                let _permit = permits.acquire().await;
                runner.run(&call).await
            };
            let result = match tokio::time::timeout_at(deadline.into(), turn).await {
                Ok(result) => room.fit(result),
                Err(_) => {
                    let what = match &source {
                        Some(source) => format!("{} on {}", source.tool, source.server),
                        None => call.name.clone(),
                    };
                    ToolResult {
                        call_id: call.id.clone(),
                        content: format!(
                            "Error: the request's time for tools (max_tool_time_secs) ran out before {what} finished"
                        ),
                        is_error: true,
                    }
                }
            };
            report_finished(&sender, call, &result, source, started.elapsed());
            (order, result)
        };
        let task = self.tasks.spawn(running.instrument(self.span.clone()));
        self.spawned.insert(task.id(), (order, call_id));
    }

    /// A call the gateway answered itself at once (a tool search), reported as a call of
    /// its own tool.
    fn answer(&mut self, call: ToolCall, content: String) {
        let order = self.next(&call, None);
        let result = ToolResult {
            call_id: call.id.clone(),
            is_error: content.starts_with("Error"),
            content,
        };
        report_finished(self.sender, call, &result, None, Duration::ZERO);
        self.known.push((order, result));
    }

    /// A call answered without running it.
    fn refuse(&mut self, call: ToolCall, source: Option<ToolSource>, content: String) {
        let order = self.next(&call, source.clone());
        let result = ToolResult {
            call_id: call.id.clone(),
            content,
            is_error: true,
        };
        report_finished(self.sender, call, &result, source, Duration::ZERO);
        self.known.push((order, result));
    }

    fn next(&mut self, call: &ToolCall, source: Option<ToolSource>) -> usize {
        let _ = self.sender.send(Ok(Output::Gateway(GatewayEvent::Tool {
            event: ToolEvent::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
            source,
        })));
        self.started += 1;
        self.started - 1
    }

    /// Every result, in the order the calls were made.
    async fn finish(mut self) -> Vec<ToolResult> {
        let mut results = std::mem::take(&mut self.known);
        while let Some(done) = self.tasks.join_next_with_id().await {
            match done {
                Ok((_, done)) => results.push(done),
                // A call that panicked still answers its call: no call is left without a
                // result for the model.
                Err(error) => {
                    if let Some((order, call_id)) = self.spawned.remove(&error.id()) {
                        tracing::error!(%error, "a tool call's task failed");
                        results.push((
                            order,
                            ToolResult {
                                call_id,
                                content: "Error: the tool call failed inside the gateway".into(),
                                is_error: true,
                            },
                        ));
                    }
                }
            }
        }
        results.sort_by_key(|(order, _)| *order);
        results.into_iter().map(|(_, result)| result).collect()
    }
}

fn report_finished(
    sender: &Sender,
    call: ToolCall,
    result: &ToolResult,
    source: Option<ToolSource>,
    took: Duration,
) {
    let _ = sender.send(Ok(Output::Gateway(GatewayEvent::Tool {
        event: ToolEvent::ToolFinished {
            id: call.id,
            name: call.name,
            content: result.content.clone(),
            is_error: result.is_error,
            duration_ms: took.as_secs_f64() * 1000.0,
        },
        source,
    })));
}
