//! The last stage every answer passes through, native or prompted: call ids in OpenAI's
//! shape, each call checked against the request's tools once it is complete, calls held
//! back until complete where a half-sent call could not be taken back, and a finish reason
//! that says `tool_calls` exactly when there are calls.

use std::collections::BTreeMap;

use switchboard_tools::{ToolCall, Toolset};
use switchboard_wire::{FinishReason, StreamEvent, Usage};

use super::character::CharacterEvent;
use super::tool_checks::{ToolCallProblem, check_call, rejection};
use crate::config::ToolCallPolicy;
use crate::error::ApiError;
use crate::ids::CallIds;

/// What the pipeline hands the responder.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Event(StreamEvent),
    /// Problems with the model's calls; sent just before the finish.
    Problems(Vec<ToolCallProblem>),
    /// What a character did besides speaking (its prompt, its own tool calls); front-ends
    /// show it only to clients that ask.
    Character(CharacterEvent),
}

/// A call on its way through.
#[derive(Debug)]
struct Pending {
    /// The index the client sees (calls are numbered 0, 1, … in the order they start).
    index: usize,
    call: ToolCall,
    held: Vec<StreamEvent>,
}

/// The stage's state for one answer.
#[derive(Debug)]
pub struct Finisher {
    ids: CallIds,
    tools: Toolset,
    policy: ToolCallPolicy,
    /// Hold each call until it ends (needed when a call may still be withdrawn or rejected).
    hold_calls: bool,
    /// Calls past this many are not returned (`parallel_tool_calls: false` on prompted routes).
    max_calls: Option<usize>,
    pending: BTreeMap<usize, Pending>,
    started: usize,
    ended: usize,
    problems: Vec<ToolCallProblem>,
    usage: Option<Usage>,
    reason: Option<FinishReason>,
}

impl Finisher {
    pub fn new(
        ids: CallIds,
        tools: Toolset,
        policy: ToolCallPolicy,
        prompted: bool,
        max_calls: Option<usize>,
    ) -> Self {
        Self {
            ids,
            tools,
            policy,
            hold_calls: prompted || policy == ToolCallPolicy::Reject,
            max_calls,
            pending: BTreeMap::new(),
            started: 0,
            ended: 0,
            problems: Vec::new(),
            usage: None,
            reason: None,
        }
    }

    /// Takes one event from the backend (indexes are the backend's); returns what can be
    /// sent on. Under the `reject` policy a bad call ends the answer with an error.
    pub fn push(&mut self, event: StreamEvent) -> Result<Vec<Output>, ApiError> {
        let mut out = Vec::new();
        match event {
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.max_calls.is_some_and(|max| self.started >= max) {
                    return Ok(out);
                }
                let visible = self.started;
                self.started += 1;
                let id = self.ids.assign(&id);
                let start = StreamEvent::ToolCallStart {
                    index: visible,
                    id: id.clone(),
                    name: name.clone(),
                };
                let mut pending = Pending {
                    index: visible,
                    call: ToolCall {
                        id,
                        name,
                        arguments: String::new(),
                    },
                    held: Vec::new(),
                };
                self.emit(&mut pending, start, &mut out);
                self.pending.insert(index, pending);
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                if let Some(mut pending) = self.pending.remove(&index) {
                    pending.call.arguments.push_str(&delta);
                    let visible = pending.index;
                    self.emit(
                        &mut pending,
                        StreamEvent::ToolCallArguments {
                            index: visible,
                            delta,
                        },
                        &mut out,
                    );
                    self.pending.insert(index, pending);
                }
            }
            StreamEvent::ToolCallEnd { index } => {
                if let Some(pending) = self.pending.remove(&index) {
                    self.end(pending, &mut out)?;
                }
            }
            // Both are held to the end: usage may follow the finish (Anthropic's order).
            StreamEvent::Usage(usage) => self.add_usage(usage),
            StreamEvent::Finish(reason) => self.reason = Some(reason),
            text @ (StreamEvent::TextDelta(_) | StreamEvent::ReasoningDelta(_)) => {
                out.push(Output::Event(text))
            }
        }
        Ok(out)
    }

    /// Drops a call the parser withdrew (its markup turned out malformed).
    pub fn withdraw(&mut self, index: usize) {
        if self.pending.remove(&index).is_some() {
            self.started -= 1;
        }
    }

    /// Ends the answer: calls still open are complete now, then problems, the finish and
    /// the usage. The finish reason is the backend's, corrected to agree with the calls.
    pub fn finish(&mut self) -> Result<Vec<Output>, ApiError> {
        let mut out = Vec::new();
        for (_, pending) in std::mem::take(&mut self.pending) {
            self.end(pending, &mut out)?;
        }
        if !self.problems.is_empty() {
            out.push(Output::Problems(std::mem::take(&mut self.problems)));
        }
        let reason = match self.reason.take().unwrap_or(FinishReason::Stop) {
            _ if self.ended > 0 => FinishReason::ToolCalls,
            FinishReason::ToolCalls => FinishReason::Stop,
            other => other,
        };
        out.push(Output::Event(StreamEvent::Finish(reason)));
        // Always a usage, zero when the backend reported none: the whole body always has
        // one, so a stream asked for `include_usage` must have one too.
        let usage = self.usage.take().unwrap_or_default();
        out.push(Output::Event(StreamEvent::Usage(usage)));
        Ok(out)
    }

    /// Usage of this answer so far.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Adds usage; an answer that took several requests (prompted retries) costs their sum.
    pub fn add_usage(&mut self, usage: Usage) {
        let total = self.usage.get_or_insert_with(Usage::default);
        *total = Usage::new(
            total.prompt_tokens + usage.prompt_tokens,
            total.completion_tokens + usage.completion_tokens,
        );
    }

    fn emit(&self, pending: &mut Pending, event: StreamEvent, out: &mut Vec<Output>) {
        if self.hold_calls {
            pending.held.push(event);
        } else {
            out.push(Output::Event(event));
        }
    }

    fn end(&mut self, mut pending: Pending, out: &mut Vec<Output>) -> Result<(), ApiError> {
        if pending.call.arguments.trim().is_empty() {
            // A call without arguments still gets `{}`, so clients never parse an empty string.
            let delta = "{}".to_owned();
            pending.call.arguments.push_str(&delta);
            let index = pending.index;
            self.emit(
                &mut pending,
                StreamEvent::ToolCallArguments { index, delta },
                out,
            );
        }
        if let Some(problem) = check_call(pending.index, &pending.call, &self.tools) {
            if self.policy == ToolCallPolicy::Reject {
                return Err(rejection(std::slice::from_ref(&problem))
                    .unwrap_or_else(|| ApiError::invalid_request(problem.message.clone(), None)));
            }
            self.problems.push(problem);
        }
        out.extend(pending.held.drain(..).map(Output::Event));
        out.push(Output::Event(StreamEvent::ToolCallEnd {
            index: pending.index,
        }));
        self.ended += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_tools::Profile;

    fn tools() -> Toolset {
        Toolset::from_json(
            &json!([{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]),
            &Profile::api(),
        )
        .unwrap()
    }

    fn events(outputs: &[Output]) -> Vec<StreamEvent> {
        outputs
            .iter()
            .filter_map(|output| {
                if let Output::Event(event) = output {
                    Some(event.clone())
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn a_call_without_arguments_gets_braces_and_the_finish_agrees() {
        let mut finisher = Finisher::new(
            CallIds::default(),
            tools(),
            ToolCallPolicy::Report,
            false,
            None,
        );
        let mut out = Vec::new();
        for event in [
            StreamEvent::ToolCallStart {
                index: 3,
                id: String::new(),
                name: "ping".into(),
            },
            StreamEvent::ToolCallEnd { index: 3 },
            StreamEvent::Finish(FinishReason::Stop),
        ] {
            out.extend(finisher.push(event).unwrap());
        }
        out.extend(finisher.finish().unwrap());
        let events = events(&out);
        assert!(
            matches!(&events[0], StreamEvent::ToolCallStart { index: 0, id, .. } if id.starts_with("call_"))
        );
        assert_eq!(
            events[1],
            StreamEvent::ToolCallArguments {
                index: 0,
                delta: "{}".into()
            }
        );
        assert_eq!(events[3], StreamEvent::Finish(FinishReason::ToolCalls));
    }

    #[test]
    fn reject_policy_turns_a_bad_call_into_an_error_before_it_is_sent() {
        let mut finisher = Finisher::new(
            CallIds::default(),
            tools(),
            ToolCallPolicy::Reject,
            false,
            None,
        );
        let start = finisher
            .push(StreamEvent::ToolCallStart {
                index: 0,
                id: String::new(),
                name: "pong".into(),
            })
            .unwrap();
        assert!(start.is_empty(), "held until complete");
        let error = finisher
            .push(StreamEvent::ToolCallEnd { index: 0 })
            .unwrap_err();
        assert_eq!(error.code.as_deref(), Some("unknown_tool_call"));
    }

    #[test]
    fn tool_calls_without_calls_is_stop() {
        let mut finisher = Finisher::new(
            CallIds::default(),
            tools(),
            ToolCallPolicy::Report,
            false,
            None,
        );
        assert!(
            finisher
                .push(StreamEvent::Finish(FinishReason::ToolCalls))
                .unwrap()
                .is_empty()
        );
        assert!(
            finisher
                .push(StreamEvent::Usage(Usage::new(3, 4)))
                .unwrap()
                .is_empty()
        );
        let out = finisher.finish().unwrap();
        assert_eq!(
            events(&out),
            [
                StreamEvent::Finish(FinishReason::Stop),
                StreamEvent::Usage(Usage::new(3, 4))
            ]
        );
    }
}
