//! A server on the official Python SDK (`mcp` 2.x, `MCPServer`), stateless Streamable HTTP:
//! the current protocol era, reached with `server/discover` and no session.

use std::collections::BTreeMap;

use serde_json::json;
use switchboard_mcp_client::UpstreamState;

use crate::common::*;

const SERVER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("py-tools")

@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_python_sdk_server_is_used_in_the_stateless_era() {
    let Some(python) = python(Some("mcp.server.mcpserver")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", SERVER);
    let port = free_port();
    let _server = Server::start(&python, &[&path, &port.to_string()], &[], port).await;
    let upstream = connected(http(
        "py",
        &format!("http://127.0.0.1:{port}/mcp"),
        BTreeMap::new(),
    ))
    .await;
    match upstream.state() {
        UpstreamState::Ready {
            protocol_version, ..
        } => assert_eq!(protocol_version, "2026-07-28"),
        other => panic!("{other:?}"),
    }
    let tools = upstream.tools();
    let add = tools.iter().find(|tool| tool.name == "add").unwrap();
    assert_eq!(add.description.as_deref(), Some("Adds two integers."));
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    let output = upstream
        .call(
            "add",
            args(json!({"a": 2, "b": 40})),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        )
        .await
        .unwrap();
    assert!(!output.is_error, "{}", output.text);
    assert_eq!(output.text, "42");
    assert_eq!(output.structured, Some(json!({"result": 42})));
}
