//! The tool call bookkeeping every decoder shares, so all three formats (and their
//! non-streaming bodies) normalise calls the same way: dense indices in order of
//! appearance, unique ids, a start only once the name is known, `{}` for a call without
//! arguments, and a finish reason that agrees with the calls actually made.
//!
//! Decoders address calls by slot, in the order the backend opened them; events carry the
//! index a call got when its start was emitted, so a call named late cannot start before
//! one named earlier.

use crate::ids::{AnswerIds, IdSource};
use crate::{FinishReason, StreamEvent};

#[derive(Debug)]
struct Call {
    id: String,
    name: Option<String>,
    /// The index its events carry, given when its start is emitted.
    index: usize,
    /// Arguments held back: before the start is emitted, or while only whitespace has
    /// arrived (so that an empty call can still become `{}`).
    held: String,
    sent_arguments: bool,
    ended: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Calls {
    ids: AnswerIds,
    calls: Vec<Call>,
    started: usize,
    finished: bool,
}

impl Calls {
    pub(crate) fn new(ids: IdSource) -> Self {
        Self {
            ids: AnswerIds::new(ids),
            calls: Vec::new(),
            started: 0,
            finished: false,
        }
    }

    /// Opens a new call and returns its slot.
    pub(crate) fn open(
        &mut self,
        id: Option<&str>,
        name: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let slot = self.calls.len();
        let id = self.ids.assign(id);
        self.calls.push(Call {
            id,
            name: None,
            index: 0,
            held: String::new(),
            sent_arguments: false,
            ended: false,
        });
        if let Some(name) = name {
            self.name(slot, name, out);
        }
        slot
    }

    pub(crate) fn is_open(&self, slot: usize) -> bool {
        self.calls.get(slot).is_some_and(|call| !call.ended)
    }

    /// Gives a call its name, if it has none yet; later repeats of a name are ignored.
    pub(crate) fn name(&mut self, slot: usize, name: &str, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(slot) else {
            return;
        };
        if call.name.is_some() || name.is_empty() {
            return;
        }
        call.name = Some(name.to_owned());
        call.index = self.started;
        self.started += 1;
        out.push(StreamEvent::ToolCallStart {
            index: call.index,
            id: call.id.clone(),
            name: name.to_owned(),
        });
        let held = std::mem::take(&mut call.held);
        self.arguments(slot, &held, out);
    }

    pub(crate) fn arguments(&mut self, slot: usize, delta: &str, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(slot) else {
            return;
        };
        if delta.is_empty() {
            return;
        }
        if call.name.is_none() || (!call.sent_arguments && delta.trim().is_empty()) {
            call.held.push_str(delta);
            return;
        }
        let delta = if call.sent_arguments {
            delta.to_owned()
        } else {
            std::mem::take(&mut call.held) + delta
        };
        call.sent_arguments = true;
        out.push(StreamEvent::ToolCallArguments {
            index: call.index,
            delta,
        });
    }

    /// Ends a call; a call never named is an error the caller reports with its offset.
    pub(crate) fn close(&mut self, slot: usize, out: &mut Vec<StreamEvent>) -> Result<(), String> {
        let Some(call) = self.calls.get_mut(slot) else {
            return Err(format!("tool call {slot} was never started"));
        };
        if call.ended {
            return Ok(());
        }
        if call.name.is_none() {
            return Err(format!(
                "tool call {slot} (id {}) has no function name",
                call.id
            ));
        }
        if !call.sent_arguments {
            call.sent_arguments = true;
            out.push(StreamEvent::ToolCallArguments {
                index: call.index,
                delta: "{}".to_owned(),
            });
        }
        call.ended = true;
        out.push(StreamEvent::ToolCallEnd { index: call.index });
        Ok(())
    }

    /// Closes every open call, then emits the finish reason made to agree with the calls.
    pub(crate) fn finish(
        &mut self,
        reason: FinishReason,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), String> {
        for slot in 0..self.calls.len() {
            self.close(slot, out)?;
        }
        self.finished = true;
        out.push(StreamEvent::Finish(
            reason.reconcile(!self.calls.is_empty()),
        ));
        Ok(())
    }

    pub(crate) fn finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StreamEvent::*;

    #[test]
    fn arguments_wait_for_the_name_and_empty_calls_get_braces() {
        let mut calls = Calls::new(IdSource::seeded(0));
        let mut out = Vec::new();
        let first = calls.open(Some("a"), None, &mut out);
        calls.arguments(first, "{\"x\":", &mut out);
        assert!(out.is_empty());
        calls.name(first, "f", &mut out);
        calls.arguments(first, "1}", &mut out);
        let second = calls.open(Some("a"), Some("g"), &mut out);
        calls.arguments(second, "  ", &mut out);
        calls.finish(FinishReason::Stop, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "f".into()
                },
                ToolCallArguments {
                    index: 0,
                    delta: "{\"x\":".into()
                },
                ToolCallArguments {
                    index: 0,
                    delta: "1}".into()
                },
                ToolCallStart {
                    index: 1,
                    id: "a_1".into(),
                    name: "g".into()
                },
                ToolCallEnd { index: 0 },
                ToolCallArguments {
                    index: 1,
                    delta: "{}".into()
                },
                ToolCallEnd { index: 1 },
                Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn a_call_named_late_starts_after_the_calls_named_before_it() {
        let mut calls = Calls::new(IdSource::seeded(0));
        let mut out = Vec::new();
        let first = calls.open(Some("a"), None, &mut out);
        calls.arguments(first, "{\"x\":1}", &mut out);
        let second = calls.open(Some("b"), Some("g"), &mut out);
        calls.name(first, "f", &mut out);
        calls.finish(FinishReason::Stop, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                ToolCallStart {
                    index: 0,
                    id: "b".into(),
                    name: "g".into()
                },
                ToolCallStart {
                    index: 1,
                    id: "a".into(),
                    name: "f".into()
                },
                ToolCallArguments {
                    index: 1,
                    delta: "{\"x\":1}".into()
                },
                ToolCallEnd { index: 1 },
                ToolCallArguments {
                    index: 0,
                    delta: "{}".into()
                },
                ToolCallEnd { index: 0 },
                Finish(FinishReason::ToolCalls),
            ]
        );
        assert_eq!(second, 1);
    }

    #[test]
    fn a_call_without_a_name_is_an_error() {
        let mut calls = Calls::new(IdSource::seeded(0));
        let mut out = Vec::new();
        calls.open(Some("a"), None, &mut out);
        assert!(
            calls
                .finish(FinishReason::ToolCalls, &mut out)
                .unwrap_err()
                .contains("no function name")
        );
    }
}
