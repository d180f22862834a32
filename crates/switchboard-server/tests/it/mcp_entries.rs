//! The MCP servers a request names (OpenAI's `{"type": "mcp"}` tool on Chat Completions and
//! Responses, Anthropic's `mcp_servers` and `mcp_toolset` on Messages) are read into their
//! own types: a wrong field is a 400 naming its path in the API's own style, and nothing
//! reaches the backend or any MCP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::ScriptedServer;

fn message_of(answer: &Answer) -> String {
    assert_eq!(answer.status, 400, "{}", answer.text);
    answer.json()["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", answer.text))
        .to_owned()
}

#[tokio::test]
async fn a_wrong_mcp_entry_is_named_by_its_path_on_every_api() {
    let backend = ScriptedServer::start(Vec::new()).await;
    let gateway = one_route("openai", &backend.base, "").await;

    // Chat: the entry's field, listed with the request's other problems; the function
    // tool after it is named at its own place in `tools`.
    let mut chat = request("qwen", "hi");
    chat["tools"] = json!([
        {"type": "mcp", "server_label": "fs", "server_url": "http://127.0.0.1:1/mcp",
            "allowed_tools": 5},
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": "yes"}}
    ]);
    let answer = post(&gateway, &chat).await;
    let error = answer.error(400);
    assert_eq!(error["param"], "tools[0].allowed_tools", "{error}");
    let message = message_of(&answer);
    assert!(
        message.contains(
            "tools[0].allowed_tools: must be a list of tool names or {tool_names, read_only}"
        ),
        "{message}"
    );
    assert!(message.contains("tools[1]."), "{message}");

    // Responses: the same tool, the same path.
    let responses = json!({"model": "qwen", "input": "hi", "tools": [
        {"type": "mcp", "server_label": "fs", "server_url": "http://127.0.0.1:1/mcp",
            "require_approval": "sometimes"}]});
    let answer = post_to(&gateway, "/v1/responses", &responses).await;
    assert_eq!(answer.json()["error"]["param"], "tools[0].require_approval");
    assert!(
        message_of(&answer).contains("must be \"always\", \"never\" or {always, never}"),
        "{}",
        answer.text
    );

    // Messages: Anthropic's dotted paths, into a server and into a toolset.
    let messages = |servers: Value, tools: Value| {
        json!({"model": "qwen", "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
            "mcp_servers": servers, "tools": tools})
    };
    let server = json!({"type": "url", "url": "http://127.0.0.1:1/mcp", "name": "fs"});
    for (body, place) in [
        (
            messages(json!([{"type": "url", "url": 5, "name": "fs"}]), json!([])),
            "mcp_servers.0.url: invalid type: integer `5`, expected a string",
        ),
        (
            messages(
                json!([server]),
                json!([{"type": "mcp_toolset", "mcp_server_name": "fs",
                    "configs": {"read": {"enabled": "yes"}}}]),
            ),
            "tools.0.configs.read.enabled: invalid type: string \"yes\", expected a boolean",
        ),
        (
            messages(
                json!([server]),
                json!([{"type": "mcp_toolset", "mcp_server_name": "gone"}]),
            ),
            "tools.0.mcp_server_name: \"gone\" is not one of the request's mcp_servers",
        ),
    ] {
        let answer = post_to(&gateway, "/v1/messages", &body).await;
        let message = message_of(&answer);
        assert!(message.contains(place), "{message}");
    }
    assert!(backend.requests().is_empty());
}
