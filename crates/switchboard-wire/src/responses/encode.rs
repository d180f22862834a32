//! Our stream events → the Responses API's events, building the response object as it
//! goes. A whole answer is the same encoder run over the same events, its final response
//! taken instead of its events, so a whole answer and a streamed one cannot disagree.
//!
//! Output items come in the order the model produced them: reasoning (as summary text), a
//! message, calls (`function_call`, or `custom_tool_call` and the other kinds the offered
//! tools map back to). Every item is announced by `response.output_item.added` and closed
//! by `response.output_item.done` carrying it whole; the stream ends with exactly one of
//! `response.completed`, `response.incomplete` (the length limit) or `response.failed`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::custom_input::InputStream;
use super::events::{Event, Sequenced};
use super::items::{ContentPart, Execution, Item, MessageContent, Role, TextPart};
use super::response::{IncompleteDetails, Response, ResponseError, Status};
use super::tools::CallKind;
use crate::ids::item_id;
use crate::{FinishReason, StreamEvent, Usage};

/// Turns one answer's events into Responses events.
#[derive(Debug)]
pub struct Encoder {
    /// Shared with the lifecycle events that carry it; written copy-on-write.
    response: Arc<Response>,
    kinds: HashMap<String, CallKind>,
    sequence: u64,
    started: bool,
    /// The message or reasoning item being written.
    open: Option<OpenText>,
    /// Calls being written, by their index in the event stream.
    calls: BTreeMap<usize, OpenCall>,
    /// MCP calls the server side is running: their item and output index, by call id.
    mcp_calls: HashMap<String, (usize, Item)>,
    usage: Option<Usage>,
    reason: Option<FinishReason>,
}

#[derive(Debug)]
struct OpenText {
    output_index: usize,
    id: String,
    reasoning: bool,
    text: String,
}

#[derive(Debug)]
struct OpenCall {
    output_index: usize,
    item_id: String,
    call_id: String,
    kind: CallKind,
    arguments: String,
    input: InputStream,
}

impl Encoder {
    /// `response` is the answer's skeleton: id, model, the request's settings echoed,
    /// no output yet. `kinds` maps the model-facing tool names back to what the client
    /// offered ([`super::OfferedTools::kinds`]).
    pub fn new(mut response: Response, kinds: HashMap<String, CallKind>) -> Self {
        response.status = Status::InProgress;
        response.output.clear();
        Self {
            response: Arc::new(response),
            kinds,
            sequence: 0,
            started: false,
            open: None,
            calls: BTreeMap::new(),
            mcp_calls: HashMap::new(),
            usage: None,
            reason: None,
        }
    }

    /// The response as it stands (the final one after [`Encoder::finish`]).
    pub fn response(&self) -> &Response {
        &self.response
    }

    pub fn into_response(self) -> Response {
        Arc::unwrap_or_clone(self.response)
    }

    /// Problems with the model's calls, reported on the response as `tool_call_errors`.
    pub fn set_tool_call_errors(&mut self, problems: Value) {
        Arc::make_mut(&mut self.response).tool_call_errors = Some(problems);
    }

    /// `response.created` and `response.in_progress`, once; every other method sends them
    /// first if they have not gone yet.
    pub fn start(&mut self) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        out
    }

    /// The events one stream event makes.
    pub fn event(&mut self, event: &StreamEvent) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        match event {
            StreamEvent::TextDelta(text) => self.text(text, false, &mut out),
            StreamEvent::ReasoningDelta(text) => self.text(text, true, &mut out),
            StreamEvent::ToolCallStart { index, id, name } => {
                self.close_text(&mut out);
                self.start_call(*index, id, name, &mut out);
            }
            StreamEvent::ToolCallArguments { index, delta } => {
                self.call_arguments(*index, delta, &mut out)
            }
            StreamEvent::ToolCallEnd { index } => {
                if let Some(call) = self.calls.remove(index) {
                    self.end_call(call, &mut out);
                }
            }
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Finish(reason) => self.reason = Some(reason.clone()),
            // A thinking block's signature has no place in a Responses reasoning item.
            StreamEvent::ReasoningSignature(_) => {}
        }
        out
    }

    /// Closes what is open and ends the stream: `response.completed`, or
    /// `response.incomplete` when the model hit the length limit (or a content filter).
    pub fn finish(&mut self) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close_text(&mut out);
        for (_, call) in std::mem::take(&mut self.calls) {
            self.end_call(call, &mut out);
        }
        let incomplete = match &self.reason {
            Some(FinishReason::Length) => Some("max_output_tokens"),
            Some(FinishReason::ToolLimit) => Some("max_tool_calls"),
            Some(FinishReason::ContentFilter) => Some("content_filter"),
            _ => None,
        };
        let usage = self.usage.unwrap_or_default().into();
        let response = Arc::make_mut(&mut self.response);
        response.usage = Some(usage);
        response.status = match incomplete {
            Some(_) => Status::Incomplete,
            None => Status::Completed,
        };
        response.incomplete_details = incomplete.map(|reason| IncompleteDetails {
            reason: reason.to_owned(),
        });
        let response = Arc::clone(&self.response);
        let event = match incomplete {
            Some(_) => Event::Incomplete { response },
            None => Event::Completed { response },
        };
        out.push(self.sequenced(event));
        out
    }

    /// Ends the stream with `response.failed` carrying the error.
    pub fn fail(&mut self, code: &str, message: &str) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        let response = Arc::make_mut(&mut self.response);
        response.status = Status::Failed;
        response.error = Some(ResponseError {
            code: code.to_owned(),
            message: message.to_owned(),
        });
        let response = Arc::clone(&self.response);
        out.push(self.sequenced(Event::Failed { response }));
        out
    }

    /// The tools of an MCP server the server side will run (`tools` in the shape of
    /// `mcp_list_tools`), or why it could not list them.
    pub fn mcp_list_tools(
        &mut self,
        server_label: &str,
        tools: Vec<Value>,
        error: Option<String>,
    ) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close_text(&mut out);
        let id = item_id("mcpl");
        let listing = |tools: Vec<Value>, error: Option<String>| Item::McpListTools {
            id: id.clone(),
            server_label: server_label.to_owned(),
            tools,
            error,
        };
        let output_index = self.add_item(listing(Vec::new(), None), &mut out);
        let item_id = id.clone();
        self.push(
            &mut out,
            Event::McpListToolsInProgress {
                item_id: item_id.clone(),
                output_index,
            },
        );
        let event = if error.is_some() {
            Event::McpListToolsFailed {
                item_id,
                output_index,
            }
        } else {
            Event::McpListToolsCompleted {
                item_id,
                output_index,
            }
        };
        self.push(&mut out, event);
        self.done_item(output_index, listing(tools, error), &mut out);
        out
    }

    /// An MCP call the server side starts: announced with its arguments whole (the model's
    /// call was complete before it ran). `approval_request_id`: the approval it answers.
    pub fn mcp_call_started(
        &mut self,
        call_id: &str,
        server_label: &str,
        name: &str,
        arguments: &str,
        approval_request_id: Option<&str>,
    ) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close_text(&mut out);
        let id = item_id("mcp");
        let item = Item::McpCall {
            id: id.clone(),
            server_label: server_label.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            output: None,
            error: None,
            status: Some("in_progress".into()),
            approval_request_id: approval_request_id.map(str::to_owned),
        };
        let output_index = self.add_item(item.clone(), &mut out);
        self.push(
            &mut out,
            Event::McpCallInProgress {
                item_id: id.clone(),
                output_index,
            },
        );
        if !arguments.is_empty() {
            self.push(
                &mut out,
                Event::McpCallArgumentsDelta {
                    item_id: id.clone(),
                    output_index,
                    delta: arguments.to_owned(),
                },
            );
        }
        self.push(
            &mut out,
            Event::McpCallArgumentsDone {
                item_id: id,
                output_index,
                arguments: arguments.to_owned(),
            },
        );
        self.mcp_calls
            .insert(call_id.to_owned(), (output_index, item));
        out
    }

    /// The end of an MCP call: its output, or its failure as a tool execution error.
    pub fn mcp_call_finished(
        &mut self,
        call_id: &str,
        content: &str,
        is_error: bool,
    ) -> Vec<Sequenced> {
        let mut out = Vec::new();
        let Some((output_index, mut item)) = self.mcp_calls.remove(call_id) else {
            return out;
        };
        let Item::McpCall {
            id,
            output,
            error,
            status,
            ..
        } = &mut item
        else {
            return out;
        };
        let item_id = id.clone();
        if is_error {
            *error = Some(json!({"type": "mcp_tool_execution_error",
                "content": [{"type": "text", "text": content}]}));
            *status = Some("failed".into());
            self.push(
                &mut out,
                Event::McpCallFailed {
                    item_id,
                    output_index,
                },
            );
        } else {
            *output = Some(content.to_owned());
            *status = Some("completed".into());
            self.push(
                &mut out,
                Event::McpCallCompleted {
                    item_id,
                    output_index,
                },
            );
        }
        self.done_item(output_index, item, &mut out);
        out
    }

    /// A tool search the server side ran: its `tool_search_call` (the model's arguments as
    /// an object, `call_id: null`) and its `tool_search_output` (the tools it loaded, in the
    /// client's shapes), each announced and closed in turn. A search whose input was
    /// unusable loaded nothing: its output says so with `status: "incomplete"`.
    pub fn tool_search(&mut self, arguments: &str, loaded: Option<Vec<Value>>) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close_text(&mut out);
        let call = Item::ToolSearchCall {
            id: Some(item_id("tsc")),
            call_id: None,
            execution: Some(Execution::Server),
            arguments: match serde_json::from_str::<Value>(arguments) {
                Ok(value @ Value::Object(_)) => value,
                _ => Value::String(arguments.to_owned()),
            },
            status: Some("completed".into()),
        };
        let output_index = self.add_item(call.clone(), &mut out);
        self.done_item(output_index, call, &mut out);
        let status = if loaded.is_some() {
            "completed"
        } else {
            "incomplete"
        };
        let output = Item::ToolSearchOutput {
            id: Some(item_id("tso")),
            call_id: None,
            execution: Some(Execution::Server),
            tools: loaded.unwrap_or_default(),
            status: Some(status.into()),
        };
        let output_index = self.add_item(output.clone(), &mut out);
        self.done_item(output_index, output, &mut out);
        out
    }

    /// A call that waits for the client's approval; `id` is what the client answers.
    pub fn mcp_approval_request(
        &mut self,
        id: &str,
        server_label: &str,
        name: &str,
        arguments: &str,
    ) -> Vec<Sequenced> {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close_text(&mut out);
        let item = Item::McpApprovalRequest {
            id: id.to_owned(),
            server_label: server_label.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        };
        let output_index = self.add_item(item.clone(), &mut out);
        self.done_item(output_index, item, &mut out);
        out
    }

    fn sequenced(&mut self, event: Event) -> Sequenced {
        let sequence_number = self.sequence;
        self.sequence += 1;
        Sequenced {
            event,
            sequence_number,
        }
    }

    fn push(&mut self, out: &mut Vec<Sequenced>, event: Event) {
        let event = self.sequenced(event);
        out.push(event);
    }

    fn ensure_started(&mut self, out: &mut Vec<Sequenced>) {
        if self.started {
            return;
        }
        self.started = true;
        let response = Arc::clone(&self.response);
        self.push(
            out,
            Event::Created {
                response: response.clone(),
            },
        );
        self.push(out, Event::InProgress { response });
    }

    /// Adds an item to the output and announces it; returns its index.
    fn add_item(&mut self, item: Item, out: &mut Vec<Sequenced>) -> usize {
        let output = &mut Arc::make_mut(&mut self.response).output;
        let output_index = output.len();
        output.push(item.clone());
        self.push(out, Event::OutputItemAdded { output_index, item });
        output_index
    }

    fn done_item(&mut self, output_index: usize, item: Item, out: &mut Vec<Sequenced>) {
        if let Some(slot) = Arc::make_mut(&mut self.response)
            .output
            .get_mut(output_index)
        {
            *slot = item.clone();
        }
        self.push(out, Event::OutputItemDone { output_index, item });
    }

    fn text(&mut self, text: &str, reasoning: bool, out: &mut Vec<Sequenced>) {
        if text.is_empty() {
            return;
        }
        if self
            .open
            .as_ref()
            .is_some_and(|open| open.reasoning != reasoning)
        {
            self.close_text(out);
        }
        if self.open.is_none() {
            let open = self.open_text(reasoning, out);
            self.open = Some(open);
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        open.text.push_str(text);
        let (item_id, output_index) = (open.id.clone(), open.output_index);
        let delta = text.to_owned();
        let event = if reasoning {
            Event::ReasoningSummaryTextDelta {
                item_id,
                output_index,
                summary_index: 0,
                delta,
            }
        } else {
            Event::OutputTextDelta {
                item_id,
                output_index,
                content_index: 0,
                delta,
                logprobs: Vec::new(),
            }
        };
        self.push(out, event);
    }

    fn open_text(&mut self, reasoning: bool, out: &mut Vec<Sequenced>) -> OpenText {
        if reasoning {
            let id = item_id("rs");
            let output_index = self.add_item(reasoning_item(&id, None), out);
            self.push(
                out,
                Event::ReasoningSummaryPartAdded {
                    item_id: id.clone(),
                    output_index,
                    summary_index: 0,
                    part: TextPart::summary(""),
                },
            );
            OpenText {
                output_index,
                id,
                reasoning,
                text: String::new(),
            }
        } else {
            let id = item_id("msg");
            let output_index = self.add_item(message_item(&id, None), out);
            self.push(
                out,
                Event::ContentPartAdded {
                    item_id: id.clone(),
                    output_index,
                    content_index: 0,
                    part: output_text(String::new()),
                },
            );
            OpenText {
                output_index,
                id,
                reasoning,
                text: String::new(),
            }
        }
    }

    fn close_text(&mut self, out: &mut Vec<Sequenced>) {
        let Some(OpenText {
            output_index,
            id,
            reasoning,
            text,
        }) = self.open.take()
        else {
            return;
        };
        if reasoning {
            self.push(
                out,
                Event::ReasoningSummaryTextDone {
                    item_id: id.clone(),
                    output_index,
                    summary_index: 0,
                    text: text.clone(),
                },
            );
            self.push(
                out,
                Event::ReasoningSummaryPartDone {
                    item_id: id.clone(),
                    output_index,
                    summary_index: 0,
                    part: TextPart::summary(text.clone()),
                },
            );
            self.done_item(output_index, reasoning_item(&id, Some(text)), out);
        } else {
            self.push(
                out,
                Event::OutputTextDone {
                    item_id: id.clone(),
                    output_index,
                    content_index: 0,
                    text: text.clone(),
                    logprobs: Vec::new(),
                },
            );
            self.push(
                out,
                Event::ContentPartDone {
                    item_id: id.clone(),
                    output_index,
                    content_index: 0,
                    part: output_text(text.clone()),
                },
            );
            self.done_item(output_index, message_item(&id, Some(text)), out);
        }
    }

    fn start_call(&mut self, index: usize, call_id: &str, name: &str, out: &mut Vec<Sequenced>) {
        let kind = self.kinds.get(name).cloned().unwrap_or(CallKind::Function {
            name: name.to_owned(),
            namespace: None,
        });
        let prefix = match kind {
            CallKind::Function { .. } => "fc",
            CallKind::Custom { .. } => "ctc",
            CallKind::ToolSearch => "tsc",
            CallKind::LocalShell => "lsc",
        };
        let mut call = OpenCall {
            output_index: 0,
            item_id: item_id(prefix),
            call_id: call_id.to_owned(),
            kind,
            arguments: String::new(),
            input: InputStream::default(),
        };
        call.output_index = self.add_item(call_item(&call, "in_progress", String::new()), out);
        self.calls.insert(index, call);
    }

    fn call_arguments(&mut self, index: usize, delta: &str, out: &mut Vec<Sequenced>) {
        let Some(call) = self.calls.get_mut(&index) else {
            return;
        };
        call.arguments.push_str(delta);
        let (item_id, output_index) = (call.item_id.clone(), call.output_index);
        let event = match &call.kind {
            CallKind::Function { .. } => Event::FunctionCallArgumentsDelta {
                item_id,
                output_index,
                delta: delta.to_owned(),
            },
            CallKind::Custom { .. } => {
                let text = call.input.push(delta);
                if text.is_empty() {
                    return;
                }
                Event::CustomToolCallInputDelta {
                    item_id,
                    output_index,
                    delta: text,
                }
            }
            CallKind::ToolSearch | CallKind::LocalShell => return,
        };
        self.push(out, event);
    }

    fn end_call(&mut self, call: OpenCall, out: &mut Vec<Sequenced>) {
        let (item_id, output_index) = (call.item_id.clone(), call.output_index);
        let mut input = String::new();
        match &call.kind {
            CallKind::Function { name, .. } => self.push(
                out,
                Event::FunctionCallArgumentsDone {
                    item_id,
                    output_index,
                    name: name.clone(),
                    arguments: call.arguments.clone(),
                },
            ),
            CallKind::Custom { .. } => {
                let (whole, rest) = call.input.finish();
                if !rest.is_empty() {
                    self.push(
                        out,
                        Event::CustomToolCallInputDelta {
                            item_id: item_id.clone(),
                            output_index,
                            delta: rest,
                        },
                    );
                }
                self.push(
                    out,
                    Event::CustomToolCallInputDone {
                        item_id,
                        output_index,
                        input: whole.clone(),
                    },
                );
                input = whole;
            }
            CallKind::ToolSearch | CallKind::LocalShell => {}
        }
        self.done_item(output_index, call_item(&call, "completed", input), out);
    }
}

fn output_text(text: String) -> ContentPart {
    ContentPart::OutputText {
        text,
        annotations: Vec::new(),
    }
}

/// An assistant message; `None` while it is being written.
fn message_item(id: &str, text: Option<String>) -> Item {
    let done = text.is_some();
    Item::Message {
        id: Some(id.to_owned()),
        role: Role::Assistant,
        content: MessageContent::Parts(text.map(output_text).into_iter().collect()),
        status: Some(if done { "completed" } else { "in_progress" }.to_owned()),
    }
}

fn reasoning_item(id: &str, text: Option<String>) -> Item {
    Item::Reasoning {
        id: Some(id.to_owned()),
        summary: text.map(TextPart::summary).into_iter().collect(),
        content: None,
        encrypted_content: None,
        status: None,
    }
}

/// The arguments as a JSON object, `{}` when they are not one (the call's checks report it).
fn object(arguments: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    }
}

fn call_item(call: &OpenCall, status: &str, input: String) -> Item {
    let status = Some(status.to_owned());
    let id = Some(call.item_id.clone());
    match &call.kind {
        CallKind::Function { name, namespace } => Item::FunctionCall {
            id,
            call_id: call.call_id.clone(),
            name: name.clone(),
            namespace: namespace.clone(),
            arguments: call.arguments.clone(),
            status,
        },
        CallKind::Custom { name, namespace } => Item::CustomToolCall {
            id,
            call_id: call.call_id.clone(),
            name: name.clone(),
            namespace: namespace.clone(),
            input,
            status,
        },
        CallKind::ToolSearch => Item::ToolSearchCall {
            id,
            call_id: Some(call.call_id.clone()),
            execution: Some(Execution::Client),
            arguments: Value::Object(object(&call.arguments)),
            status,
        },
        CallKind::LocalShell => {
            let mut action = object(&call.arguments);
            action.insert("type".into(), json!("exec"));
            Item::LocalShellCall {
                id,
                call_id: call.call_id.clone(),
                action: Value::Object(action),
                status,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skeleton() -> Response {
        serde_json::from_value(json!({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
            "error": null, "incomplete_details": null, "instructions": null, "max_output_tokens": null,
            "model": "m", "output": [], "parallel_tool_calls": true, "previous_response_id": null,
            "reasoning": {}, "store": false, "temperature": null, "text": {"format": {"type": "text"}},
            "tool_choice": "auto", "tools": [], "top_p": null, "truncation": "disabled", "usage": null,
            "user": null, "metadata": {}
        }))
        .unwrap()
    }

    fn kinds() -> HashMap<String, CallKind> {
        HashMap::from([(
            "apply_patch".to_owned(),
            CallKind::Custom {
                name: "apply_patch".into(),
                namespace: None,
            },
        )])
    }

    #[test]
    fn items_come_in_order_with_increasing_sequence_numbers() {
        let mut encoder = Encoder::new(skeleton(), kinds());
        let mut events = Vec::new();
        for event in [
            StreamEvent::ReasoningDelta("think".into()),
            StreamEvent::TextDelta("Hi".into()),
            StreamEvent::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "f".into(),
            },
            StreamEvent::ToolCallArguments {
                index: 0,
                delta: "{}".into(),
            },
            StreamEvent::ToolCallStart {
                index: 1,
                id: "call_2".into(),
                name: "apply_patch".into(),
            },
            StreamEvent::ToolCallArguments {
                index: 1,
                delta: "{\"input\":\"a\\nb\"}".into(),
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::ToolCallEnd { index: 1 },
            StreamEvent::Finish(FinishReason::ToolCalls),
            StreamEvent::Usage(Usage::new(3, 4)),
        ] {
            events.extend(encoder.event(&event));
        }
        events.extend(encoder.finish());
        let numbers: Vec<u64> = events.iter().map(|event| event.sequence_number).collect();
        assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
        let kinds: Vec<&str> = events.iter().map(|event| event.event.kind()).collect();
        assert_eq!(kinds.first(), Some(&"response.created"));
        assert_eq!(kinds.last(), Some(&"response.completed"));
        assert!(kinds.contains(&"response.custom_tool_call_input.delta"));
        let response = serde_json::to_value(encoder.response()).unwrap();
        let types: Vec<&str> = response["output"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            ["reasoning", "message", "function_call", "custom_tool_call"]
        );
        assert_eq!(response["output"][3]["input"], "a\nb");
        assert_eq!(response["output"][2]["status"], "completed");
        assert_eq!(response["usage"]["total_tokens"], 7);
        assert_eq!(response["status"], "completed");
        // The completed event carries the same response the encoder ends with.
        let Event::Completed { response: last } = &events.last().unwrap().event else {
            panic!()
        };
        assert_eq!(**last, *encoder.response());
    }

    #[test]
    fn the_length_limit_is_incomplete_and_an_error_is_failed() {
        let mut encoder = Encoder::new(skeleton(), HashMap::new());
        encoder.event(&StreamEvent::TextDelta("Once".into()));
        encoder.event(&StreamEvent::Finish(FinishReason::Length));
        let last = encoder.finish().pop().unwrap();
        assert_eq!(last.event.kind(), "response.incomplete");
        assert_eq!(
            encoder
                .response()
                .incomplete_details
                .as_ref()
                .unwrap()
                .reason,
            "max_output_tokens"
        );
        let mut encoder = Encoder::new(skeleton(), HashMap::new());
        let events = encoder.fail("backend_error", "boom");
        let kinds: Vec<&str> = events.iter().map(|event| event.event.kind()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.failed"
            ]
        );
        assert!(
            events[2]
                .sse()
                .starts_with("event: response.failed\ndata: {\"type\":\"response.failed\"")
        );
    }
}
