//! The tool loop: one user message in, a streamed reply out, with as many tool rounds as
//! the model needs up to a bound.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use switchboard_providers::{Backend, BackendError};
use switchboard_tools::{Message, ToolCall, ToolResult};
use switchboard_wire::{
    ChatRequest, CollectError, Collector, FinishReason, StreamEvent, ToolChoice,
};

use crate::events::{ToolEvent, TurnEvent};
use crate::executor::ToolExecutor;
use crate::history::History;
use crate::metrics::record_turn;
use crate::summary::TurnSummary;

/// Limits of a conversation.
#[derive(Debug, Clone)]
pub struct ConversationOptions {
    /// Tool rounds per user message; at the bound the next request goes without tools so
    /// the model must answer in words.
    pub max_tool_rounds: usize,
    /// Messages kept in history (oldest turns are dropped whole).
    pub max_history: usize,
    /// Tokens the model may write in one turn, across all its tool rounds: each request asks
    /// for what is left, and the turn ends with [`FinishReason::Length`] when nothing is.
    /// Counted from the usage the backend reports (a backend that reports none leaves every
    /// request the whole budget, so `max_tool_rounds` still bounds the turn).
    pub max_tokens: Option<u32>,
    /// Bytes of words, reasoning and tool calls one turn may receive from the model, over
    /// all its rounds: the reply is held whole, so a backend that never stops must not
    /// grow it without end.
    pub max_reply_bytes: usize,
}

impl Default for ConversationOptions {
    fn default() -> Self {
        Self {
            max_tool_rounds: 4,
            max_history: 100,
            max_tokens: None,
            max_reply_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Why a turn ended early. The conversation stays usable for the next message.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("the model's backend failed: {0}")]
    Backend(#[from] BackendError),
    #[error("the model's reply was incomplete: {0}")]
    Incomplete(#[from] CollectError),
    /// The reply passed `max_reply_bytes`; the backend request was closed.
    #[error("the model's reply passed the limit of {limit} bytes")]
    TooLarge { limit: usize },
}

/// A system prompt, tools, a backend, a model and the history between them.
pub struct Conversation {
    system_prompt: Option<String>,
    tools: Arc<dyn ToolExecutor>,
    backend: Arc<dyn Backend>,
    model: String,
    history: History,
    options: ConversationOptions,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("model", &self.model)
            .field("history", &self.history)
            .finish_non_exhaustive()
    }
}

impl Conversation {
    pub fn new(
        system_prompt: Option<String>,
        tools: Arc<dyn ToolExecutor>,
        backend: Arc<dyn Backend>,
        model: impl Into<String>,
        options: ConversationOptions,
    ) -> Self {
        let history = History::new(options.max_history);
        Self {
            system_prompt,
            tools,
            backend,
            model: model.into(),
            history,
            options,
        }
    }

    /// Continues from messages kept elsewhere (an API client sends the whole conversation
    /// with every request); the oldest turns beyond the bound are dropped.
    pub fn with_history(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        for message in messages {
            self.history.push(message);
        }
        self.history.trim();
        self
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }

    /// Sends one user message and runs the turn to its end, reporting each event to
    /// `on_event` as it happens.
    pub async fn send(
        &mut self,
        text: impl Into<String>,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnSummary, TurnError> {
        self.history.push(Message::user(text));
        let started = Instant::now();
        let mut summary = TurnSummary::default();
        let definitions: std::sync::Arc<[_]> = self.tools.definitions().into();
        let mut received = 0;
        let outcome = loop {
            let budget = self
                .options
                .max_tokens
                .map(|max| u64::from(max).saturating_sub(summary.usage.completion_tokens));
            if budget == Some(0) {
                summary.finish_reason = FinishReason::Length;
                break Ok(());
            }
            let with_tools =
                !definitions.is_empty() && summary.tool_rounds < self.options.max_tool_rounds;
            on_event(TurnEvent::Round {
                number: summary.tool_rounds + 1,
                with_tools,
            });
            // Every request respects the bound, not only the end of the turn.
            self.history.trim();
            let mut request = ChatRequest::new(self.model.clone(), self.messages());
            request.max_tokens = budget.map(|left| u32::try_from(left).unwrap_or(u32::MAX));
            if with_tools {
                request.tools = definitions.clone();
                request.tool_choice = Some(ToolChoice::Auto);
            }
            let round = match self
                .round(request, started, &mut summary, &mut received, on_event)
                .await
            {
                Ok(round) => round,
                Err(error) => break Err(error),
            };
            let has_calls = !round.calls.is_empty();
            self.history.push(Message::Assistant {
                content: (!round.text.is_empty()).then(|| round.text.clone().into()),
                reasoning_content: round.reasoning,
                reasoning_signature: round.signature,
                tool_calls: round.calls,
                name: None,
            });
            for result in round.results {
                self.history
                    .push(Message::tool(result.call_id, result.content));
            }
            summary.reply.push_str(&round.text);
            // A cut answer ends the turn even after calls: the limit is reached, and a call
            // cut short ran only to tell the model its arguments were incomplete.
            if !has_calls || round.finish == FinishReason::Length {
                summary.finish_reason = round.finish;
                break Ok(());
            }
            summary.tool_rounds += 1;
        };
        self.history.trim();
        record_turn(&summary, outcome.is_ok());
        outcome.map(|()| summary)
    }

    fn messages(&self) -> Vec<Message> {
        let system = self
            .system_prompt
            .iter()
            .map(|prompt| Message::system(prompt.clone()));
        system
            .chain(self.history.messages().iter().cloned())
            .collect()
    }

    /// One request to the model: streams its words out, runs each tool call as soon as it
    /// is complete, and returns the reply with the results in call order. `received` counts
    /// the turn's bytes so far against `max_reply_bytes`.
    async fn round(
        &self,
        request: ChatRequest,
        started: Instant,
        summary: &mut TurnSummary,
        received: &mut usize,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Round, TurnError> {
        let mut stream = self.backend.chat(request).await?;
        let mut collector = Collector::new();
        let mut running = FuturesUnordered::new();
        let mut results: HashMap<String, ToolResult> = HashMap::new();
        let mut text = String::new();

        loop {
            tokio::select! {
                event = stream.next() => {
                    let Some(event) = event else { break };
                    let event = event?;
                    *received += event.text_len();
                    if *received > self.options.max_reply_bytes {
                        return Err(TurnError::TooLarge { limit: self.options.max_reply_bytes });
                    }
                    collector.push(&event);
                    match event {
                        StreamEvent::TextDelta(delta) => {
                            summary.time_to_first_token.get_or_insert_with(|| started.elapsed());
                            text.push_str(&delta);
                            on_event(TurnEvent::Text(delta));
                        }
                        StreamEvent::ReasoningDelta(delta) => {
                            summary.time_to_first_token.get_or_insert_with(|| started.elapsed());
                            on_event(TurnEvent::Reasoning(delta));
                        }
                        StreamEvent::ToolCallEnd { index } => {
                            if let Some(call) = collector.ended_call(index) {
                                running.push(self.execute(call.clone(), on_event));
                            }
                        }
                        StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCallArguments { .. } => {}
                        StreamEvent::ReasoningSignature(_)
                        | StreamEvent::Usage(_)
                        | StreamEvent::Finish(_) => {}
                    }
                }
                Some((result, name, latency)) = running.next(), if !running.is_empty() => {
                    report_finished(&result, name, latency, on_event);
                    results.insert(result.call_id.clone(), result);
                }
            }
        }
        // Calls the stream never closed explicitly are complete once the stream is.
        let open: Vec<ToolCall> = collector.open_calls().cloned().collect();
        for call in open {
            running.push(self.execute(call, on_event));
        }
        while let Some((result, name, latency)) = running.next().await {
            report_finished(&result, name, latency, on_event);
            results.insert(result.call_id.clone(), result);
        }
        let response = collector.finish()?;
        if let Some(usage) = response.usage {
            summary.usage = summary.usage.plus(usage);
        }
        summary.tool_calls += response.tool_calls.len();
        // History takes the collected calls (their ids and arguments as the model sent them)
        // and the results in the same order.
        let results = response
            .tool_calls
            .iter()
            .filter_map(|call| results.remove(&call.id))
            .collect();
        Ok(Round {
            text,
            reasoning: response.reasoning_content,
            signature: response.reasoning_signature,
            calls: response.tool_calls,
            results,
            finish: response.finish_reason,
        })
    }

    fn execute(
        &self,
        call: ToolCall,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> futures::future::BoxFuture<'static, (ToolResult, String, Duration)> {
        on_event(TurnEvent::Tool(ToolEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        }));
        let tools = Arc::clone(&self.tools);
        async move {
            let started = Instant::now();
            let result = tools.call(&call).await;
            (result, call.name, started.elapsed())
        }
        .boxed()
    }
}

fn report_finished(
    result: &ToolResult,
    name: String,
    latency: Duration,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) {
    on_event(TurnEvent::Tool(ToolEvent::ToolFinished {
        id: result.call_id.clone(),
        name,
        content: result.content.clone(),
        is_error: result.is_error,
        duration_ms: latency.as_secs_f64() * 1000.0,
    }));
}

struct Round {
    text: String,
    reasoning: Option<String>,
    /// Kept with the reasoning so an Anthropic backend accepts the next round.
    signature: Option<String>,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    finish: FinishReason,
}
