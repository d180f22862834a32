//! A whole answer out of the pipeline's outputs: the same outputs a stream is rendered
//! from, folded by the wire crate's collector, so a whole answer and a streamed one cannot
//! disagree in any API.

use switchboard_wire::{ChatResponse, Collector};

use crate::error::PipelineError;
use crate::output::{GatewayEvent, Output, Outputs};
use crate::tool_checks::ToolCallProblem;

/// A complete answer, the problems found with its tool calls, and what a character did
/// besides speaking.
#[derive(Debug)]
pub struct Answer {
    pub response: ChatResponse,
    pub problems: Vec<ToolCallProblem>,
    pub gateway_events: Vec<GatewayEvent>,
}

/// Waits for the whole answer, showing each output to `observe` on the way (for an API
/// whose whole body depends on the order of the outputs, not only on the answer they add
/// up to); the first error ends it.
pub async fn collect_with(
    mut outputs: Outputs,
    mut observe: impl FnMut(&Output),
) -> Result<Answer, PipelineError> {
    let mut collector = Collector::new();
    let mut problems = Vec::new();
    let mut gateway_events = Vec::new();
    while let Some(output) = outputs.recv().await {
        let output = output?;
        observe(&output);
        match output {
            Output::Event(event) => collector.push(&event),
            Output::CallProblems(found) => problems.extend(found),
            Output::Gateway(event) => gateway_events.push(event),
        }
    }
    let response = collector.finish().map_err(PipelineError::incomplete)?;
    Ok(Answer {
        response,
        problems,
        gateway_events,
    })
}
