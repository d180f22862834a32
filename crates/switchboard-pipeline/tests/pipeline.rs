//! The pipeline on its own, built from plain settings as the server builds it (no HTTP
//! server): a scripted OpenAI-compatible backend on a real socket, an MCP server of the
//! test's own (Python speaking JSON-RPC on stdio) and characters from files. Covers the
//! tool loop's bounds (`max_tool_rounds`, `max_tool_conversation_bytes`), approvals, route
//! fallbacks, a character's turn running its own tool, a round's calls running at once,
//! and the catalog: the names and the key's filter agree between `/mcp`'s listing, a
//! character's toolbox and a request naming the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_characters::{CharacterRegistry, LoadOptions};
use switchboard_pipeline::catalog::{Catalog, Scope};
use switchboard_pipeline::ids::CallIdShape;
use switchboard_pipeline::tool_servers::{CharacterToolbox, McpServerConfig, ToolServers};
use switchboard_pipeline::{
    Answer, Asked, GatewayEvent, GatewayRequest, Pipeline, Settings, ToolFilter, collect_with,
    compile_tools,
};
use switchboard_runtime::{ToolEvent, ToolExecutor};
use switchboard_testkit::mcp::{python, script};
use switchboard_testkit::{Captured, OpenAiScript, ScriptedServer, message_text};
use switchboard_tools::Message;
use switchboard_tools::names::{self, MODEL_MAX_CHARS};
use switchboard_upstream::{ClientHooks, Route, RouteConfig, RouteTable};
use switchboard_wire::mcp::{Approval, McpServerRequest};
use switchboard_wire::{ChatRequest, FinishReason};
use tokio_util::sync::CancellationToken;

/// A tool whose name, prefixed with its server's, is past what model APIs accept.
const LONG: &str = "a_tool_whose_name_runs_on_and_on_well_past_what_any_model_api_will_ever_take";

/// `echo` answers `echo: {text}`; `dump` 5,000 bytes; `slow` takes 0.3 s on a thread of its
/// own and answers the most calls of it that ever ran at once; `LONG` answers `long`.
const SERVER: &str = r#"
import json, sys, threading, time

out = sys.stdout.buffer
lock = threading.Lock()
seen = {"running": 0, "peak": 0}
empty = {"type": "object"}
tools = [
    {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object",
        "properties": {"text": {"type": "string"}}}},
    {"name": "dump", "description": "5,000 bytes", "inputSchema": empty},
    {"name": "slow", "description": "Takes 0.3 s", "inputSchema": empty},
    {"name": sys.argv[1], "description": "Long", "inputSchema": empty},
]

def send(message):
    with lock:
        out.write((json.dumps(message) + "\n").encode())
        out.flush()

def answer(id, words):
    send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": words}]}})

def slow(id):
    with lock:
        seen["running"] += 1
        seen["peak"] = max(seen["peak"], seen["running"])
    time.sleep(0.3)
    with lock:
        seen["running"] -= 1
        peak = seen["peak"]
    answer(id, "peak %d" % peak)

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    id, method = message.get("id"), message.get("method")
    if id is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
    elif method == "tools/call":
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        if name == "echo":
            answer(id, "echo: " + str(arguments.get("text", "")))
        elif name == "dump":
            answer(id, "d" * 5000)
        elif name == "slow":
            threading.Thread(target=slow, args=(id,), daemon=True).start()
        else:
            answer(id, "long")
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"#;

/// A character with a tool of its own that uses server `py`.
const SCOUT: &str = r#"
export const CHARACTER_NAME = "Scout";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/scout.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You scout.", language: "en" };
export const TOOLS = [
  { type: "function", function: { name: "note", description: "Notes", parameters: { type: "object", properties: {} } } },
  { type: "function", function: { name: "secret", description: "Hidden", parameters: { type: "object", properties: {} } } },
];
export const MCP_SERVERS = ["py"];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
  handleToolCall(toolName) { return `noted by ${toolName}`; }
}
"#;

/// The repository's characters.
fn repository_characters() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../characters")
}

/// The pipeline one configuration would build: `routes` (route settings as the file
/// spells them), the MCP server `py` when `server` is given (the Python program's path),
/// the characters of `characters`, characters talking through the first route.
async fn pipeline(routes: Value, server: Option<&str>, characters: &Path) -> Pipeline {
    let configs: Vec<RouteConfig> = serde_json::from_value(routes).unwrap();
    let timeout = Duration::from_secs(30);
    let built = configs
        .iter()
        .map(|config| {
            Arc::new(
                Route::from_config(config, timeout, &|_| None, &ClientHooks::default()).unwrap(),
            )
        })
        .collect();
    let routes = RouteTable::new(&configs, None, built).unwrap();
    let servers: Vec<McpServerConfig> = match server {
        Some(path) => serde_json::from_value(json!([{
            "name": "py",
            "command": [python(None).unwrap(), "-u", path, LONG],
        }]))
        .unwrap(),
        None => Vec::new(),
    };
    let tool_servers = ToolServers::build(&servers, &|_| None, None).unwrap();
    for server in tool_servers.all() {
        server.ready().await.unwrap();
        assert!(!server.offered().is_empty(), "{:?}", server.unavailable());
    }
    let characters = Arc::new(CharacterRegistry::load(
        characters,
        LoadOptions {
            mcp_servers: Some(vec!["py".to_owned()]),
            ..LoadOptions::default()
        },
    ));
    Pipeline {
        character_route: routes.all().first().cloned(),
        routes,
        characters,
        tool_servers,
        settings: Settings {
            request_timeout: timeout,
            max_answer_bytes: 1 << 20,
            character_max_tokens: 512,
            upstream_header: false,
            mcp_allowed_urls: Vec::new(),
        },
        hard_stop: CancellationToken::new(),
    }
}

/// One route `local` to `backend`, with `extra` settings.
fn route(name: &str, backend: &str, extra: Value) -> Value {
    let mut route = json!({
        "name": name,
        "provider": "openai",
        "url": format!("{backend}/v1"),
        "model": "m",
    });
    route
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    route
}

/// The Python server's path in `dir`; `None` (the test skips) without Python.
fn server_script(dir: &Path) -> Option<String> {
    python(None)?;
    Some(script(dir, "server.py", SERVER))
}

/// A model that calls `tool` with `arguments`, `calls` times in each answer, until the
/// last message is a tool result; then (unless `forever`) it says what the result said.
async fn calling_model(
    tool: &'static str,
    arguments: Value,
    calls: usize,
    forever: bool,
) -> ScriptedServer {
    ScriptedServer::responding(move |request: &Captured| {
        let messages = request.body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        if !forever && last["role"] == "tool" {
            return OpenAiScript::new()
                .text(&format!("The tool said: {}", message_text(last)))
                .finish("stop", 20, 7)
                .reply();
        }
        let mut script = OpenAiScript::new();
        for call in 0..calls {
            let id = format!("call_{}_{call}", messages.len());
            script = script.tool_call(&id, tool, &[&arguments.to_string()]);
        }
        script.finish("tool_calls", 10, 5).reply()
    })
    .await
}

/// Runs `model`'s request (one user message; `servers` the MCP servers it names) with
/// `filter` as the key's, and waits for the whole answer.
async fn ask(
    pipeline: &Pipeline,
    model: &str,
    servers: &[McpServerRequest],
    filter: ToolFilter,
) -> Answer {
    let target = pipeline.resolve(model).unwrap();
    let gateway = pipeline
        .gateway_tools(
            &target,
            Asked {
                servers,
                taken: Default::default(),
                filter: filter.clone(),
                max_calls: None,
            },
        )
        .await
        .unwrap();
    let request = GatewayRequest {
        target,
        request: ChatRequest::new(model, vec![Message::user("Go on.")]),
        tools: compile_tools(&json!([])).unwrap(),
        call_ids: CallIdShape::OpenAi,
        gateway,
        tool_filter: filter,
    };
    let started = pipeline.start(request).unwrap();
    collect_with(started.outputs, |_| {}).await.unwrap()
}

/// The server `py` as a request names it.
fn named_py(approval: Approval) -> McpServerRequest {
    McpServerRequest {
        label: "py".to_owned(),
        url: None,
        description: None,
        allowed_tools: None,
        excluded_tools: Vec::new(),
        deferred: Default::default(),
        read_only: false,
        approval,
        headers: Vec::new(),
        path: "tools[0]".to_owned(),
    }
}

/// The finished tool events of an answer: (name, content, is_error).
fn finished(answer: &Answer) -> Vec<(String, String, bool)> {
    answer
        .gateway_events
        .iter()
        .filter_map(|event| match event {
            GatewayEvent::Tool {
                event:
                    ToolEvent::ToolFinished {
                        name,
                        content,
                        is_error,
                        ..
                    },
                ..
            } => Some((name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_runs_its_servers_tool_and_answers_with_what_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    let backend = calling_model("echo", json!({"text": "hello"}), 1, false).await;
    let pipeline = pipeline(
        json!([route(
            "local",
            &backend.base,
            json!({"mcp_servers": ["py"]})
        )]),
        Some(&server),
        dir.path(),
    )
    .await;
    let answer = ask(&pipeline, "local", &[], ToolFilter::all()).await;
    assert_eq!(answer.response.finish_reason, FinishReason::Stop);
    assert_eq!(
        answer.response.content.as_deref(),
        Some("The tool said: echo: hello")
    );
    assert_eq!(
        finished(&answer),
        vec![("echo".to_owned(), "echo: hello".to_owned(), false)]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tool_rounds_ends_a_model_that_never_stops_calling_with_tool_limit() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    let backend = calling_model("echo", json!({"text": "again"}), 1, true).await;
    let pipeline = pipeline(
        json!([route(
            "local",
            &backend.base,
            json!({"mcp_servers": ["py"], "max_tool_rounds": 3})
        )]),
        Some(&server),
        dir.path(),
    )
    .await;
    let answer = ask(&pipeline, "local", &[], ToolFilter::all()).await;
    assert_eq!(answer.response.finish_reason, FinishReason::ToolLimit);
    assert_eq!(finished(&answer).len(), 3, "{:?}", finished(&answer));
    assert_eq!(backend.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tool_conversation_bytes_ends_a_loop_whose_results_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    let backend = calling_model("dump", json!({}), 1, true).await;
    let pipeline = pipeline(
        json!([route(
            "local",
            &backend.base,
            json!({"mcp_servers": ["py"], "max_tool_rounds": 50,
                "max_tool_conversation_bytes": 12_000})
        )]),
        Some(&server),
        dir.path(),
    )
    .await;
    let answer = ask(&pipeline, "local", &[], ToolFilter::all()).await;
    // The conversation is full: the answer ends as one that ran out of room.
    assert_eq!(answer.response.finish_reason, FinishReason::Length);
    // 5,000 bytes a result: the third passes 12,000, and no fourth round is asked for.
    let rounds = backend.requests().len();
    assert!((2..=3).contains(&rounds), "{rounds} rounds");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_needs_approval_ends_the_answer_unrun() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    let backend = calling_model("echo", json!({"text": "may I"}), 1, false).await;
    let pipeline = pipeline(
        json!([route("local", &backend.base, json!({}))]),
        Some(&server),
        dir.path(),
    )
    .await;
    let answer = ask(
        &pipeline,
        "local",
        &[named_py(Approval::Always)],
        ToolFilter::all(),
    )
    .await;
    let asked: Vec<_> = answer
        .gateway_events
        .iter()
        .filter_map(|event| match event {
            GatewayEvent::ApprovalRequest {
                source, arguments, ..
            } => Some((
                source.server.clone(),
                source.tool.clone(),
                arguments.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec![(
            "py".to_owned(),
            "echo".to_owned(),
            json!({"text": "may I"}).to_string()
        )]
    );
    assert!(finished(&answer).is_empty(), "{:?}", finished(&answer));
    assert_eq!(answer.response.finish_reason, FinishReason::Stop);
    assert_eq!(backend.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_whose_backend_fails_falls_back_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let failing = ScriptedServer::responding(|_: &Captured| {
        switchboard_testkit::Reply::json(503, &json!({"error": {"message": "overloaded"}}))
    })
    .await;
    let backup = ScriptedServer::responding(|_: &Captured| {
        OpenAiScript::new()
            .text("from the backup")
            .finish("stop", 3, 3)
            .reply()
    })
    .await;
    let pipeline = pipeline(
        json!([
            route(
                "first",
                &failing.base,
                json!({"retries": 0, "fallbacks": ["backup"]})
            ),
            route("backup", &backup.base, json!({})),
        ]),
        None,
        dir.path(),
    )
    .await;
    let answer = ask(&pipeline, "first", &[], ToolFilter::all()).await;
    assert_eq!(answer.response.content.as_deref(), Some("from the backup"));
    assert_eq!(failing.requests().len(), 1);
    assert_eq!(backup.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_characters_turn_runs_its_own_tool_in_its_sandbox() {
    let backend = calling_model("roll_dice", json!({"count": 2, "sides": 6}), 1, false).await;
    let pipeline = pipeline(
        json!([route("local", &backend.base, json!({}))]),
        None,
        &repository_characters(),
    )
    .await;
    let answer = ask(&pipeline, "character/game-master", &[], ToolFilter::all()).await;
    assert!(matches!(
        answer.gateway_events.first(),
        Some(GatewayEvent::SystemPrompt { content }) if content.contains("game master")
    ));
    let finished = finished(&answer);
    assert_eq!(finished.len(), 1, "{finished:?}");
    let (name, content, is_error) = &finished[0];
    assert!(name == "roll_dice" && !is_error, "{finished:?}");
    assert!(content.starts_with("Rolled 2d6: "), "{content}");
    assert_eq!(
        answer.response.content.as_deref(),
        Some(format!("The tool said: {content}").as_str())
    );
    // The model was offered the character's tools, and asked again with the result.
    let requests = backend.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["roll_dice", "record_score", "get_scoreboard"]);
    assert_eq!(requests.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rounds_calls_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    let backend = calling_model("slow", json!({}), 4, false).await;
    let pipeline = pipeline(
        json!([route(
            "local",
            &backend.base,
            json!({"mcp_servers": ["py"]})
        )]),
        Some(&server),
        dir.path(),
    )
    .await;
    let started = std::time::Instant::now();
    let answer = ask(&pipeline, "local", &[], ToolFilter::all()).await;
    let finished = finished(&answer);
    assert_eq!(finished.len(), 4, "{finished:?}");
    // Four calls of 0.3 s each, one after the other, would take 1.2 s.
    let peak = finished
        .iter()
        .filter_map(|(_, content, _)| content.strip_prefix("peak ")?.parse::<u32>().ok())
        .max()
        .unwrap();
    assert!(peak >= 2, "at most {peak} ran at once");
    assert!(started.elapsed() < Duration::from_millis(1200));
}

/// A key's `tools` globs, as the server applies them: against the name `/mcp` serves.
fn key_filter(globs: Vec<String>, max_chars: usize) -> ToolFilter {
    ToolFilter::served(
        move |served| {
            globs.iter().any(|glob| match glob.strip_suffix('*') {
                Some(prefix) => served.starts_with(prefix),
                None => served == glob,
            })
        },
        max_chars,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_catalog_gives_mcp_a_character_and_a_request_the_same_names_and_filter() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = server_script(dir.path()) else {
        return;
    };
    std::fs::write(dir.path().join("scout.js"), SCOUT).unwrap();
    let backend = ScriptedServer::responding(|_: &Captured| {
        OpenAiScript::new().text("ok").finish("stop", 1, 1).reply()
    })
    .await;
    let pipeline = pipeline(
        json!([route("local", &backend.base, json!({}))]),
        Some(&server),
        dir.path(),
    )
    .await;
    // `/mcp`'s names are cut to 46 characters; the key names the long tool by its served
    // name there, and leaves out `dump`, `slow` and the character's own `secret`.
    let max = 46;
    let long_served = names::served(&format!("py_{LONG}"), max).into_owned();
    let filter = key_filter(
        vec!["scout_note".into(), "py_echo".into(), long_served.clone()],
        max,
    );

    // `/mcp`: every tool by its catalog name.
    let scout = pipeline.characters.get("scout").unwrap();
    let catalog = Catalog::new(pipeline.tool_servers.all());
    let at_mcp: Vec<String> = catalog
        .list(Scope::All(&[Arc::clone(&scout)]), &filter)
        .iter()
        .map(|entry| entry.served(max).into_owned())
        .collect();
    assert_eq!(at_mcp, ["scout_note", "py_echo", long_served.as_str()]);

    // A character's turn: what its model is offered.
    let session = scout.start_conversation().await.unwrap();
    let toolbox =
        CharacterToolbox::new(session, &pipeline.tool_servers.declared_by(&scout), &filter);
    let in_turn: Vec<String> = toolbox
        .definitions()
        .iter()
        .map(|definition| definition.name().to_owned())
        .collect();
    // Past 64 characters, a name given to a model is its catalog name cut by the same rule.
    let long_for_models = names::served(&format!("py_{LONG}"), MODEL_MAX_CHARS).into_owned();
    assert_eq!(in_turn, ["note", "py_echo", long_for_models.as_str()]);

    // A request naming the server: the same tools of it, offered to the model.
    let answer = ask(&pipeline, "local", &[named_py(Approval::Never)], filter).await;
    assert_eq!(answer.response.content.as_deref(), Some("ok"));
    let listed: Vec<String> = answer
        .gateway_events
        .iter()
        .find_map(|event| match event {
            GatewayEvent::ToolList(listing) => {
                Some(listing.tools.iter().map(|tool| tool.name.clone()).collect())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(listed, ["echo", LONG]);
    let offered: Vec<String> = backend.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered, ["echo", long_for_models.as_str()]);
}
