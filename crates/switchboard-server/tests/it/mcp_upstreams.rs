//! Upstream MCP servers through the gateway's `/mcp`: the reference servers from npm over
//! stdio and Streamable HTTP and a server on the official Python SDK, their tools served as
//! `{server}_{tool}` at `/mcp` and unprefixed at `/mcp/servers/{name}`, in both protocol
//! eras; arguments checked by the gateway before a call leaves; long and dotted names
//! shortened and mapped back; keys' `tools` globs on lists and calls alike; a server that
//! never answers costing its call a deadline, not the gateway its responsiveness; and what
//! an operator sees in `/healthz` and `/metrics`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::mcp::{Client, hear_list_changed, key, names, outcome};

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::mcp::{ServerProcess, free_port, python, reference_server, script};
use switchboard_testkit::{OpenAiScript, ScriptedServer};

const KEY: &str = "sk-sb-up-8pQrS3tUv4wXy5zAb6cDe7fGh8iJk9lMn0oP";
const ECHO_KEY: &str = "sk-sb-up-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2M";

/// A Python SDK server in the current era: one tool that adds, one with a 70-character
/// name, one with a dot in its name, and one that never answers.
const PYTHON_SERVER: &str = r#"
import sys, time
from mcp.server.mcpserver import MCPServer

app = MCPServer("py-tools")

@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b

@app.tool(name="look_up_the_current_weather_for_a_city_by_its_name_and_country_code_x")
def long_name(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"

@app.tool(name="v1.version")
def dotted() -> str:
    """The version."""
    return "1.2.3"

@app.tool()
def hang() -> str:
    """Never answers in time."""
    time.sleep(30)
    return "late"

app.run("streamable-http", stateless_http=True, host="127.0.0.1", port=int(sys.argv[1]))
"#;

/// The Python SDK server on a free port (and where it listens), or `None` (a SKIP, or a
/// failure under SWITCHBOARD_REQUIRE_PEERS) without Python's `mcp`.
async fn python_server() -> Option<(PythonServer, u16)> {
    let python = python(Some("mcp.server.mcpserver"))?;
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "server.py", PYTHON_SERVER);
    let port = free_port();
    let process = ServerProcess::start(&python, &[&path, &port.to_string()], &[], port).await;
    Some((
        PythonServer {
            _process: process,
            _script: dir,
        },
        port,
    ))
}

/// The server process and the folder of its script, both kept while the test runs.
struct PythonServer {
    _process: ServerProcess,
    _script: tempfile::TempDir,
}

/// An `[[mcp_server]]` entry.
fn server(name: &str, place: &str, extra: &str) -> String {
    format!("[[mcp_server]]\nname = \"{name}\"\n{place}\n{extra}\n")
}

/// `command = [...]` of a program and its arguments.
fn command(program: &str, args: &[&str]) -> String {
    let parts: Vec<String> = std::iter::once(program)
        .chain(args.iter().copied())
        .map(|part| serde_json::to_string(part).unwrap())
        .collect();
    format!("command = [{}]", parts.join(", "))
}

/// The reference servers as `[[mcp_server]]` entries, each named as the tests name it.
fn everything_server(node: &str, everything: &std::path::Path) -> String {
    server(
        "everything",
        &command(node, &[everything.to_str().unwrap(), "stdio"]),
        "",
    )
}

fn fs_server(node: &str, filesystem: &std::path::Path, root: &std::path::Path) -> String {
    server(
        "fs",
        &command(
            node,
            &[filesystem.to_str().unwrap(), root.to_str().unwrap()],
        ),
        "",
    )
}

/// The memory server, keeping its graph in `dir`.
fn memory_server(node: &str, memory: &std::path::Path, dir: &std::path::Path) -> String {
    server(
        "memory",
        &command(node, &[memory.to_str().unwrap()]),
        &format!(
            "env = {{ MEMORY_FILE_PATH = \"{}\" }}",
            dir.join("memory.jsonl").display()
        ),
    )
}

/// A gateway on `characters` with `settings` and one route to `backend`.
async fn gateway_on(characters: &std::path::Path, settings: &str, backend: &str) -> RunningGateway {
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{settings}\n{}",
        characters.display(),
        route("qwen", "openai", backend, "")
    );
    let config = Config::from_toml(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    RunningGateway::start(&config, &|_| None).await.unwrap()
}

async fn fetch_text(gateway: &RunningGateway, path: &str) -> String {
    client()
        .get(format!("{}{path}", gateway.base_url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `/healthz` once `done` says so of it, or after 30 s.
async fn health_when(gateway: &RunningGateway, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let health: Value = serde_json::from_str(&fetch_text(gateway, "/healthz").await).unwrap();
        if done(&health) || Instant::now() > deadline {
            return health;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn gateway(settings: &str) -> (RunningGateway, tempfile::TempDir) {
    let characters = tempfile::tempdir().unwrap();
    let gateway = gateway_on(characters.path(), settings, "http://127.0.0.1:9").await;
    (gateway, characters)
}

/// The tools `/mcp` lists once every server named has connected and listed its tools.
async fn tools_once_ready(mcp: &mut Client, servers: &[&str]) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let tools = mcp.tools().await;
        let ready = servers.iter().all(|server| {
            names(&tools)
                .iter()
                .any(|name| name.starts_with(&format!("{server}_")))
        });
        if ready {
            return tools;
        }
        assert!(
            Instant::now() < deadline,
            "servers {servers:?} not listed within 90 s: {:?}",
            names(&tools)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn text_of(message: &Value) -> String {
    let (text, is_error) = outcome(message);
    assert!(!is_error, "{message}");
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_servers_tools_are_served_prefixed_and_per_server() {
    let (Some((node, everything)), Some((_, filesystem)), Some((_, memory))) = (
        reference_server("everything"),
        reference_server("filesystem"),
        reference_server("memory"),
    ) else {
        return;
    };
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(notes.path().join("todo.txt"), "water the plants\n").unwrap();
    let graph = tempfile::tempdir().unwrap();
    let settings = [
        everything_server(&node, &everything),
        fs_server(&node, &filesystem, notes.path()),
        memory_server(&node, &memory, graph.path()),
    ]
    .concat();
    let (gateway, _characters) = gateway(&settings).await;
    let mut mcp = Client::modern(&gateway, "/mcp");
    let tools = tools_once_ready(&mut mcp, &["everything", "fs", "memory"]).await;
    let listed = names(&tools);
    for expected in [
        "everything_echo",
        "fs_read_text_file",
        "fs_list_directory",
        "memory_create_entities",
        "memory_read_graph",
    ] {
        assert!(listed.contains(&expected), "{expected} in {listed:?}");
    }
    let echo = tools
        .iter()
        .find(|tool| tool["name"] == "everything_echo")
        .unwrap();
    assert_eq!(echo["inputSchema"]["type"], "object", "{echo}");

    let answer = mcp
        .call("everything_echo", json!({"message": "through the gateway"}))
        .await;
    assert_eq!(text_of(&answer), "Echo: through the gateway");
    let path = notes.path().join("todo.txt");
    let answer = mcp
        .call("fs_read_text_file", json!({"path": path.to_str().unwrap()}))
        .await;
    assert_eq!(text_of(&answer), "water the plants\n");
    let answer = mcp
        .call(
            "memory_create_entities",
            json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}),
        )
        .await;
    text_of(&answer);
    let graph_text = text_of(&mcp.call("memory_read_graph", json!({})).await);
    assert!(
        graph_text.contains("wrote the first program"),
        "{graph_text}"
    );

    // The gateway checks arguments against the server's schema before a call leaves.
    let (text, is_error) = outcome(&mcp.call("everything_echo", json!({})).await);
    assert!(is_error);
    assert_eq!(text, "Error: Missing required parameter: message");

    // One server's tools, unprefixed, in the older era too.
    let mut fs = Client::legacy(&gateway, "/mcp/servers/fs").await;
    let fs_tools = fs.tools().await;
    let fs_names = names(&fs_tools);
    assert!(fs_names.contains(&"read_text_file"), "{fs_names:?}");
    assert!(
        fs_names.iter().all(|name| !name.starts_with("everything")),
        "{fs_names:?}"
    );
    let answer = fs
        .call(
            "list_directory",
            json!({"path": notes.path().to_str().unwrap()}),
        )
        .await;
    assert!(text_of(&answer).contains("todo.txt"));
    let unknown = fs.call("echo", json!({"message": "x"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let Some((node, everything)) = reference_server("everything") else {
        return;
    };
    let port = free_port();
    let _server = ServerProcess::start(
        &node,
        &[everything.to_str().unwrap(), "streamableHttp"],
        &[("PORT", &port.to_string())],
        port,
    )
    .await;
    let (gateway, _characters) = gateway(&server(
        "remote",
        &format!("url = \"http://127.0.0.1:{port}/mcp\""),
        "tools = [\"echo\", \"get-sum\"]",
    ))
    .await;
    let mut mcp = Client::modern(&gateway, "/mcp");
    let tools = tools_once_ready(&mut mcp, &["remote"]).await;
    // The server's own allow-list: the rest are never offered.
    assert_eq!(names(&tools), ["remote_echo", "remote_get-sum"]);
    let answer = mcp
        .call("remote_echo", json!({"message": "over http"}))
        .await;
    assert_eq!(text_of(&answer), "Echo: over http");
    let refused = mcp.call("remote_get-env", json!({})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn long_and_dotted_names_are_served_within_the_limit_and_map_back() {
    let Some((_server, port)) = python_server().await else {
        return;
    };
    let (gateway, _characters) = gateway(&server(
        "py",
        &format!("url = \"http://127.0.0.1:{port}/mcp\""),
        "call_timeout_secs = 1",
    ))
    .await;
    let mut mcp = Client::modern(&gateway, "/mcp");
    let tools = tools_once_ready(&mut mcp, &["py"]).await;
    let listed = names(&tools);
    assert!(listed.contains(&"py_add"), "{listed:?}");
    for name in &listed {
        assert!(
            name.len() <= 46
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let long = listed
        .iter()
        .find(|name| name.starts_with("py_look_up_the_current_weather"))
        .unwrap();
    assert_eq!(
        text_of(&mcp.call(long, json!({"city": "Lisbon"})).await),
        "sunny in Lisbon"
    );
    let dotted = listed
        .iter()
        .find(|name| name.starts_with("py_v1_version"))
        .unwrap();
    assert_eq!(text_of(&mcp.call(dotted, json!({})).await), "1.2.3");
    let answer = mcp.call("py_add", json!({"a": 2, "b": 40})).await;
    assert_eq!(text_of(&answer), "42");
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 42}));
    let (text, is_error) = outcome(&mcp.call("py_add", json!({"a": "two", "b": 1})).await);
    assert!(is_error);
    assert!(
        text.starts_with("Error: Invalid parameters - /a: "),
        "{text}"
    );

    // A call that never answers ends at the server's deadline; the gateway answers others
    // meanwhile.
    let started = Instant::now();
    let hanging = tokio::spawn({
        let mut mcp = Client::modern(&gateway, "/mcp");
        async move { mcp.call("py_hang", json!({})).await }
    });
    let health = client()
        .get(format!("{}/healthz", gateway.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(started.elapsed() < Duration::from_millis(900));
    let (text, is_error) = outcome(&hanging.await.unwrap());
    assert!(is_error);
    assert_eq!(text, "Error: tool server py did not answer within 1.0 s");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keys_tools_globs_filter_lists_and_calls_on_every_endpoint() {
    let Some((node, everything)) = reference_server("everything") else {
        return;
    };
    let settings = format!(
        "{}{}{}",
        key("all", KEY, ""),
        key("echo-only", ECHO_KEY, "tools = [\"everything_echo\"]"),
        everything_server(&node, &everything)
    );
    let (gateway, _characters) = gateway(&settings).await;
    let mut all = Client::modern(&gateway, "/mcp").with_key(KEY);
    let every = tools_once_ready(&mut all, &["everything"]).await;
    assert!(names(&every).contains(&"everything_get-sum"));
    for path in ["/mcp", "/mcp/servers/everything"] {
        let mut echo_only = Client::modern(&gateway, path).with_key(ECHO_KEY);
        let listed = echo_only.tools().await;
        let expected = if path == "/mcp" {
            "everything_echo"
        } else {
            "echo"
        };
        assert_eq!(names(&listed), [expected], "{path}");
        let answer = echo_only
            .call(expected, json!({"message": "allowed"}))
            .await;
        assert_eq!(text_of(&answer), "Echo: allowed");
        // Refused exactly like a tool that does not exist.
        let sum = if path == "/mcp" {
            "everything_get-sum"
        } else {
            "get-sum"
        };
        let refused = echo_only.call(sum, json!({"a": 1, "b": 2})).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let missing = echo_only.call("no_such_tool", json!({})).await;
        assert_eq!(missing["error"]["code"], -32602, "{missing}");
        assert_eq!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .replace(sum, "X"),
            missing["error"]["message"]
                .as_str()
                .unwrap()
                .replace("no_such_tool", "X"),
        );
    }
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_metrics_show_each_server() {
    let Some((node, everything)) = reference_server("everything") else {
        return;
    };
    let settings = [
        everything_server(&node, &everything),
        // A program that exits at once: down, its calls failing clearly.
        server("broken", &command("false", &[]), ""),
    ]
    .concat();
    let (gateway, _characters) = gateway(&settings).await;
    let mut mcp = Client::modern(&gateway, "/mcp");
    tools_once_ready(&mut mcp, &["everything"]).await;
    let answer = mcp.call("everything_echo", json!({"message": "m"})).await;
    text_of(&answer);
    let health = health_when(&gateway, |health| {
        let broken = &health["mcp_servers"][1]["state"];
        broken == "down" || broken == "restarting"
    })
    .await;
    assert_eq!(health["status"], "degraded", "{health}");
    let servers = health["mcp_servers"].as_array().unwrap();
    assert_eq!(servers[0]["name"], "everything");
    assert_eq!(servers[0]["state"], "ready", "{health}");
    assert!(servers[0]["tools"].as_u64().unwrap() > 5, "{health}");
    assert_eq!(servers[1]["name"], "broken");
    assert!(servers[1]["error"].is_string(), "{health}");
    let metrics = fetch_text(&gateway, "/metrics").await;
    assert!(
        metrics.contains(
            "gateway_mcp_tool_calls_total{mcp_server=\"everything\",tool=\"echo\",character=\"-\"}"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "gateway_mcp_tool_latency_seconds_bucket{mcp_server=\"everything\",tool=\"echo\""
        ),
        "{metrics}"
    );
    gateway.stop().await.unwrap();
}

/// A character whose tools all come from MCP servers: the files it reads, the memory it
/// keeps.
const LIBRARIAN: &str = r#"
export const CHARACTER_NAME = "Librarian";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/librarian.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You look things up.", language: "en" };
export const MCP_SERVERS = [{ server: "fs", tools: ["read_text_file", "list_*"] }, "memory"];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_character_uses_its_mcp_servers_tools_in_a_conversation() {
    let (Some((node, filesystem)), Some((_, memory))) =
        (reference_server("filesystem"), reference_server("memory"))
    else {
        return;
    };
    let notes = tempfile::tempdir().unwrap();
    let file = notes.path().join("todo.txt");
    std::fs::write(&file, "water the plants\n").unwrap();
    let graph = tempfile::tempdir().unwrap();
    let characters = tempfile::tempdir().unwrap();
    std::fs::write(characters.path().join("librarian.js"), LIBRARIAN).unwrap();
    let read = OpenAiScript::new()
        .tool_call(
            "call_librarianlibrarianlibra1",
            "fs_read_text_file",
            &[&json!({"path": file.to_str().unwrap()}).to_string()],
        )
        .finish("tool_calls", 100, 20);
    let remember = OpenAiScript::new()
        .tool_call(
            "call_librarianlibrarianlibra2",
            "memory_create_entities",
            &[r#"{"entities": [{"name": "plants", "entityType": "chore", "observations": ["need water"]}]}"#],
        )
        .finish("tool_calls", 120, 20);
    let words = OpenAiScript::new()
        .text("Your list says: water the plants.")
        .finish("stop", 150, 10);
    let backend = ScriptedServer::start(vec![read.reply(), remember.reply(), words.reply()]).await;
    let settings = format!(
        "{}{}",
        fs_server(&node, &filesystem, notes.path()),
        memory_server(&node, &memory, graph.path())
    );
    let gateway = gateway_on(characters.path(), &settings, &backend.base).await;
    // Both servers connected: their tools are listed at /mcp.
    tools_once_ready(&mut Client::modern(&gateway, "/mcp"), &["fs", "memory"]).await;

    let response = client()
        .post(format!("{}/v1/chat/completions", gateway.base_url()))
        .header("x-switchboard-character-events", "true")
        .json(&json!({"model": "character/librarian", "messages": [
            {"role": "user", "content": "What is on my list?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let whole: Value = response.json().await.unwrap();
    assert_eq!(
        whole["choices"][0]["message"]["content"], "Your list says: water the plants.",
        "{whole}"
    );

    // The model was offered the servers' tools its entries allow, and nothing else.
    let first = sent(&backend, 0);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"fs_read_text_file"), "{offered:?}");
    assert!(offered.contains(&"fs_list_directory"), "{offered:?}");
    assert!(!offered.contains(&"fs_write_file"), "{offered:?}");
    assert!(offered.contains(&"memory_create_entities"), "{offered:?}");
    // Each result went back to the model.
    let second = sent(&backend, 1);
    let result = last_sent(&backend, 1);
    assert_eq!(result["role"], "tool", "{second}");
    assert_eq!(result["content"], "water the plants\n");
    let result = last_sent(&backend, 2);
    assert_eq!(result["tool_call_id"], "call_librarianlibrarianlibra2");
    assert!(
        result["content"].as_str().unwrap().contains("plants"),
        "{result}"
    );

    // The tool cards a client (the playground) shows.
    let events = whole["character_events"].as_array().unwrap();
    let finished: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{events:?}");
    assert_eq!(finished[0]["name"], "fs_read_text_file");
    assert_eq!(finished[0]["content"], "water the plants\n");
    assert_eq!(finished[0]["is_error"], false);

    // Its endpoint serves what its model is offered.
    let mut own = Client::modern(&gateway, "/mcp/characters/librarian");
    let served = own.tools().await;
    let served = names(&served);
    assert!(served.contains(&"fs_read_text_file"), "{served:?}");
    assert!(!served.contains(&"fs_write_file"), "{served:?}");
    let answer = own
        .call("fs_read_text_file", json!({"path": file.to_str().unwrap()}))
        .await;
    assert_eq!(text_of(&answer), "water the plants\n");

    let metrics = fetch_text(&gateway, "/metrics").await;
    assert!(
        metrics.contains(
            "gateway_mcp_tool_calls_total{mcp_server=\"fs\",tool=\"read_text_file\",character=\"Librarian\"} 1"
        ),
        "{metrics}"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_adds_keeps_and_removes_servers() {
    let (Some((node, everything)), Some((_, memory))) =
        (reference_server("everything"), reference_server("memory"))
    else {
        return;
    };
    let graph = tempfile::tempdir().unwrap();
    let everything = everything_server(&node, &everything);
    let memory = memory_server(&node, &memory, graph.path());
    let (gateway, characters) = gateway(&everything).await;
    let mut mcp = Client::modern(&gateway, "/mcp");
    tools_once_ready(&mut mcp, &["everything"]).await;
    // A client of the older era listening on its session's stream.
    let listener = Client::legacy(&gateway, "/mcp").await;
    let mut stream = listener.listen().await;
    let config_with = |servers: &str| {
        Config::from_toml(&format!(
            "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{servers}\n{}",
            characters.path().display(),
            route("qwen", "openai", "http://127.0.0.1:9", "")
        ))
        .unwrap()
    };
    let reloaded = gateway
        .state
        .reload(config_with(&format!("{everything}{memory}")), &|_| None)
        .unwrap();
    assert!(
        reloaded
            .to_string()
            .ends_with(", 2 MCP server(s) (added memory)"),
        "{reloaded}"
    );
    hear_list_changed(&mut stream).await;
    drop(stream);
    let tools = tools_once_ready(&mut mcp, &["everything", "memory"]).await;
    assert!(names(&tools).contains(&"memory_read_graph"));
    // The server the reload kept answers on its running connection at once.
    let answer = mcp
        .call("everything_echo", json!({"message": "kept"}))
        .await;
    assert_eq!(text_of(&answer), "Echo: kept");

    let reloaded = gateway
        .state
        .reload(config_with(&memory), &|_| None)
        .unwrap();
    assert!(
        reloaded
            .to_string()
            .ends_with(", 1 MCP server(s) (removed everything)"),
        "{reloaded}"
    );
    let tools = mcp.tools().await;
    assert!(
        names(&tools).iter().all(|name| name.starts_with("memory_")),
        "{:?}",
        names(&tools)
    );
    let gone = mcp.call("everything_echo", json!({"message": "x"})).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_come_from_the_environment_and_never_show() {
    let port = free_port();
    let settings = server(
        "search",
        &format!("url = \"http://127.0.0.1:{port}/mcp\""),
        "headers = { authorization = \"Bearer ${SEARCH_TOKEN}\" }\ncall_timeout_secs = 2",
    );
    let text = format!(
        "listen = \"127.0.0.1:0\"\n{settings}\n{}",
        route("qwen", "openai", "http://127.0.0.1:9", "")
    );
    let config = Config::from_toml(&text).unwrap();
    let missing = RunningGateway::start(&config, &|_| None).await.unwrap_err();
    assert!(
        missing.contains(
            "mcp_server[0] (\"search\").headers.authorization: the environment variable SEARCH_TOKEN is not set"
        ),
        "{missing}"
    );
    let secret = "tok-5ecret-never-shown";
    let gateway = RunningGateway::start(&config, &|name| {
        (name == "SEARCH_TOKEN").then(|| secret.to_owned())
    })
    .await
    .unwrap();
    // Nothing listens there: the server is down, and says why without the credential.
    let health = health_when(&gateway, |health| {
        health["mcp_servers"][0]["state"] != "starting"
    })
    .await;
    assert_ne!(health["mcp_servers"][0]["state"], "ready", "{health}");
    assert!(!health.to_string().contains(secret), "{health}");
    let metrics = fetch_text(&gateway, "/metrics").await;
    assert!(!metrics.contains(secret));
    gateway.stop().await.unwrap();
}

/// A character whose tools are the Python server's.
const FORECASTER: &str = r#"
export const CHARACTER_NAME = "Forecaster";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/forecaster.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You forecast.", language: "en" };
export const MCP_SERVERS = ["py"];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn long_and_dotted_names_reach_a_model_as_function_names_and_map_back() {
    let Some((_server, port)) = python_server().await else {
        return;
    };
    let characters = tempfile::tempdir().unwrap();
    std::fs::write(characters.path().join("forecaster.js"), FORECASTER).unwrap();
    // The model calls each of the server's two odd tools by the name it was offered, then
    // answers with what they returned.
    let backend = ScriptedServer::responding(|request| {
        let body = &request.body;
        let messages = body["messages"].as_array().unwrap();
        let offered = |prefix: &str| {
            body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .find(|name| name.starts_with(prefix))
                .unwrap()
        };
        let reply = match messages
            .iter()
            .filter(|message| message["role"] == "tool")
            .count()
        {
            0 => OpenAiScript::new()
                .tool_call(
                    "call_forecasterforecasterfo1",
                    &offered("py_look_up_the_current_weather"),
                    &[r#"{"city": "Lisbon"}"#],
                )
                .finish("tool_calls", 10, 2),
            1 => OpenAiScript::new()
                .tool_call(
                    "call_forecasterforecasterfo2",
                    &offered("py_v1_version"),
                    &["{}"],
                )
                .finish("tool_calls", 10, 2),
            _ => OpenAiScript::new()
                .text("Sunny, version 1.2.3.")
                .finish("stop", 10, 2),
        };
        reply.reply()
    })
    .await;
    let gateway = gateway_on(
        characters.path(),
        &server("py", &format!("url = \"http://127.0.0.1:{port}/mcp\""), ""),
        &backend.base,
    )
    .await;
    tools_once_ready(&mut Client::modern(&gateway, "/mcp"), &["py"]).await;
    let answer = post(
        &gateway,
        &json!({"model": "character/forecaster", "messages": [{"role": "user", "content": "Weather?"}]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.json()["choices"][0]["message"]["content"],
        "Sunny, version 1.2.3."
    );
    let offered: Vec<String> = sent(&backend, 0)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for name in &offered {
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name} in {offered:?}"
        );
    }
    let results: Vec<Value> = [1, 2]
        .iter()
        .map(|index| last_sent(&backend, *index))
        .collect();
    assert_eq!(results[0]["content"], "sunny in Lisbon", "{results:?}");
    assert_eq!(results[1]["content"], "1.2.3", "{results:?}");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_character_whose_server_is_down_loads_and_its_calls_say_why() {
    let characters = tempfile::tempdir().unwrap();
    std::fs::write(
        characters.path().join("librarian.js"),
        LIBRARIAN.replace(
            r#"[{ server: "fs", tools: ["read_text_file", "list_*"] }, "memory"]"#,
            r#"["fs"]"#,
        ),
    )
    .unwrap();
    let call = OpenAiScript::new()
        .tool_call(
            "call_librarianlibrarianlibra1",
            "fs_read_text_file",
            &[r#"{"path": "/x"}"#],
        )
        .finish("tool_calls", 10, 2);
    let words = OpenAiScript::new()
        .text("The shelf is closed.")
        .finish("stop", 10, 2);
    let backend = ScriptedServer::start(vec![call.reply(), words.reply()]).await;
    // A program that exits at once: the server never connects.
    let gateway = gateway_on(
        characters.path(),
        &server("fs", &command("false", &[]), ""),
        &backend.base,
    )
    .await;
    let answer = post(
        &gateway,
        &json!({"model": "character/librarian", "messages": [{"role": "user", "content": "Read."}]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let result = last_sent(&backend, 1);
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with("Error: tool server fs is unavailable: "),
        "{content}"
    );
    gateway.stop().await.unwrap();
}
