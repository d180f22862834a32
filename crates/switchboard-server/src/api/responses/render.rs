//! An answer in the Responses API's shapes: SSE events (`event:` lines, increasing
//! `sequence_number`) or one response object, both from the same encoder fed the same
//! outputs. Problems with the model's calls ride on the response as `tool_call_errors`.
//! A response made with `store: true` is kept before its last event goes out, so a client
//! that continues from it at once finds it; one that could not be kept says `store: false`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_runtime::ToolEvent;
use switchboard_wire::responses::{
    Encoder, Event, Loadable, Response, Sequenced, loaded_tools, sse, write_sse,
};

use axum::Json;
use axum::http::HeaderValue;
use axum::response::IntoResponse;

use super::NOT_STORED_HEADER;
use crate::api::error::ApiError;
use crate::api::sse::{Renderer, WholeBody};
use crate::store::{Conversation, ResponseStore, StoredResponse};
use switchboard_pipeline::tool_checks::ToolCallProblem;
use switchboard_pipeline::{Answer, GatewayEvent, Output};

/// Where a stored response goes, and the conversation it answers.
#[derive(Debug)]
pub struct Keep {
    pub store: Arc<dyn ResponseStore>,
    pub input: Conversation,
    /// The caller's key name.
    pub owner: Option<String>,
}

/// Folds outputs into Responses events and the response object.
#[derive(Debug)]
pub struct ResponseRenderer {
    encoder: Encoder,
    problems: Vec<ToolCallProblem>,
    keep: Option<Keep>,
    /// The closing events, made before the end is sent (see [`Renderer::before_end`]).
    ending: Option<Vec<Sequenced>>,
    /// Why the response was not kept, when it was to be and the store failed.
    unkept: Arc<OnceLock<&'static str>>,
    /// Ids of the approval requests the request answers.
    approvals: HashSet<String>,
    /// What a hosted search's output shows of each deferred tool.
    loadable: HashMap<String, Loadable>,
}

impl ResponseRenderer {
    pub fn new(
        encoder: Encoder,
        keep: Option<Keep>,
        approvals: HashSet<String>,
        loadable: HashMap<String, Loadable>,
    ) -> Self {
        Self {
            encoder,
            problems: Vec::new(),
            keep,
            ending: None,
            unkept: Arc::default(),
            approvals,
            loadable,
        }
    }

    /// What the gateway did, as MCP items (listings, calls, approval requests) and hosted
    /// tool search items. A character's own tools have no place in this API.
    fn gateway_event(&mut self, event: GatewayEvent) -> Vec<Sequenced> {
        match event {
            GatewayEvent::ToolList(listing) => {
                let tools = listing
                    .tools
                    .iter()
                    .map(|tool| {
                        json!({"name": tool.name, "description": tool.description,
                            "input_schema": tool.input_schema, "annotations": tool.annotations})
                    })
                    .collect();
                self.encoder
                    .mcp_list_tools(&listing.label, tools, listing.error.clone())
            }
            GatewayEvent::Tool {
                event: ToolEvent::ToolStarted { id, arguments, .. },
                source: Some(source),
            } => {
                let approval = self.approvals.contains(&id).then_some(id.as_str());
                self.encoder.mcp_call_started(
                    &id,
                    &source.server,
                    &source.tool,
                    &arguments,
                    approval,
                )
            }
            GatewayEvent::Tool {
                event:
                    ToolEvent::ToolFinished {
                        id,
                        content,
                        is_error,
                        ..
                    },
                source: Some(_),
            } => self.encoder.mcp_call_finished(&id, &content, is_error),
            GatewayEvent::ApprovalRequest {
                id,
                source,
                arguments,
            } => self
                .encoder
                .mcp_approval_request(&id, &source.server, &source.tool, &arguments),
            GatewayEvent::ToolSearch {
                arguments, found, ..
            } => {
                let loaded = found.ok().map(|found| loaded_tools(&found, &self.loadable));
                self.encoder.tool_search(&arguments, loaded)
            }
            GatewayEvent::Tool { source: None, .. } | GatewayEvent::SystemPrompt { .. } => {
                Vec::new()
            }
        }
    }

    /// Why the response was to be kept and could not be (the store error's code).
    pub fn unkept(&self) -> Option<&'static str> {
        self.unkept.get().copied()
    }

    /// Takes one output; returns its SSE text when `render` (a stream), else only folds it
    /// into the response (a whole answer).
    pub fn take(&mut self, output: Output, render: bool) -> String {
        // The opening events go first and are dropped before the response grows, so that
        // the response they share is never copied.
        let opening = self.encoder.start();
        let mut text = Vec::new();
        if render {
            write_sse(&opening, &mut text);
        }
        drop(opening);
        let events = match output {
            Output::CallProblems(found) => {
                self.problems.extend(found);
                Vec::new()
            }
            Output::Event(event) => self.encoder.event(&event),
            Output::Gateway(event) => self.gateway_event(event),
        };
        if render {
            write_sse(&events, &mut text);
        }
        // serde_json writes UTF-8 only, and so does `write_sse` around it.
        String::from_utf8(text)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    }

    /// Ends the answer: the closing events, and the keeping of a stored response.
    pub fn close(&mut self) -> (Vec<Sequenced>, BoxFuture<'static, ()>) {
        if !self.problems.is_empty() {
            let problems = serde_json::to_value(&self.problems).unwrap_or(Value::Null);
            self.encoder.set_tool_call_errors(problems);
        }
        let events = self.encoder.finish();
        let keeping: BoxFuture<'static, ()> = match self.keep.take() {
            Some(Keep {
                store,
                input,
                owner,
            }) => {
                let stored = StoredResponse::new(self.encoder.response().clone(), input, owner);
                let unkept = Arc::clone(&self.unkept);
                Box::pin(async move {
                    let id = stored.response.id.clone();
                    if let Err(error) = store.put(stored).await {
                        tracing::warn!(response = %id, %error, "response not stored");
                        let _ = unkept.set(error.code());
                    }
                })
            }
            None => Box::pin(std::future::ready(())),
        };
        (events, keeping)
    }

    pub fn into_response(self) -> Response {
        let unkept = self.unkept().is_some();
        let mut response = self.encoder.into_response();
        if unkept {
            response.store = false;
        }
        response
    }
}

/// A whole answer is the stream's response object, kept before it is answered.
impl WholeBody for ResponseRenderer {
    fn take(&mut self, output: &Output) {
        self.take(output.clone(), false);
    }

    async fn respond(mut self, _answer: Answer) -> axum::response::Response {
        let (_, keeping) = self.close();
        keeping.await;
        let unkept = self.unkept();
        let mut response = Json(self.into_response()).into_response();
        if let Some(code) = unkept {
            response
                .headers_mut()
                .insert(NOT_STORED_HEADER, HeaderValue::from_static(code));
        }
        response
    }
}

impl Renderer for ResponseRenderer {
    fn output(&mut self, output: Output) -> String {
        self.take(output, true)
    }

    fn before_end(&mut self) -> BoxFuture<'static, ()> {
        let (events, keeping) = self.close();
        self.ending = Some(events);
        keeping
    }

    fn end(&mut self) -> String {
        let mut events = match self.ending.take() {
            Some(events) => events,
            None => self.close().0,
        };
        if self.unkept().is_some() {
            for event in &mut events {
                if let Event::Completed { response }
                | Event::Incomplete { response }
                | Event::Failed { response } = &mut event.event
                {
                    Arc::make_mut(response).store = false;
                }
            }
        }
        sse(&events)
    }

    fn error(&mut self, error: &ApiError) -> String {
        let code = error.code.as_deref().unwrap_or(error.kind);
        sse(&self.encoder.fail(code, &error.message))
    }
}
