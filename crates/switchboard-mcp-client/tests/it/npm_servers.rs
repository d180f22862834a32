//! The reference MCP servers from npm (older protocol era: rmcp's `server/discover` probe
//! falls back to an `initialize` session): everything over stdio and Streamable HTTP,
//! filesystem and memory over stdio. Each is listed and called.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use switchboard_mcp_client::{UpstreamError, UpstreamState};

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio_lists_and_echoes_in_an_initialize_session() {
    let Some((node, entry)) = reference_server("everything") else {
        return;
    };
    let upstream = connected(stdio(
        "everything",
        &[&node, entry.to_str().unwrap(), "stdio"],
    ))
    .await;
    match upstream.state() {
        UpstreamState::Ready {
            protocol_version, ..
        } => assert_eq!(protocol_version, "2025-11-25"),
        other => panic!("{other:?}"),
    }
    let tools = upstream.tools();
    // The gateway declares no elicitation capability, so the server leaves out its tools
    // that would ask the user.
    assert!(
        tools
            .iter()
            .all(|tool| tool.name != "trigger-elicitation-request"),
        "{:?}",
        tools.iter().map(|tool| &tool.name).collect::<Vec<_>>()
    );
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    assert_eq!(echo.annotations.as_ref().unwrap()["readOnlyHint"], true);
    let output = upstream
        .call("echo", args(json!({"message": "hello upstream"})), None)
        .await
        .unwrap();
    assert!(!output.is_error);
    assert_eq!(output.text, "Echo: hello upstream");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_child_sees_only_its_configured_environment_plus_path_and_home() {
    let Some((node, entry)) = reference_server("everything") else {
        return;
    };
    // The test binary's own environment (CARGO_*, RUST_*) must not reach the child.
    let env = BTreeMap::from([("SB_CONFIGURED".to_owned(), "yes".to_owned())]);
    let upstream = connected(stdio_with_env(
        "everything",
        &[&node, entry.to_str().unwrap(), "stdio"],
        env,
    ))
    .await;
    let output = upstream
        .call("get-env", args(json!({})), None)
        .await
        .unwrap();
    let shown: Value = serde_json::from_str(output.text[output.text.find('{').unwrap()..].trim())
        .unwrap_or_else(|_| panic!("{}", output.text));
    let mut names: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["HOME", "PATH", "SB_CONFIGURED"], "{}", output.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_allow_list_filters_the_list_and_the_calls() {
    let Some((node, entry)) = reference_server("everything") else {
        return;
    };
    let mut config = stdio("everything", &[&node, entry.to_str().unwrap(), "stdio"]);
    config.tools = Some(vec!["echo".to_owned(), "get-*".to_owned()]);
    let upstream = connected(config).await;
    let names: Vec<String> = upstream.tools().into_iter().map(|tool| tool.name).collect();
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(names.contains(&"get-sum".to_owned()), "{names:?}");
    assert!(
        names
            .iter()
            .all(|name| name == "echo" || name.starts_with("get-")),
        "{names:?}"
    );
    let refused = upstream
        .call("trigger-long-running-operation", args(json!({})), None)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, UpstreamError::UnknownTool { .. }),
        "{refused}"
    );
    let sum = upstream
        .call("get-sum", args(json!({"a": 2, "b": 3})), None)
        .await
        .unwrap();
    assert!(sum.text.contains('5'), "{}", sum.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http_lists_and_echoes() {
    let Some((node, entry)) = reference_server("everything") else {
        return;
    };
    let port = free_port();
    let _server = Server::start(
        &node,
        &[entry.to_str().unwrap(), "streamableHttp"],
        &[("PORT", &port.to_string())],
        port,
    )
    .await;
    let headers = BTreeMap::from([("X-Upstream-Key".to_owned(), "k-123".to_owned())]);
    let upstream = connected(http(
        "everything",
        &format!("http://127.0.0.1:{port}/mcp"),
        headers,
    ))
    .await;
    assert!(upstream.tools().iter().any(|tool| tool.name == "echo"));
    let output = upstream
        .call("echo", args(json!({"message": "over http"})), None)
        .await
        .unwrap();
    assert_eq!(output.text, "Echo: over http");
    // The session stays open: a second call goes through it.
    let again = upstream
        .call("echo", args(json!({"message": "again"})), None)
        .await
        .unwrap();
    assert_eq!(again.text, "Echo: again");
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_reads_a_file_and_lists_a_directory() {
    let Some((node, entry)) = reference_server("filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
    let upstream = connected(stdio(
        "fs",
        &[&node, entry.to_str().unwrap(), root.to_str().unwrap()],
    ))
    .await;
    let names: Vec<String> = upstream.tools().into_iter().map(|tool| tool.name).collect();
    assert!(names.contains(&"read_text_file".to_owned()), "{names:?}");
    let file = root.join("notes.txt");
    let read = upstream
        .call(
            "read_text_file",
            args(json!({"path": file.to_str().unwrap()})),
            None,
        )
        .await
        .unwrap();
    assert!(!read.is_error, "{}", read.text);
    assert!(read.text.contains("second line"), "{}", read.text);
    let listing = upstream
        .call(
            "list_directory",
            args(json!({"path": root.to_str().unwrap()})),
            None,
        )
        .await
        .unwrap();
    assert!(listing.text.contains("notes.txt"), "{}", listing.text);
    // Outside its root the tool itself refuses: a tool error the model can read.
    let outside = upstream
        .call(
            "read_text_file",
            args(json!({"path": "/etc/hostname"})),
            None,
        )
        .await
        .unwrap();
    assert!(outside.is_error, "{}", outside.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_creates_entities_and_reads_them_back() {
    let Some((node, entry)) = reference_server("memory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.jsonl");
    let env = BTreeMap::from([(
        "MEMORY_FILE_PATH".to_owned(),
        file.to_str().unwrap().to_owned(),
    )]);
    let upstream = connected(stdio_with_env(
        "memory",
        &[&node, entry.to_str().unwrap()],
        env,
    ))
    .await;
    let created = upstream
        .call(
            "create_entities",
            args(json!({"entities": [{
                "name": "Switchboard",
                "entityType": "project",
                "observations": ["routes LLM calls"]
            }]})),
            None,
        )
        .await
        .unwrap();
    assert!(!created.is_error, "{}", created.text);
    let graph = upstream
        .call("read_graph", args(json!({})), None)
        .await
        .unwrap();
    assert!(graph.text.contains("routes LLM calls"), "{}", graph.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_restarted_behind_the_same_url_is_reopened_and_the_call_retried() {
    let Some((node, entry)) = reference_server("everything") else {
        return;
    };
    let port = free_port();
    let port_text = port.to_string();
    let arguments = [entry.to_str().unwrap(), "streamableHttp"];
    let env = [("PORT", port_text.as_str())];
    let server = Server::start(&node, &arguments, &env, port).await;
    let upstream = connected(http(
        "everything",
        &format!("http://127.0.0.1:{port}/mcp"),
        BTreeMap::new(),
    ))
    .await;
    let first = upstream
        .call("echo", args(json!({"message": "one"})), None)
        .await
        .unwrap();
    assert_eq!(first.text, "Echo: one");
    drop(server);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let _server = Server::start(&node, &arguments, &env, port).await;
    let second = upstream
        .call("echo", args(json!({"message": "two"})), None)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(second.text, "Echo: two");
}
