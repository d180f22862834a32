//! The official `openai` and `anthropic` Python SDKs and the OpenAI Agents SDK asking the
//! gateway to run MCP tools inside a request (tests/sdk/gateway_tools_client.py reports what
//! they made of each answer): the items and blocks parse as the SDKs' own types, streamed
//! answers equal whole ones, the approval round trip works, a URL the gateway does not run
//! is refused, and an agent's answer holds a value only the tool could produce. The servers
//! are the reference server-everything over stdio and a Python SDK server over HTTP named
//! by its URL (allowed by `mcp_allowed_urls`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::gateway_tools::{caller_model, everything, gateway};

use common::*;
use serde_json::{Value, json};
use switchboard_server::RunningGateway;
use switchboard_testkit::mcp::{ServerProcess, free_port, python, script};

/// A Python SDK server over HTTP whose one tool makes a value nothing else would.
const SHOUTER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("shouter")

@app.tool()
def shout(text: str) -> str:
    """Shouts the text back, with a mark only this server makes."""
    return text.upper() + " (shouted-7f3a)"

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

async fn sdk(gateway: &RunningGateway, case: &str, label: &str, url: Option<&str>) -> Value {
    let base = gateway.base_url();
    let mut args = vec![base.as_str(), case, "local", label];
    args.extend(url);
    python_client(
        "sdk/gateway_tools_client.py",
        &args,
        "openai, openai-agents and anthropic",
        None,
    )
    .await
}

fn classes(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["class"].as_str().unwrap().to_owned())
        .collect()
}

/// Items without what two answers cannot share, nor what the SDKs' stream helpers add
/// (their `Parsed…` classes and null `parsed` fields).
fn comparable(items: &Value) -> Value {
    let mut items = items.clone();
    for item in items.as_array_mut().unwrap() {
        let item = item.as_object_mut().unwrap();
        item.remove("id");
        item.remove("tool_use_id");
        if let Some(Value::String(class)) = item.get_mut("class") {
            *class = class.trim_start_matches("Parsed").to_owned();
        }
        if let Some(Value::Array(parts)) = item.get_mut("content") {
            for part in parts {
                if let Some(part) = part.as_object_mut() {
                    part.remove("parsed");
                }
            }
        }
    }
    items
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_sdk_reads_listings_calls_and_approvals_as_its_own_types() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "sdk says hi"})).await;
    let gateway = gateway(&servers, &backend, "").await;

    let answer = sdk(&gateway, "openai", "everything", None).await;
    assert_eq!(
        classes(&answer["whole"]),
        [
            "McpListTools",
            "ResponseOutputMessage",
            "McpCall",
            "ResponseOutputMessage"
        ],
        "{answer}"
    );
    assert_eq!(answer["whole"][2]["output"], "Echo: sdk says hi");
    assert_eq!(
        answer["whole_text"],
        "Let me check.The tool said: Echo: sdk says hi"
    );
    assert_eq!(answer["streamed_text"], answer["whole_text"]);
    assert_eq!(
        comparable(&answer["streamed"]),
        comparable(&answer["whole"])
    );
    let types: Vec<&str> = answer["event_types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(types.contains(&"response.mcp_call.completed"), "{types:?}");

    let approval = sdk(&gateway, "approval", "everything", None).await;
    assert_eq!(
        classes(&approval["first"]),
        [
            "McpListTools",
            "ResponseOutputMessage",
            "McpApprovalRequest"
        ],
        "{approval}"
    );
    assert_eq!(approval["first_status"], "completed");
    assert_eq!(
        classes(&approval["second"]),
        ["McpCall", "ResponseOutputMessage"],
        "{approval}"
    );
    assert_eq!(
        approval["second"][0]["approval_request_id"],
        approval["first"][2]["id"]
    );
    assert_eq!(approval["second_text"], "The tool said: Echo: sdk says hi");

    let refused = sdk(&gateway, "refused", "elsewhere", None).await;
    assert_eq!(refused["class"], "BadRequestError", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("http://10.1.2.3/mcp"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_server_named_by_an_allowed_url_runs_for_the_sdk_and_the_agent() {
    let Some(python) = python(Some("mcp.server.mcpserver")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", SHOUTER);
    let port = free_port();
    let _server = ServerProcess::start(&python, &[&path, &port.to_string()], &[], port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let backend = caller_model("shout", json!({"text": "quiet words"})).await;
    let gateway = gateway(
        &format!("mcp_allowed_urls = [\"http://127.0.0.1:{port}/*\"]\n"),
        &backend,
        "",
    )
    .await;

    let answer = sdk(&gateway, "openai", "py", Some(&url)).await;
    assert_eq!(classes(&answer["whole"])[0], "McpListTools", "{answer}");
    assert_eq!(answer["whole"][0]["tools"][0]["name"], "shout");
    assert_eq!(
        answer["whole_text"],
        "Let me check.The tool said: QUIET WORDS (shouted-7f3a)"
    );
    assert_eq!(answer["streamed_text"], answer["whole_text"]);

    let agent = sdk(&gateway, "agent", "py", Some(&url)).await;
    for run in ["whole", "streamed"] {
        let said = agent[run].as_str().unwrap_or_else(|| panic!("{agent}"));
        assert!(
            said.contains("QUIET WORDS (shouted-7f3a)"),
            "{run}: {agent}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_anthropic_sdk_reads_the_connectors_blocks_in_order_streamed_as_whole() {
    let Some(servers) = everything() else { return };
    let backend = caller_model("echo", json!({"message": "for anthropic"})).await;
    let gateway = gateway(&servers, &backend, "").await;
    let url = format!("{}/mcp/servers/everything", gateway.base_url());
    let answer = sdk(&gateway, "anthropic", "ev", Some(&url)).await;
    assert_eq!(
        classes(&answer["whole"]),
        [
            "BetaTextBlock",
            "BetaMCPToolUseBlock",
            "BetaMCPToolResultBlock",
            "BetaTextBlock"
        ],
        "{answer}"
    );
    assert_eq!(answer["whole"][1]["server_name"], "ev");
    assert_eq!(
        answer["whole"][2]["content"][0]["text"],
        "Echo: for anthropic"
    );
    assert_eq!(
        answer["whole"][3]["text"],
        "The tool said: Echo: for anthropic"
    );
    assert_eq!(answer["stop_reason"], "end_turn");
    assert_eq!(answer["streamed_stop_reason"], "end_turn");
    assert_eq!(
        comparable(&answer["streamed"]),
        comparable(&answer["whole"])
    );
}
