//! The events of a streamed response. Each goes out as an SSE event whose `event:` line is
//! its `type`, with an increasing `sequence_number`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::items::{ContentPart, Item, TextPart};
use super::response::Response;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "response.created")]
    Created { response: Arc<Response> },
    #[serde(rename = "response.in_progress")]
    InProgress { response: Arc<Response> },
    #[serde(rename = "response.completed")]
    Completed { response: Arc<Response> },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Arc<Response> },
    #[serde(rename = "response.failed")]
    Failed { response: Arc<Response> },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded { output_index: usize, item: Item },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone { output_index: usize, item: Item },
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: ContentPart,
    },
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: ContentPart,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: TextPart,
    },
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: TextPart,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        delta: String,
    },
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        text: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        item_id: String,
        output_index: usize,
        name: String,
        arguments: String,
    },
    #[serde(rename = "response.custom_tool_call_input.delta")]
    CustomToolCallInputDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.custom_tool_call_input.done")]
    CustomToolCallInputDone {
        item_id: String,
        output_index: usize,
        input: String,
    },
    #[serde(rename = "response.mcp_list_tools.in_progress")]
    McpListToolsInProgress {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_list_tools.completed")]
    McpListToolsCompleted {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_list_tools.failed")]
    McpListToolsFailed {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call.in_progress")]
    McpCallInProgress {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.mcp_call_arguments.done")]
    McpCallArgumentsDone {
        item_id: String,
        output_index: usize,
        arguments: String,
    },
    #[serde(rename = "response.mcp_call.completed")]
    McpCallCompleted {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call.failed")]
    McpCallFailed {
        item_id: String,
        output_index: usize,
    },
}

impl Event {
    /// The event's `type`, for the SSE `event:` line.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Created { .. } => "response.created",
            Event::InProgress { .. } => "response.in_progress",
            Event::Completed { .. } => "response.completed",
            Event::Incomplete { .. } => "response.incomplete",
            Event::Failed { .. } => "response.failed",
            Event::OutputItemAdded { .. } => "response.output_item.added",
            Event::OutputItemDone { .. } => "response.output_item.done",
            Event::ContentPartAdded { .. } => "response.content_part.added",
            Event::ContentPartDone { .. } => "response.content_part.done",
            Event::OutputTextDelta { .. } => "response.output_text.delta",
            Event::OutputTextDone { .. } => "response.output_text.done",
            Event::McpListToolsInProgress { .. } => "response.mcp_list_tools.in_progress",
            Event::McpListToolsCompleted { .. } => "response.mcp_list_tools.completed",
            Event::McpListToolsFailed { .. } => "response.mcp_list_tools.failed",
            Event::McpCallInProgress { .. } => "response.mcp_call.in_progress",
            Event::McpCallArgumentsDelta { .. } => "response.mcp_call_arguments.delta",
            Event::McpCallArgumentsDone { .. } => "response.mcp_call_arguments.done",
            Event::McpCallCompleted { .. } => "response.mcp_call.completed",
            Event::McpCallFailed { .. } => "response.mcp_call.failed",
            Event::ReasoningSummaryPartAdded { .. } => "response.reasoning_summary_part.added",
            Event::ReasoningSummaryPartDone { .. } => "response.reasoning_summary_part.done",
            Event::ReasoningSummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            Event::ReasoningSummaryTextDone { .. } => "response.reasoning_summary_text.done",
            Event::FunctionCallArgumentsDelta { .. } => "response.function_call_arguments.delta",
            Event::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            Event::CustomToolCallInputDelta { .. } => "response.custom_tool_call_input.delta",
            Event::CustomToolCallInputDone { .. } => "response.custom_tool_call_input.done",
        }
    }
}

/// An event with its place in the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequenced {
    #[serde(flatten)]
    pub event: Event,
    pub sequence_number: u64,
}

impl Sequenced {
    /// `event: TYPE\ndata: JSON\n\n`.
    pub fn sse(&self) -> String {
        sse(std::slice::from_ref(self))
    }
}

/// The events as SSE text: `event: TYPE\ndata: JSON\n\n` each.
pub fn sse(events: &[Sequenced]) -> String {
    let mut text = Vec::new();
    write_sse(events, &mut text);
    // serde_json writes UTF-8 only, and so does everything around it.
    String::from_utf8(text)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// [`sse`] appended to `out`. Each event's JSON is written straight into `out` with its
/// `sequence_number` spliced in, and a response object shared by consecutive lifecycle
/// events (`response.created`, `response.in_progress`) is serialised once and copied:
/// serde's `flatten`, intermediate strings and repeated serialisation would make this, the
/// hottest step of a streamed answer, several times dearer.
pub fn write_sse(events: &[Sequenced], out: &mut Vec<u8>) {
    // The response last written, and where its JSON lies in `out`.
    let mut shared: Option<(*const Response, std::ops::Range<usize>)> = None;
    for Sequenced {
        event,
        sequence_number,
    } in events
    {
        let kind = event.kind().as_bytes();
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind);
        out.extend_from_slice(b"\ndata: ");
        match event.response() {
            Some(response) => {
                out.extend_from_slice(b"{\"type\":\"");
                out.extend_from_slice(kind);
                out.extend_from_slice(b"\",\"response\":");
                let pointer = Arc::as_ptr(response);
                match &shared {
                    Some((last, written)) if *last == pointer => {
                        out.extend_from_within(written.clone());
                    }
                    _ => {
                        let begin = out.len();
                        write_json(out, response.as_ref());
                        shared = Some((pointer, begin..out.len()));
                    }
                }
            }
            None => {
                write_json(out, event);
                // The closing brace is written after the sequence number.
                if out.last() == Some(&b'}') {
                    out.pop();
                }
            }
        }
        out.extend_from_slice(b",\"sequence_number\":");
        out.extend_from_slice(sequence_number.to_string().as_bytes());
        out.extend_from_slice(b"}\n\n");
    }
}

/// Serialising our own plain types into memory cannot fail; an empty object keeps the
/// stream valid.
fn write_json(out: &mut Vec<u8>, value: &impl Serialize) {
    let begin = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(begin);
        out.extend_from_slice(b"{}");
    }
}

impl Event {
    /// The response a lifecycle event carries.
    fn response(&self) -> Option<&Arc<Response>> {
        match self {
            Event::Created { response }
            | Event::InProgress { response }
            | Event::Completed { response }
            | Event::Incomplete { response }
            | Event::Failed { response } => Some(response),
            _ => None,
        }
    }
}
