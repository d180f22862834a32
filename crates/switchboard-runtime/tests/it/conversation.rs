//! Conversations end to end over loopback: a scripted OpenAI-compatible server answering as
//! a real model would, the real OpenAI client, and the repository's real characters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_characters::{LoadOptions, load_characters};
use switchboard_providers::{BackendConfig, BackendError, OpenAiBackend};
use switchboard_runtime::{
    Conversation, ConversationOptions, ToolEvent, ToolExecutor, TurnError, TurnEvent,
};
use switchboard_testkit::{OpenAiScript, Reply, ScriptedServer};
use switchboard_wire::FinishReason;

/// Log lines written by tracing during a test, including the characters' console output.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

async fn conversation_with(
    character: &str,
    server: &ScriptedServer,
    options: ConversationOptions,
) -> Conversation {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../characters");
    let loaded = load_characters(&dir, &LoadOptions::default());
    let character = loaded
        .get(character)
        .unwrap_or_else(|| panic!("{character} loads: {:?}", loaded.rejections))
        .clone();
    let session = character.start_conversation().await.unwrap();
    let prompt = session.system_prompt().to_owned();
    let backend = Arc::new(OpenAiBackend::new(BackendConfig::new(&server.base)).unwrap());
    Conversation::new(
        Some(prompt),
        Arc::new(session) as Arc<dyn ToolExecutor>,
        backend,
        "scripted-model",
        options,
    )
}

async fn narrator(server: &ScriptedServer) -> Conversation {
    conversation_with("narrator", server, ConversationOptions::default()).await
}

fn collect() -> (Arc<Mutex<Vec<TurnEvent>>>, impl FnMut(TurnEvent) + Send) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    (events, move |event| sink.lock().unwrap().push(event))
}

fn texts(events: &[TurnEvent]) -> String {
    events
        .iter()
        .filter_map(|event| {
            if let TurnEvent::Text(text) = event {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect()
}

fn roles(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_narrator_logs_a_story_event_and_keeps_talking() {
    let (logs, _guard) = capture_logs();
    let server = ScriptedServer::start(vec![
        OpenAiScript::new()
            .text("The bridge gives way. ")
            .tool_call(
                "call_fall",
                "log_story_event",
                &[
                    "{\"event\": \"The hero",
                    " fell\", \"importance\": \"high\"}",
                ],
            )
            .finish("tool_calls", 120, 30)
            .reply(),
        OpenAiScript::new()
            .text("Darkness swallows ")
            .text("him.")
            .finish("stop", 180, 12)
            .reply(),
        OpenAiScript::new()
            .text("He wakes up.")
            .finish("stop", 200, 5)
            .reply(),
    ])
    .await;
    let mut conversation = narrator(&server).await;
    let (events, mut sink) = collect();
    let summary = conversation
        .send("What happens on the bridge?", &mut sink)
        .await
        .unwrap();

    let events = events.lock().unwrap().clone();
    assert_eq!(
        texts(&events),
        "The bridge gives way. Darkness swallows him."
    );
    assert_eq!(
        summary.reply,
        "The bridge gives way. Darkness swallows him."
    );
    assert_eq!((summary.tool_rounds, summary.tool_calls), (1, 1));
    assert_eq!(summary.usage.prompt_tokens, 300);
    assert_eq!(summary.usage.total_tokens, 342);
    let finished: Vec<&TurnEvent> = events
        .iter()
        .filter(|event| matches!(event, TurnEvent::Tool(ToolEvent::ToolFinished { .. })))
        .collect();
    assert_eq!(finished.len(), 1, "the tool ran once");
    let TurnEvent::Tool(ToolEvent::ToolFinished {
        id,
        name,
        content,
        is_error,
        ..
    }) = finished[0]
    else {
        unreachable!()
    };
    assert_eq!(
        (id.as_str(), name.as_str(), content.as_str(), *is_error),
        (
            "call_fall",
            "log_story_event",
            "Logged story event: The hero fell",
            false
        )
    );
    assert!(
        logs.text()
            .contains("[NARRATOR EVENT] [HIGH] The hero fell"),
        "{}",
        logs.text()
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["tools"][0]["function"]["name"], "log_story_event");
    assert_eq!(first["tool_choice"], "auto");
    assert_eq!(roles(first), ["system", "user"]);
    let second = &requests[1].body;
    assert_eq!(roles(second), ["system", "user", "assistant", "tool"]);
    let assistant = &second["messages"][2];
    assert_eq!(assistant["content"], "The bridge gives way. ");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_fall");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"event\": \"The hero fell\", \"importance\": \"high\"}"
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_fall", "content": "Logged story event: The hero fell"})
    );
    assert!(
        second["tools"].is_array(),
        "tools stay available after a round"
    );

    let (_, mut sink) = collect();
    conversation.send("And then?", &mut sink).await.unwrap();
    let third = &server.requests()[2].body;
    assert_eq!(
        roles(third),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(third["messages"][3]["tool_call_id"], "call_fall");
    assert_eq!(third["messages"][4]["content"], "Darkness swallows him.");
}

#[tokio::test]
async fn parallel_calls_all_run_and_answer_in_call_order() {
    let server = ScriptedServer::start(vec![
        OpenAiScript::new()
            .tool_call("call_a", "log_story_event", &["{\"event\": \"A\"}"])
            .tool_call(
                "call_b",
                "log_story_event",
                &["{\"event\": \"B\", \"importance\": \"low\"}"],
            )
            .finish("tool_calls", 10, 10)
            .reply(),
        OpenAiScript::new()
            .text("Both logged.")
            .finish("stop", 10, 3)
            .reply(),
    ])
    .await;
    let mut conversation = narrator(&server).await;
    let (events, mut sink) = collect();
    let summary = conversation
        .send("Two things happen.", &mut sink)
        .await
        .unwrap();
    assert_eq!(summary.tool_calls, 2);
    let started = events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| matches!(event, TurnEvent::Tool(ToolEvent::ToolStarted { .. })))
        .count();
    assert_eq!(started, 2);
    let second = &server.requests()[1].body;
    assert_eq!(
        roles(second),
        ["system", "user", "assistant", "tool", "tool"]
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "Logged story event: A"})
    );
    assert_eq!(
        second["messages"][4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "Logged story event: B"})
    );
}

#[tokio::test]
async fn tool_errors_go_back_to_the_model() {
    let server = ScriptedServer::start(vec![
        OpenAiScript::new()
            .tool_call("call_1", "cast_spell", &["{}"])
            .tool_call(
                "call_2",
                "log_story_event",
                &["{\"event\": 5, \"importance\": \"loud\"}"],
            )
            .tool_call("call_3", "log_story_event", &["{\"event\": \"x\""])
            .finish("tool_calls", 10, 10)
            .reply(),
        OpenAiScript::new()
            .text("Sorry, let me try again later.")
            .finish("stop", 10, 3)
            .reply(),
    ])
    .await;
    let mut conversation = narrator(&server).await;
    let (_, mut sink) = collect();
    let summary = conversation.send("Cast a spell.", &mut sink).await.unwrap();
    assert_eq!(summary.reply, "Sorry, let me try again later.");
    let messages = server.requests()[1].body["messages"].clone();
    assert_eq!(messages[3]["content"], "Error: Unknown tool: cast_spell");
    let invalid = messages[4]["content"].as_str().unwrap();
    assert!(
        invalid.starts_with("Error: Invalid parameters - ")
            && invalid.contains("/event")
            && invalid.contains("/importance"),
        "{invalid}"
    );
    assert!(
        messages[5]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: Invalid JSON arguments - EOF while parsing"),
        "{}",
        messages[5]["content"]
    );
}

#[tokio::test]
async fn at_the_round_bound_the_model_must_answer_in_words() {
    let call = |id: &str| {
        OpenAiScript::new()
            .tool_call(id, "log_story_event", &["{\"event\": \"again\"}"])
            .finish("tool_calls", 1, 1)
            .reply()
    };
    let server = ScriptedServer::start(vec![
        call("call_1"),
        call("call_2"),
        OpenAiScript::new()
            .text("Enough logging.")
            .finish("stop", 1, 1)
            .reply(),
    ])
    .await;
    let options = ConversationOptions {
        max_tool_rounds: 2,
        ..ConversationOptions::default()
    };
    let mut conversation = conversation_with("narrator", &server, options).await;
    let (events, mut sink) = collect();
    let summary = conversation.send("Loop forever.", &mut sink).await.unwrap();
    assert_eq!(summary.tool_rounds, 2);
    let requests = server.requests();
    assert!(requests[0].body.get("tools").is_some() && requests[1].body.get("tools").is_some());
    assert!(
        requests[2].body.get("tools").is_none() && requests[2].body.get("tool_choice").is_none(),
        "{}",
        requests[2].body
    );
    let rounds: Vec<bool> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            TurnEvent::Round { with_tools, .. } => Some(*with_tools),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, [true, true, false]);
}

#[tokio::test]
async fn a_backend_dying_mid_stream_ends_the_turn_but_not_the_conversation() {
    let dying = OpenAiScript::new().text("The door opens").tool_call(
        "call_1",
        "log_story_event",
        &["{\"event\": \"do"],
    );
    let server = ScriptedServer::start(vec![
        dying.cut_after(2),
        OpenAiScript::new()
            .text("The door opens.")
            .finish("stop", 5, 4)
            .reply(),
    ])
    .await;
    let mut conversation = narrator(&server).await;
    let (events, mut sink) = collect();
    let error = conversation
        .send("Open the door.", &mut sink)
        .await
        .unwrap_err();
    assert!(
        matches!(error, TurnError::Backend(BackendError::StreamCut { .. })),
        "{error:?}"
    );
    assert!(error.to_string().contains("backend"), "{error}");
    assert!(
        !events
            .lock()
            .unwrap()
            .iter()
            .any(|event| matches!(event, TurnEvent::Tool(ToolEvent::ToolStarted { .. }))),
        "a cut call never runs"
    );

    let (_, mut sink) = collect();
    let summary = conversation.send("Try again.", &mut sink).await.unwrap();
    assert_eq!(summary.reply, "The door opens.");
    assert_eq!(
        roles(&server.requests()[1].body),
        ["system", "user", "user"]
    );
}

#[tokio::test]
async fn a_character_without_tools_is_a_plain_chat() {
    let server = ScriptedServer::start(vec![
        OpenAiScript::new()
            .text("Hello there!")
            .finish("stop", 3, 3)
            .reply(),
    ])
    .await;
    let mut conversation =
        conversation_with("companion", &server, ConversationOptions::default()).await;
    let (_, mut sink) = collect();
    let summary = conversation.send("Hi", &mut sink).await.unwrap();
    assert_eq!(summary.reply, "Hello there!");
    let request = &server.requests()[0].body;
    assert!(
        request.get("tools").is_none() && request.get("tool_choice").is_none(),
        "{request}"
    );
}

/// Tools must not delay the first words: with the stream held open after its first text
/// chunk, that text reaches the user while the rest is still unsent, with tools as without.
#[tokio::test]
async fn the_first_words_arrive_as_early_with_tools_as_without() {
    let mut orders = Vec::new();
    for character in ["narrator", "companion"] {
        let gate = Arc::new(tokio::sync::Notify::new());
        let mut reply = OpenAiScript::new()
            .text("Once")
            .text(" upon a time.")
            .finish("stop", 1, 1)
            .reply();
        reply.gate = Some((1, Arc::clone(&gate)));
        let server = ScriptedServer::start(vec![reply]).await;
        let mut conversation =
            conversation_with(character, &server, ConversationOptions::default()).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&order);
        let mut sink = move |event: TurnEvent| {
            if let TurnEvent::Text(text) = &event {
                let mut log = log.lock().unwrap();
                log.push(format!("text {text:?}"));
                if text == "Once" {
                    log.push("gate opened".into());
                    gate.notify_one();
                }
            }
        };
        let turn = conversation.send("Tell me a story", &mut sink);
        tokio::time::timeout(Duration::from_secs(10), turn)
            .await
            .expect("the first text arrived while the stream was held open")
            .unwrap();
        orders.push(order.lock().unwrap().clone());
    }
    assert_eq!(
        orders[0],
        ["text \"Once\"", "gate opened", "text \" upon a time.\""]
    );
    assert_eq!(orders[0], orders[1]);
}

#[tokio::test]
async fn history_is_bounded_by_whole_turns() {
    let replies = (0..4).map(|n| {
        OpenAiScript::new()
            .tool_call(
                &format!("call_{n}"),
                "log_story_event",
                &["{\"event\": \"e\"}"],
            )
            .finish("tool_calls", 1, 1)
            .reply()
    });
    let answers = (0..4).map(|_| OpenAiScript::new().text("ok").finish("stop", 1, 1).reply());
    let script: Vec<Reply> = replies
        .zip(answers)
        .flat_map(|(call, answer)| [call, answer])
        .collect();
    let server = ScriptedServer::start(script).await;
    let options = ConversationOptions {
        max_history: 6,
        ..ConversationOptions::default()
    };
    let mut conversation = conversation_with("narrator", &server, options).await;
    for n in 0..4 {
        let (_, mut sink) = collect();
        conversation
            .send(format!("turn {n}"), &mut sink)
            .await
            .unwrap();
        assert!(conversation.history().len() <= 6 || n == 0);
    }
    let last = &server.requests()[7].body;
    // the oldest turns went whole: the request starts with the system prompt and a user turn
    assert_eq!(roles(last)[..2], ["system", "user"]);
    assert_eq!(last["messages"][1]["content"], "turn 3");
}

#[tokio::test]
async fn max_tokens_bounds_the_whole_turn_across_tool_rounds() {
    let call = || {
        OpenAiScript::new()
            .tool_call(
                "call_door",
                "log_story_event",
                &["{\"event\": \"The door opened\"}"],
            )
            .finish("tool_calls", 50, 20)
            .reply()
    };
    let cut = OpenAiScript::new()
        .text("The hall is long and")
        .finish("length", 80, 10)
        .reply();
    let server = ScriptedServer::start(vec![call(), cut, call()]).await;
    let options = ConversationOptions {
        max_tokens: Some(30),
        ..ConversationOptions::default()
    };
    let mut conversation = conversation_with("narrator", &server, options.clone()).await;
    let (_, mut sink) = collect();
    let summary = conversation
        .send("I open the door.", &mut sink)
        .await
        .unwrap();
    assert_eq!(summary.finish_reason, FinishReason::Length);
    assert_eq!(summary.reply, "The hall is long and");
    let asked: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| request.body["max_tokens"].clone())
        .collect();
    assert_eq!(
        asked,
        [json!(30), json!(10)],
        "each request asks for what is left"
    );

    // A budget spent by the tool round ends the turn without another request.
    let options = ConversationOptions {
        max_tokens: Some(20),
        ..options
    };
    let mut conversation = conversation_with("narrator", &server, options).await;
    let (_, mut sink) = collect();
    let summary = conversation
        .send("I open the door.", &mut sink)
        .await
        .unwrap();
    assert_eq!(summary.finish_reason, FinishReason::Length);
    assert_eq!(summary.tool_calls, 1);
    assert_eq!(server.requests().len(), 3);
    let history = conversation.history().messages();
    assert!(
        matches!(
            history.last(),
            Some(switchboard_tools::Message::Tool { .. })
        ),
        "the call that ran keeps its result: {history:?}"
    );
}

/// A reply is held whole, so it is bounded: past `max_reply_bytes` (over all rounds) the
/// turn ends with `TooLarge` and the backend request is closed; the conversation goes on.
#[tokio::test]
async fn a_reply_past_the_byte_bound_ends_the_turn() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut endless = OpenAiScript::new();
    for _ in 0..20 {
        endless = endless.text(&"words ".repeat(20));
    }
    let mut endless = endless.finish("stop", 1, 1).reply();
    // The backend holds the rest back: only a turn that gave up closes the connection.
    endless.gate = Some((15, Arc::clone(&gate)));
    let server = ScriptedServer::start(vec![
        endless,
        OpenAiScript::new()
            .text("Short.")
            .finish("stop", 1, 1)
            .reply(),
    ])
    .await;
    let options = ConversationOptions {
        max_reply_bytes: 1000,
        ..ConversationOptions::default()
    };
    let mut conversation = conversation_with("narrator", &server, options).await;
    let (_, mut sink) = collect();
    let error = conversation.send("Talk.", &mut sink).await.unwrap_err();
    assert!(
        matches!(error, TurnError::TooLarge { limit: 1000 }),
        "{error:?}"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.hung_up() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.hung_up(), 1, "the backend request was closed");
    let (_, mut sink) = collect();
    let summary = conversation.send("Be brief.", &mut sink).await.unwrap();
    assert_eq!(summary.reply, "Short.");
}
