//! The tool call bookkeeping every decoder shares, so all three formats (and their
//! non-streaming bodies) normalise calls the same way: dense indices in order of
//! appearance, unique ids, a start only once the name is known, `{}` for a call without
//! arguments, and a finish reason that agrees with the calls actually made.

use crate::ids::{AnswerIds, IdSource};
use crate::{FinishReason, StreamEvent};

#[derive(Debug)]
struct Call {
    id: String,
    name: Option<String>,
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
    finished: bool,
}

impl Calls {
    pub(crate) fn new(ids: IdSource) -> Self {
        Self {
            ids: AnswerIds::new(ids),
            calls: Vec::new(),
            finished: false,
        }
    }

    /// Opens a new call and returns its index.
    pub(crate) fn open(
        &mut self,
        id: Option<&str>,
        name: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let index = self.calls.len();
        let id = self.ids.assign(id);
        self.calls.push(Call {
            id,
            name: None,
            held: String::new(),
            sent_arguments: false,
            ended: false,
        });
        if let Some(name) = name {
            self.name(index, name, out);
        }
        index
    }

    pub(crate) fn is_open(&self, index: usize) -> bool {
        self.calls.get(index).is_some_and(|call| !call.ended)
    }

    /// Gives a call its name, if it has none yet; later repeats of a name are ignored.
    pub(crate) fn name(&mut self, index: usize, name: &str, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        if call.name.is_some() || name.is_empty() {
            return;
        }
        call.name = Some(name.to_owned());
        out.push(StreamEvent::ToolCallStart {
            index,
            id: call.id.clone(),
            name: name.to_owned(),
        });
        let held = std::mem::take(&mut call.held);
        self.arguments(index, &held, out);
    }

    pub(crate) fn arguments(&mut self, index: usize, delta: &str, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.calls.get_mut(index) else {
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
        out.push(StreamEvent::ToolCallArguments { index, delta });
    }

    /// Ends a call; a call never named is an error the caller reports with its offset.
    pub(crate) fn close(&mut self, index: usize, out: &mut Vec<StreamEvent>) -> Result<(), String> {
        let Some(call) = self.calls.get_mut(index) else {
            return Err(format!("tool call {index} was never started"));
        };
        if call.ended {
            return Ok(());
        }
        if call.name.is_none() {
            return Err(format!(
                "tool call {index} (id {}) has no function name",
                call.id
            ));
        }
        if !call.sent_arguments {
            call.sent_arguments = true;
            out.push(StreamEvent::ToolCallArguments {
                index,
                delta: "{}".to_owned(),
            });
        }
        call.ended = true;
        out.push(StreamEvent::ToolCallEnd { index });
        Ok(())
    }

    /// Closes every open call, then emits the finish reason made to agree with the calls.
    pub(crate) fn finish(
        &mut self,
        reason: FinishReason,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), String> {
        for index in 0..self.calls.len() {
            self.close(index, out)?;
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
