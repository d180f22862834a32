//! Tool search on Chat Completions, which has no vendor standard for it: a tool
//! `{"type": "tool_search"}` (optional `"mode": "regex" | "bm25"`, BM25 by default) and
//! `"defer_loading": true` beside `"function"` on a function tool, as OpenRouter and orq.ai
//! place it. The gateway runs the search (`switchboard_pipeline::tool_search`); the client
//! sees only calls to its own tools.

use std::collections::HashSet;

use serde_json::Value;
use switchboard_pipeline::tool_search::{SearchMode, ToolSearch};
use switchboard_tools::{Message, ToolDefinition};
use switchboard_wire::ChatRequest;
use switchboard_wire::mcp::OpenAiTool;

use crate::api::error::ApiError;
use crate::api::fields::{Invalid, invalid, rejection};

/// The name the model calls the search by.
pub const NAME: &str = "tool_search";

/// What a request asks of tool search: how, and which of its function tools wait for it.
#[derive(Debug)]
pub struct Asked {
    mode: SearchMode,
    deferred: Vec<String>,
}

/// Reads the `{"type": "tool_search"}` entry of `tools` (the check leaves it out of the
/// functions, where its place still names the others) and takes the `defer_loading` marks
/// off its functions; `None` when the request asks for no search.
pub fn take(tools: &mut Option<Vec<OpenAiTool>>) -> Result<Option<Asked>, ApiError> {
    let Some(list) = tools else {
        return Ok(None);
    };
    let mut problems: Vec<Invalid> = Vec::new();
    let mut mode = None;
    let mut deferred = Vec::new();
    for (index, tool) in list.iter_mut().enumerate() {
        let OpenAiTool::Other(tool) = tool else {
            continue;
        };
        let at = format!("tools[{index}]");
        if tool.get("type").and_then(Value::as_str) == Some(NAME) {
            let asked = match tool.get("mode") {
                None => Some(SearchMode::Bm25),
                Some(Value::String(mode)) if mode == "bm25" => Some(SearchMode::Bm25),
                Some(Value::String(mode)) if mode == "regex" => Some(SearchMode::Regex),
                Some(_) => {
                    problems.push(invalid(
                        format!("{at}.mode"),
                        "must be \"regex\" or \"bm25\"",
                    ));
                    None
                }
            };
            if mode.is_some() {
                problems.push(invalid(at, "a request may offer one tool_search tool"));
            }
            mode = mode.or(asked);
            continue;
        }
        if let Some(object) = tool.as_object_mut()
            && let Some(defer) = object.remove("defer_loading")
        {
            match defer {
                Value::Bool(true) => deferred.extend(
                    object
                        .get("function")
                        .and_then(|function| function.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ),
                Value::Bool(false) => {}
                _ => problems.push(invalid(format!("{at}.defer_loading"), "expected a boolean")),
            }
        }
    }
    if mode.is_none() && !deferred.is_empty() {
        problems.push(invalid(
            "tools",
            "a tool with defer_loading needs a {\"type\": \"tool_search\"} tool to be found by",
        ));
    }
    if !problems.is_empty() {
        return Err(rejection(&problems));
    }
    Ok(mode.map(|mode| Asked { mode, deferred }))
}

/// The search over the request's deferred functions, which leave the tools the model is
/// offered. A forced one stays, and so does one the history's assistant turns called: the
/// client sees only calls to its own tools, so a call is what is left of a search that
/// found the tool in an earlier request, and the model keeps it without searching again.
pub fn search(asked: Asked, request: &mut ChatRequest) -> ToolSearch {
    let forced = match &request.tool_choice {
        Some(switchboard_wire::ToolChoice::Function(name)) => Some(name.as_str()),
        _ => None,
    };
    let called: HashSet<&str> = request
        .messages
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .map(|call| call.name.as_str())
        .collect();
    let (hidden, offered): (Vec<ToolDefinition>, Vec<ToolDefinition>) =
        request.tools.iter().cloned().partition(|tool| {
            asked.deferred.iter().any(|name| name == tool.name())
                && forced != Some(tool.name())
                && !called.contains(tool.name())
        });
    request.tools = offered.into();
    ToolSearch::new(NAME, asked.mode, None, hidden)
}
