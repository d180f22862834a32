//! The last stage every answer passes through, native or prompted: call ids in OpenAI's
//! shape, each call checked against the request's tools once it is complete, calls held
//! back until complete where a half-sent call could not be taken back, and a finish reason
//! that says `tool_calls` exactly when there are calls, or `length` when the answer was cut
//! (a call cut by the limit is an incomplete answer, not a tool call to act on).
//!
//! Under `reject` and `repair` a broken call is held back with every call after it until the
//! answer ends: only then is it known whether the length limit cut it (then it is reported,
//! as `report` does), and `repair` needs the whole answer to ask the model once more.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_tools::{ToolCall, Toolset};
use switchboard_wire::{FinishReason, StreamEvent, Usage};

use crate::error::PipelineError;
use crate::ids::CallIds;
use crate::output::Output;
use crate::tool_checks::{ToolCallProblem, check_call, recheck, rejection};
use switchboard_upstream::ToolCallPolicy;

/// A call on its way through.
#[derive(Debug)]
struct Pending {
    /// The index the client sees, for a call streamed as it arrives; a held call gets its
    /// index when it is released (calls are numbered 0, 1, … in the order the client sees
    /// them start).
    streamed: Option<usize>,
    call: ToolCall,
}

/// A complete call held back behind a broken one.
#[derive(Debug)]
struct HeldBack {
    call: ToolCall,
    problem: Option<ToolCallProblem>,
}

/// What `repair` needs to ask the model once more.
#[derive(Debug)]
pub struct Broken {
    /// Every call the model made in this answer, in its order.
    pub made: Vec<ToolCall>,
    /// The calls among them that break the request's tools.
    pub broken: Vec<ToolCall>,
    /// The good calls that were held back behind a broken one, released now.
    pub released: Vec<Output>,
}

/// The stage's state for one answer.
#[derive(Debug)]
pub struct Finisher {
    ids: CallIds,
    tools: Toolset,
    /// Tools the gateway runs itself: whatever runs a call checks it and answers a bad one
    /// with an `Error: …` result for the model, so the route's policy never applies to them.
    gateway_run: Arc<[String]>,
    policy: ToolCallPolicy,
    /// Hold each call until it ends (needed when a call may still be withdrawn or rejected).
    hold_calls: bool,
    /// Calls past this many are not returned (`parallel_tool_calls: false` on prompted routes).
    max_calls: Option<usize>,
    pending: BTreeMap<usize, Pending>,
    /// Calls started and not withdrawn, for `max_calls`.
    started: usize,
    /// Calls the client has seen start: the next call's index.
    sent: usize,
    /// Calls released so far, kept only when `repair` may need them for the model's history.
    released: Vec<ToolCall>,
    held_back: Vec<HeldBack>,
    /// Under `repair`, the broken calls a second try is asked to replace, and how many calls
    /// had been sent when it was asked: a second try without calls replaced nothing.
    unrepaired: Option<(Vec<ToolCall>, usize)>,
    problems: Vec<ToolCallProblem>,
    usage: Option<Usage>,
    reason: Option<FinishReason>,
}

impl Finisher {
    pub fn new(
        ids: CallIds,
        tools: Toolset,
        gateway_run: Arc<[String]>,
        policy: ToolCallPolicy,
        hold_calls: bool,
        max_calls: Option<usize>,
    ) -> Self {
        Self {
            ids,
            tools,
            gateway_run,
            policy,
            hold_calls: hold_calls || policy != ToolCallPolicy::Report,
            max_calls,
            pending: BTreeMap::new(),
            started: 0,
            sent: 0,
            released: Vec::new(),
            held_back: Vec::new(),
            unrepaired: None,
            problems: Vec::new(),
            usage: None,
            reason: None,
        }
    }

    /// Takes one event from the backend (indexes are the backend's); returns what can be
    /// sent on.
    pub fn push(&mut self, event: StreamEvent) -> Vec<Output> {
        let mut out = Vec::new();
        match event {
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.max_calls.is_some_and(|max| self.started >= max) {
                    return out;
                }
                self.started += 1;
                let id = self.ids.assign(&id);
                let streamed = (!self.hold_calls).then(|| {
                    let visible = self.sent;
                    self.sent += 1;
                    out.push(Output::Event(StreamEvent::ToolCallStart {
                        index: visible,
                        id: id.clone(),
                        name: name.clone(),
                    }));
                    visible
                });
                let call = ToolCall {
                    id,
                    name,
                    arguments: String::new(),
                };
                self.pending.insert(index, Pending { streamed, call });
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                if let Some(pending) = self.pending.get_mut(&index) {
                    pending.call.arguments.push_str(&delta);
                    if let Some(visible) = pending.streamed {
                        out.push(Output::Event(StreamEvent::ToolCallArguments {
                            index: visible,
                            delta,
                        }));
                    }
                }
            }
            StreamEvent::ToolCallEnd { index } => {
                if let Some(pending) = self.pending.remove(&index) {
                    self.end(pending, &mut out);
                }
            }
            // Both are held to the end: usage may follow the finish (Anthropic's order).
            StreamEvent::Usage(usage) => self.add_usage(usage),
            StreamEvent::Finish(reason) => self.reason = Some(reason),
            text @ (StreamEvent::TextDelta(_)
            | StreamEvent::ReasoningDelta(_)
            | StreamEvent::ReasoningSignature(_)) => out.push(Output::Event(text)),
        }
        out
    }

    /// The backend parses calls itself after all (a native route that was reading its text
    /// for calls): nothing can be withdrawn any more, so its calls stream as they come,
    /// unless the policy holds them anyway or a call read from text is still open.
    pub fn stream_calls(&mut self) {
        if self.policy == ToolCallPolicy::Report && self.pending.is_empty() {
            self.hold_calls = false;
        }
    }

    /// Drops a call the parser withdrew (its markup turned out malformed).
    pub fn withdraw(&mut self, index: usize) {
        if self.pending.remove(&index).is_some() {
            self.started -= 1;
        }
    }

    /// Under the `repair` policy, once the answer has ended: the calls that broke the
    /// request's tools, unless the length limit cut the answer (asking again under the same
    /// limit would be cut again). The finisher then takes the model's second try as the rest
    /// of this answer, and reports what is still wrong with it as `report` does; a second
    /// try without calls leaves the broken calls to be reported.
    pub fn take_broken(&mut self) -> Option<Broken> {
        if self.policy != ToolCallPolicy::Repair
            || self.held_back.is_empty()
            || self.reason == Some(FinishReason::Length)
        {
            return None;
        }
        self.policy = ToolCallPolicy::Report;
        self.reason = None;
        let mut made = std::mem::take(&mut self.released);
        let mut broken = Vec::new();
        let mut released = Vec::new();
        for held in std::mem::take(&mut self.held_back) {
            made.push(held.call.clone());
            match held.problem {
                Some(_) => broken.push(held.call),
                None => self.release(held.call, None, &mut released),
            }
        }
        self.unrepaired = Some((broken.clone(), self.sent));
        Some(Broken {
            made,
            broken,
            released,
        })
    }

    /// Ends the answer: calls still open are complete now, then problems, the finish and
    /// the usage. The finish reason is the backend's, corrected to agree with the calls.
    /// Under `reject` a broken call makes the answer an error, unless the limit cut it.
    pub fn finish(&mut self) -> Result<Vec<Output>, PipelineError> {
        let mut out = Vec::new();
        for (_, pending) in std::mem::take(&mut self.pending) {
            self.end(pending, &mut out);
        }
        let reason = self.reason.take().unwrap_or(FinishReason::Stop);
        if self.policy == ToolCallPolicy::Reject && reason != FinishReason::Length {
            let problems: Vec<ToolCallProblem> = self
                .held_back
                .iter()
                .filter_map(|held| held.problem.clone())
                .collect();
            if let Some(error) = rejection(&problems) {
                return Err(error);
            }
        }
        for held in std::mem::take(&mut self.held_back) {
            self.release(held.call, held.problem, &mut out);
        }
        if let Some((broken, sent)) = self.unrepaired.take()
            && self.sent == sent
        {
            // The second try made no call: the broken ones are what the model asked for,
            // reported as `report` does.
            for call in broken {
                let problem = recheck(self.sent, &call, &self.tools);
                self.release(call, problem, &mut out);
            }
        }
        if !self.problems.is_empty() {
            out.push(Output::CallProblems(std::mem::take(&mut self.problems)));
        }
        let reason = match reason {
            FinishReason::Length => FinishReason::Length,
            _ if self.sent > 0 => FinishReason::ToolCalls,
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

    /// Adds usage; an answer that took several requests (retries) costs their sum.
    pub fn add_usage(&mut self, usage: Usage) {
        // Counts come from backends: a hostile one must not overflow the sum.
        let total = self.usage.get_or_insert_with(Usage::default);
        *total = total.plus(usage);
    }

    fn end(&mut self, mut pending: Pending, out: &mut Vec<Output>) {
        if pending.call.arguments.trim().is_empty() {
            // A call without arguments still gets `{}`, so clients never parse an empty string.
            pending.call.arguments.push_str("{}");
            if let Some(index) = pending.streamed {
                out.push(Output::Event(StreamEvent::ToolCallArguments {
                    index,
                    delta: "{}".to_owned(),
                }));
            }
        }
        let Some(index) = pending.streamed else {
            // Held calls are numbered as they are released, and nothing is released while a
            // broken call is held back, so this is the index the call will have.
            let index = self.sent + self.held_back.len();
            let problem = self.check(index, &pending.call);
            let hold_back = !self.held_back.is_empty()
                || (problem.is_some() && self.policy != ToolCallPolicy::Report);
            if hold_back {
                self.held_back.push(HeldBack {
                    call: pending.call,
                    problem,
                });
            } else {
                self.release(pending.call, problem, out);
            }
            return;
        };
        let problem = self.check(index, &pending.call);
        self.problems.extend(problem);
        out.push(Output::Event(StreamEvent::ToolCallEnd { index }));
    }

    fn check(&self, index: usize, call: &ToolCall) -> Option<ToolCallProblem> {
        if self.gateway_run.contains(&call.name) {
            return None;
        }
        check_call(index, call, &self.tools)
    }

    /// Sends a held call whole: start, arguments, end.
    fn release(&mut self, call: ToolCall, problem: Option<ToolCallProblem>, out: &mut Vec<Output>) {
        let index = self.sent;
        self.sent += 1;
        out.push(Output::Event(StreamEvent::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        }));
        out.push(Output::Event(StreamEvent::ToolCallArguments {
            index,
            delta: call.arguments.clone(),
        }));
        out.push(Output::Event(StreamEvent::ToolCallEnd { index }));
        self.problems.extend(problem);
        if self.policy == ToolCallPolicy::Repair {
            self.released.push(call);
        }
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

    fn finisher(policy: ToolCallPolicy) -> Finisher {
        Finisher::new(
            CallIds::default(),
            tools(),
            Arc::default(),
            policy,
            false,
            None,
        )
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

    /// One call from the backend, with these arguments, at this backend index.
    fn call(index: usize, name: &str, arguments: &str) -> [StreamEvent; 3] {
        [
            StreamEvent::ToolCallStart {
                index,
                id: String::new(),
                name: name.into(),
            },
            StreamEvent::ToolCallArguments {
                index,
                delta: arguments.into(),
            },
            StreamEvent::ToolCallEnd { index },
        ]
    }

    fn push_all(
        finisher: &mut Finisher,
        events: impl IntoIterator<Item = StreamEvent>,
    ) -> Vec<Output> {
        events
            .into_iter()
            .flat_map(|event| finisher.push(event))
            .collect()
    }

    fn problems(outputs: &[Output]) -> Vec<(usize, &'static str)> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::CallProblems(found) => {
                    Some(found.iter().map(|problem| (problem.index, problem.code)))
                }
                Output::Event(_) | Output::Gateway(_) => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn a_call_without_arguments_gets_braces_and_the_finish_agrees() {
        let mut finisher = finisher(ToolCallPolicy::Report);
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
            out.extend(finisher.push(event));
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
        let mut finisher = finisher(ToolCallPolicy::Reject);
        let mut out = push_all(&mut finisher, call(0, "pong", "{}"));
        out.extend(push_all(&mut finisher, call(1, "ping", "{}")));
        out.extend(finisher.push(StreamEvent::Finish(FinishReason::ToolCalls)));
        assert!(out.is_empty(), "held until the answer ends: {out:?}");
        let error = finisher.finish().unwrap_err();
        assert!(
            matches!(
                error,
                PipelineError::BadAnswer {
                    code: "unknown_tool_call",
                    ..
                }
            ),
            "{error:?}"
        );
    }

    #[test]
    fn a_call_cut_by_the_length_limit_finishes_with_length_under_every_policy() {
        for policy in [
            ToolCallPolicy::Report,
            ToolCallPolicy::Reject,
            ToolCallPolicy::Repair,
        ] {
            let mut finisher = finisher(policy);
            let mut out = push_all(&mut finisher, call(0, "ping", "{\"host\": \"exa"));
            out.extend(finisher.push(StreamEvent::Finish(FinishReason::Length)));
            assert!(
                finisher.take_broken().is_none(),
                "{policy:?}: no retry under the same limit"
            );
            out.extend(finisher.finish().unwrap());
            let events = events(&out);
            assert!(
                events.contains(&StreamEvent::ToolCallArguments {
                    index: 0,
                    delta: "{\"host\": \"exa".into()
                }),
                "{policy:?}: the call is passed on unchanged: {events:?}"
            );
            assert_eq!(
                events[events.len() - 2],
                StreamEvent::Finish(FinishReason::Length),
                "{policy:?}"
            );
            assert_eq!(
                problems(&out),
                [(0, "malformed_tool_arguments")],
                "{policy:?}"
            );
        }
    }

    #[test]
    fn repair_holds_a_broken_call_and_the_calls_behind_it_and_takes_the_second_try() {
        let mut finisher = finisher(ToolCallPolicy::Repair);
        let mut out = push_all(&mut finisher, call(0, "ping", "{}"));
        assert_eq!(events(&out).len(), 3, "a good call goes out when complete");
        out.extend(push_all(&mut finisher, call(1, "ping", "[1]")));
        out.extend(push_all(&mut finisher, call(2, "ping", "{\"n\": 2}")));
        out.extend(finisher.push(StreamEvent::Usage(Usage::new(10, 5))));
        out.extend(finisher.push(StreamEvent::Finish(FinishReason::ToolCalls)));
        assert_eq!(
            events(&out).len(),
            3,
            "held behind the broken call: {out:?}"
        );
        let broken = finisher.take_broken().unwrap();
        let arguments = |calls: &[ToolCall]| {
            calls
                .iter()
                .map(|call| call.arguments.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(arguments(&broken.made), ["{}", "[1]", "{\"n\": 2}"]);
        assert_eq!(arguments(&broken.broken), ["[1]"]);
        assert_eq!(
            events(&broken.released)[0],
            StreamEvent::ToolCallStart {
                index: 1,
                id: broken.made[2].id.clone(),
                name: "ping".into()
            },
            "the good call behind it takes the next index"
        );
        // The second try: still broken now is reported, not retried again.
        let mut second = push_all(&mut finisher, call(0, "ping", "{\"n\": 1}"));
        second.extend(push_all(&mut finisher, call(1, "ping", "7")));
        second.extend(finisher.push(StreamEvent::Usage(Usage::new(12, 4))));
        second.extend(finisher.push(StreamEvent::Finish(FinishReason::ToolCalls)));
        assert!(finisher.take_broken().is_none());
        second.extend(finisher.finish().unwrap());
        let events = events(&second);
        assert!(
            matches!(&events[0], StreamEvent::ToolCallStart { index: 2, .. }),
            "{events:?}"
        );
        assert!(
            matches!(&events[3], StreamEvent::ToolCallStart { index: 3, .. }),
            "{events:?}"
        );
        assert_eq!(problems(&second), [(3, "malformed_tool_arguments")]);
        assert_eq!(
            events[events.len() - 2..],
            [
                StreamEvent::Finish(FinishReason::ToolCalls),
                StreamEvent::Usage(Usage::new(22, 9))
            ]
        );
    }

    #[test]
    fn a_second_try_without_calls_leaves_the_broken_call_reported() {
        let mut finisher = finisher(ToolCallPolicy::Repair);
        push_all(&mut finisher, call(0, "ping", "{}"));
        push_all(&mut finisher, call(1, "pong", "{}"));
        finisher.push(StreamEvent::Finish(FinishReason::ToolCalls));
        let broken = finisher.take_broken().unwrap();
        assert_eq!(broken.broken.len(), 1);
        let mut out = push_all(
            &mut finisher,
            [
                StreamEvent::TextDelta("I cannot.".into()),
                StreamEvent::Finish(FinishReason::Stop),
            ],
        );
        out.extend(finisher.finish().unwrap());
        let events = events(&out);
        assert!(
            matches!(&events[1], StreamEvent::ToolCallStart { index: 1, name, .. } if name == "pong"),
            "{events:?}"
        );
        assert_eq!(problems(&out), [(1, "unknown_tool_call")]);
        assert_eq!(events[4], StreamEvent::Finish(FinishReason::ToolCalls));
    }

    #[test]
    fn tool_calls_without_calls_is_stop() {
        let mut finisher = finisher(ToolCallPolicy::Report);
        assert!(
            finisher
                .push(StreamEvent::Finish(FinishReason::ToolCalls))
                .is_empty()
        );
        assert!(
            finisher
                .push(StreamEvent::Usage(Usage::new(3, 4)))
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
