//! A Messages request's content blocks, checked where they stand (the system prompt, a
//! message of each role, a tool result's content) and moved into the wire crate's shape:
//! which kinds a place takes is decided once, by [`Place`].

use serde_json::Value;
use switchboard_tools::{quote, quote_value};
use switchboard_wire::anthropic::tool_search::SERVER_ID_PREFIX;
use switchboard_wire::anthropic::{Block as WireBlock, ContentBlock, ToolResultContent};

use super::request::{Block, Content};
use crate::api::fields::{Invalid, invalid};

/// Where blocks are, which decides the kinds they may be.
pub(super) enum Place<'a> {
    /// The system prompt.
    Prompt,
    SystemMessage,
    /// An assistant message, with the ids of its tool_use blocks so far.
    Assistant(&'a mut Vec<String>),
    /// A user message, with the tool_use ids of the previous assistant turn and the
    /// `tool_reference`s found so far (each with its path), which load deferred tools.
    User(&'a [String], &'a mut Vec<(String, String)>),
    /// A tool_result's content, with the `tool_reference`s found so far.
    ToolResult(&'a mut Vec<(String, String)>),
}

impl Place<'_> {
    /// The problem of a block of a kind not taken here.
    fn refusal(&self, at: &str, kind: Option<&str>) -> Invalid {
        let at = format!("{at}.type");
        let place = match self {
            Place::Prompt => return invalid(at, "system blocks must be text blocks"),
            Place::SystemMessage => return invalid(at, "a system message holds text blocks only"),
            Place::Assistant(_) => "an assistant message",
            Place::User(..) => "a user message",
            Place::ToolResult(_) => "a tool_result",
        };
        match kind {
            None => invalid(at, "each content block needs a type"),
            Some(kind) => invalid(
                at,
                format!(
                    "{} blocks are not supported in {place} by this gateway",
                    quote(kind)
                ),
            ),
        }
    }
}

/// The blocks under `at`, checked and in the wire crate's shape.
pub(super) fn check_blocks(
    blocks: Vec<Block>,
    at: &str,
    place: &mut Place<'_>,
    problems: &mut Vec<Invalid>,
) -> Vec<ContentBlock> {
    blocks
        .into_iter()
        .enumerate()
        .filter_map(|(index, block)| {
            check_block(block, &format!("{at}.{index}"), place, problems).map(ContentBlock::Known)
        })
        .collect()
}

/// One block in the wire crate's shape; `None` when it is refused (its problems recorded).
fn check_block(
    mut block: Block,
    at: &str,
    place: &mut Place<'_>,
    problems: &mut Vec<Invalid>,
) -> Option<WireBlock> {
    let kind = block.kind.take();
    match (kind.as_deref(), place) {
        (Some("text"), _) => {
            let text = needed(
                block.text,
                at,
                "text",
                "a text block needs its text as a string",
                problems,
            )?;
            Some(WireBlock::Text {
                text,
                extra: block.extra,
            })
        }
        (Some("image"), Place::User(..) | Place::ToolResult(_)) => {
            check_image(block.source.as_ref(), at, problems);
            Some(WireBlock::Image {
                source: block.source?,
                extra: block.extra,
            })
        }
        (Some("tool_result"), Place::User(offered, references)) => {
            check_tool_result(block, at, offered, references, problems)
        }
        // What a client-side tool search (Claude Code's ToolSearch) answers: the named
        // deferred tool is offered from now on.
        (Some("tool_reference"), Place::ToolResult(references)) => {
            let tool_name = needed(
                block.tool_name,
                at,
                "tool_name",
                "a tool_reference block needs the tool_name it loads",
                problems,
            )?;
            references.push((format!("{at}.tool_name"), tool_name.clone()));
            Some(WireBlock::ToolReference { tool_name })
        }
        (Some("tool_use"), Place::Assistant(ids)) => check_tool_use(block, at, ids, problems),
        (Some("thinking"), Place::Assistant(_)) => {
            let thinking = needed(
                block.thinking,
                at,
                "thinking",
                "a thinking block needs its thinking as a string",
                problems,
            )?;
            Some(WireBlock::Thinking {
                thinking,
                signature: block.signature,
            })
        }
        (Some("redacted_thinking"), Place::Assistant(_)) => {
            let data = needed(
                block.data,
                at,
                "data",
                "a redacted_thinking block needs its data as a string",
                problems,
            )?;
            Some(WireBlock::RedactedThinking { data })
        }
        (kind, place) => {
            problems.push(place.refusal(at, kind));
            None
        }
    }
}

/// A field its block's kind needs, or the problem `message` naming it.
pub(super) fn needed<T>(
    value: Option<T>,
    at: &str,
    field: &str,
    message: &str,
    problems: &mut Vec<Invalid>,
) -> Option<T> {
    if value.is_none() {
        problems.push(invalid(format!("{at}.{field}"), message));
    }
    value
}

fn check_tool_use(
    block: Block,
    at: &str,
    ids: &mut Vec<String>,
    problems: &mut Vec<Invalid>,
) -> Option<WireBlock> {
    let id = needed(
        block.id.filter(|id| !id.is_empty()),
        at,
        "id",
        "a tool_use block needs an id",
        problems,
    );
    if let Some(id) = &id {
        if ids.contains(id) {
            problems.push(invalid(
                format!("{at}.id"),
                format!(
                    "{} is used by an earlier tool_use of this message",
                    quote(id)
                ),
            ));
        }
        ids.push(id.clone());
    }
    let name = needed(
        block.name,
        at,
        "name",
        "a tool_use block needs the tool's name",
        problems,
    );
    let input = needed(
        block.input.filter(Value::is_object),
        at,
        "input",
        "a tool_use block's input must be an object",
        problems,
    );
    Some(WireBlock::ToolUse {
        id: id?,
        name: name?,
        input: input?,
        extra: block.extra,
    })
}

fn check_tool_result(
    block: Block,
    at: &str,
    offered: &[String],
    references: &mut Vec<(String, String)>,
    problems: &mut Vec<Invalid>,
) -> Option<WireBlock> {
    let tool_use_id = needed(
        block.tool_use_id,
        at,
        "tool_use_id",
        "a tool_result block needs the tool_use_id it answers",
        problems,
    );
    if let Some(id) = &tool_use_id
        && id.starts_with(SERVER_ID_PREFIX)
    {
        problems.push(invalid(
            format!("{at}.tool_use_id"),
            format!(
                "{} is a server tool's call, which the server answered; a tool_result cannot answer it",
                quote(id)
            ),
        ));
    } else if let Some(id) = &tool_use_id
        && !offered.contains(id)
    {
        problems.push(invalid(
            format!("{at}.tool_use_id"),
            format!(
                "{} does not answer a tool_use block of the previous assistant message",
                quote(id)
            ),
        ));
    }
    let content = block.content.and_then(|content| match content {
        Content::Text(text) => Some(ToolResultContent::Text(text)),
        Content::List(parts) => Some(ToolResultContent::Blocks(check_blocks(
            parts,
            &format!("{at}.content"),
            &mut Place::ToolResult(references),
            problems,
        ))),
        Content::Other(other) => {
            problems.push(not_content(
                format!("{at}.content"),
                "text and image blocks",
                Some(&other),
            ));
            None
        }
    });
    Some(WireBlock::ToolResult {
        tool_use_id: tool_use_id?,
        content,
        is_error: block.is_error,
        extra: block.extra,
    })
}

/// `{"type": "base64", "media_type", "data"}` or `{"type": "url", "url"}`.
fn check_image(source: Option<&Value>, at: &str, problems: &mut Vec<Invalid>) {
    let fields: &[&str] = match source.and_then(|source| source.get("type")?.as_str()) {
        Some("base64") => &["media_type", "data"],
        Some("url") => &["url"],
        _ => {
            problems.push(invalid(
                format!("{at}.source.type"),
                "an image source must be of type \"base64\" or \"url\"",
            ));
            return;
        }
    };
    for field in fields {
        if !source.is_some_and(|source| source.get(*field).is_some_and(Value::is_string)) {
            problems.push(invalid(format!("{at}.source.{field}"), "expected a string"));
        }
    }
}

/// The problem of content that is neither a string nor an array of `blocks`: `other`, or
/// nothing.
pub(super) fn not_content(
    param: impl Into<String>,
    blocks: &str,
    other: Option<&Value>,
) -> Invalid {
    invalid(
        param,
        format!(
            "must be a string or an array of {blocks}, got {}",
            other.map_or("nothing".into(), quote_value)
        ),
    )
}
