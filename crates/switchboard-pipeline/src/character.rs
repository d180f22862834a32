//! `character/<name>` routes: the gateway plays the character itself, with its system
//! prompt and its tools, and streams the character's words. A turn is the one tool loop
//! (`tool_loop`) with the character's toolbox as its tool source: its sandboxed `TOOLS` and
//! the tools of the MCP servers it declares. A client's own tools are refused, unless it
//! defers them behind a tool search: the search runs in the same loop beside the
//! character's tools, the tools it finds are offered from the next round (and, where the
//! history references them, from the first), and their calls go back to the client, whose
//! result continues the turn, as on any route. The client's `max_tokens`, under the
//! gateway's `character_max_tokens`, bounds the whole turn with its tool rounds: the client
//! asked for one reply, however many requests it takes; at the route's `max_tool_rounds`
//! the character answers in words. What the character did on its own (the prompt it built,
//! each tool call and its result) travels beside the words as [`GatewayEvent`]s, which a
//! front-end shows only to clients that ask for them.

use std::sync::Arc;

use switchboard_characters::Character;
use switchboard_runtime::History;
use switchboard_tools::{Content, Message};
use switchboard_wire::ChatRequest;

use crate::completion::{self, Completion};
use crate::error::PipelineError;
use crate::gateway_tools::{GatewayTools, ToolFilter};
use crate::output::{GatewayEvent, Output, Outputs, send};
use crate::tool_loop;
use crate::tool_search::ToolSearch;
use crate::tool_servers::{CharacterToolbox, ToolServers};

/// Checks what a character route cannot take, and leaves the conversation the character
/// is asked to go on with: the history without empty assistant turns, its oldest turns
/// dropped past the bound a conversation keeps, and the user's new message. A request that
/// `searched` its deferred tools has tools of its own, as on a route, and may end with the
/// result of its tool's call.
pub fn conversation(request: &mut ChatRequest, searched: bool) -> Result<(), PipelineError> {
    if !request.tools.is_empty() && !searched {
        return Err(PipelineError::invalid(
            "character routes run the character's own tools; send the request without tools, or defer them behind a tool search",
            Some("tools".into()),
        ));
    }
    // With tools of its own the client may answer its tool's call.
    let last_fits = match request.messages.last() {
        Some(Message::User { .. }) => true,
        Some(Message::Tool { .. }) => searched,
        _ => false,
    };
    if !last_fits {
        return Err(PipelineError::invalid(
            "the last message must be the user's message to the character (or, with a tool search, the result of the client's tool)",
            Some(format!(
                "messages[{}]",
                request.messages.len().saturating_sub(1)
            )),
        ));
    }
    let mut history = History::default();
    for message in std::mem::take(&mut request.messages) {
        if !is_empty_assistant(&message) {
            history.push(message);
        }
    }
    history.trim();
    request.messages = history.into_messages();
    Ok(())
}

/// Runs one turn of the character on `completion`'s route, the conversation made by
/// [`conversation`], and reports its words as outputs. The character's toolbox holds only
/// the tools `filter` (the caller's key) allows.
pub fn start(
    character: Arc<Character>,
    completion: Completion,
    tool_servers: &ToolServers,
    filter: ToolFilter,
    search: Option<Arc<ToolSearch>>,
) -> Outputs {
    let servers = tool_servers.declared_by(&character);
    completion::spawn(completion, move |completion, sender| {
        Box::pin(async move {
            let session = character
                .start_conversation()
                .await
                .map_err(|error| PipelineError::Character(error.to_string()))?;
            let prompt = session.system_prompt().to_owned();
            completion
                .request
                .messages
                .insert(0, Message::system(prompt.clone()));
            send(
                sender,
                vec![Output::Gateway(GatewayEvent::SystemPrompt {
                    content: prompt,
                })],
            )
            .await?;
            let toolbox = Arc::new(CharacterToolbox::new(session, &servers, &filter));
            let mut tools = GatewayTools::character(toolbox, &completion.route.tool_loop);
            tools.search = search;
            tool_loop::offer(completion, &tools)?;
            tool_loop::run(completion, Arc::new(tools), sender).await
        })
    })
}

fn is_empty_assistant(message: &Message) -> bool {
    matches!(message, Message::Assistant { content, tool_calls, .. }
        if tool_calls.is_empty() && content.as_ref().is_none_or(|content| matches!(content, Content::Text(text) if text.is_empty())))
}
