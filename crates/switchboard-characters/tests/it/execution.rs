//! The executor path of tool calls: every error string the model can receive, the hard
//! timeout (and that nothing happens after it), the memory limit, per-conversation state,
//! console output, metrics, and many concurrent calls across characters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use switchboard_characters::{Character, CharacterSession, LoadOptions, Loaded, load_characters};
use switchboard_tools::{ToolCall, ToolResult};

fn fixtures(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn options() -> LoadOptions {
    LoadOptions {
        memory_limit: 32 * 1024 * 1024,
        ..LoadOptions::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn loaded(dir: &str) -> Loaded {
    let loaded = load_characters(&fixtures(dir), &options());
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    loaded
}

fn character(loaded: &Loaded, name: &str) -> Arc<Character> {
    Arc::clone(loaded.get(name).unwrap())
}

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: format!("call_{name}"),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// A toolbox conversation and a runtime to drive it.
struct Toolbox {
    runtime: tokio::runtime::Runtime,
    session: CharacterSession,
}

impl Toolbox {
    fn new() -> Self {
        let runtime = runtime();
        let character = character(&loaded("runtime"), "toolbox");
        let session = runtime.block_on(character.start_conversation()).unwrap();
        Self { runtime, session }
    }

    fn call(&self, name: &str, arguments: &str) -> ToolResult {
        self.runtime
            .block_on(self.session.call_tool(&call(name, arguments)))
    }

    fn error(&self, name: &str, arguments: &str) -> String {
        let result = self.call(name, arguments);
        assert!(result.is_error, "expected an error, got {result:?}");
        result.content
    }

    fn ok(&self, name: &str, arguments: &str) -> String {
        let result = self.call(name, arguments);
        assert!(!result.is_error, "expected success, got {result:?}");
        result.content
    }
}

/// Captures log lines of the current thread and of the character threads it calls.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

#[test]
fn the_handler_gets_validated_arguments_with_defaults() {
    let toolbox = Toolbox::new();
    assert_eq!(toolbox.ok("echo", r#"{"text":"hi"}"#), "hi (plain)");
    assert_eq!(toolbox.ok("echo", r#"{"text":"hi","mode":"loud"}"#), "HI");
    assert_eq!(
        toolbox.session.system_prompt(),
        "You test tools. Language: en."
    );
}

#[test]
fn unknown_tool() {
    assert_eq!(
        Toolbox::new().error("nope", "{}"),
        "Error: Unknown tool: nope"
    );
}

#[test]
fn invalid_json() {
    let message = Toolbox::new().error("echo", "{not json");
    assert!(
        message.starts_with("Error: Invalid JSON arguments - "),
        "{message}"
    );
}

#[test]
fn missing_required() {
    assert_eq!(
        Toolbox::new().error("echo", "{}"),
        "Error: Missing required parameter: text"
    );
}

#[test]
fn invalid_parameters() {
    let message = Toolbox::new().error("echo", r#"{"text":"hi","mode":"whisper"}"#);
    assert!(
        message.starts_with("Error: Invalid parameters - /mode: "),
        "{message}"
    );
}

#[test]
fn arguments_too_large() {
    let text = "z".repeat(3000);
    let message = Toolbox::new().error("echo", &format!(r#"{{"text":"{text}"}}"#));
    assert!(
        message.starts_with("Error: Arguments too large - "),
        "{message}"
    );
}

#[test]
fn results_must_be_strings() {
    let toolbox = Toolbox::new();
    for (what, found) in [
        ("number", "number"),
        ("object", "object"),
        ("undefined", "undefined"),
        ("array", "array"),
    ] {
        assert_eq!(
            toolbox.error("odd_return", &format!(r#"{{"what":"{what}"}}"#)),
            format!("Error: Tool must return string, got {found}")
        );
    }
}

#[test]
fn exceptions_read_as_name_and_message() {
    let toolbox = Toolbox::new();
    let message = toolbox.error("fail", r#"{"how":"type_error"}"#);
    assert!(message.starts_with("Error: TypeError - "), "{message}");
    assert_eq!(
        toolbox.error("fail", r#"{"how":"custom_error"}"#),
        "Error: OopsError - it went wrong"
    );
    assert_eq!(
        toolbox.error("fail", r#"{"how":"throw_string"}"#),
        "Error: Error - just a string"
    );
}

#[test]
fn an_exception_is_logged_with_character_tool_and_stack() {
    let (logs, _guard) = capture_logs();
    Toolbox::new().error("fail", r#"{"how":"custom_error"}"#);
    let logs = logs.text();
    assert!(
        logs.contains("Toolbox: tool fail threw OopsError - it went wrong"),
        "{logs}"
    );
    assert!(logs.contains("at misbehave (toolbox.js:"), "{logs}");
}

#[test]
fn promises_are_awaited() {
    let toolbox = Toolbox::new();
    assert_eq!(
        toolbox.ok("odd_return", r#"{"what":"async_ok"}"#),
        "awaited"
    );
    assert_eq!(
        toolbox.error("fail", r#"{"how":"reject"}"#),
        "Error: RangeError - rejected on purpose"
    );
    assert_eq!(
        toolbox.error("odd_return", r#"{"what":"never"}"#),
        "Error: Tool returned a promise that never settles"
    );
}

#[test]
fn long_results_are_truncated_with_a_marker() {
    let result = Toolbox::new().ok("odd_return", r#"{"what":"long"}"#);
    assert!(result.starts_with(&"y".repeat(999)), "{result}");
    assert!(
        result.ends_with("… [truncated: the result had 5000 characters, at most 1000 are shown]"),
        "{result}"
    );
}

#[test]
fn the_timeout_stops_the_code_and_the_next_call_works() {
    let toolbox = Toolbox::new();
    let started = Instant::now();
    assert_eq!(
        toolbox.error("spin", "{}"),
        "Error: Tool execution timed out (exceeded 100ms)"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(100) && elapsed < Duration::from_secs(1),
        "{elapsed:?}"
    );
    assert_eq!(toolbox.ok("count", ""), "calls: 1");
    // A promise whose continuation spins is stopped by the same deadline.
    assert_eq!(
        toolbox.error("odd_return", r#"{"what":"async_spin"}"#),
        "Error: Tool execution timed out (exceeded 100ms)"
    );
    assert_eq!(toolbox.ok("count", ""), "calls: 2");
}

#[test]
fn side_effects_after_the_deadline_never_happen() {
    let (logs, _guard) = capture_logs();
    let toolbox = Toolbox::new();
    assert_eq!(
        toolbox.error("late_effect", "{}"),
        "Error: Tool execution timed out (exceeded 100ms)"
    );
    // The handler would have set `late` and logged 300 ms in; it was stopped at 100 ms.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(toolbox.ok("was_late", "{}"), "late: false");
    assert!(!logs.text().contains("LATE EFFECT"), "{}", logs.text());
}

#[test]
fn a_character_may_declare_a_longer_timeout() {
    let runtime = runtime();
    let patient = character(&loaded("runtime"), "patient");
    let session = runtime.block_on(patient.start_conversation()).unwrap();
    let waited = runtime.block_on(session.call_tool(&call("wait", r#"{"ms":150}"#)));
    assert_eq!(waited.content, "waited 150");
    let late = runtime.block_on(session.call_tool(&call("wait", r#"{"ms":1000}"#)));
    assert_eq!(
        late.content,
        "Error: Tool execution timed out (exceeded 250ms)"
    );
}

#[test]
fn the_memory_limit_stops_a_bomb_and_the_character_keeps_working() {
    let toolbox = Toolbox::new();
    assert_eq!(
        toolbox.error("memory_bomb", "{}"),
        "Error: Tool ran out of memory (the character's limit is 32 MiB)"
    );
    assert_eq!(
        toolbox.ok("echo", r#"{"text":"still here"}"#),
        "still here (plain)"
    );
    // The memory was given back: a second bomb fails the same way, not sooner or worse.
    assert_eq!(
        toolbox.error("memory_bomb", "{}"),
        "Error: Tool ran out of memory (the character's limit is 32 MiB)"
    );
    assert_eq!(toolbox.ok("count", ""), "calls: 1");
}

#[test]
fn each_conversation_has_its_own_instance() {
    let runtime = runtime();
    let toolbox = character(&loaded("runtime"), "toolbox");
    let first = runtime.block_on(toolbox.start_conversation()).unwrap();
    let second = runtime.block_on(toolbox.start_conversation()).unwrap();
    let count = |session: &CharacterSession| {
        runtime
            .block_on(session.call_tool(&call("count", "")))
            .content
    };
    assert_eq!(count(&first), "calls: 1");
    assert_eq!(count(&first), "calls: 2");
    assert_eq!(count(&second), "calls: 1");
}

#[test]
fn console_output_goes_to_the_log_prefixed_with_the_character_name() {
    let (logs, _guard) = capture_logs();
    assert_eq!(Toolbox::new().ok("shout", r#"{"text":"hello"}"#), "shouted");
    let logs = logs.text();
    assert!(
        logs.contains(" INFO character: Toolbox: [SHOUT] hello"),
        "{logs}"
    );
    assert!(
        logs.contains(" WARN character: Toolbox: warned {\"n\":1}"),
        "{logs}"
    );
}

#[test]
fn a_character_without_tools_starts_conversations_and_refuses_calls() {
    let runtime = runtime();
    let plain = character(&loaded("runtime"), "plain");
    let session = runtime.block_on(plain.start_conversation()).unwrap();
    assert_eq!(session.system_prompt(), "plain fr");
    let result = runtime.block_on(session.call_tool(&call("anything", "{}")));
    assert_eq!(result.content, "Error: Unknown tool: anything");
}

#[test]
fn every_outcome_is_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let toolbox = Toolbox::new();
        toolbox.ok("echo", r#"{"text":"hi"}"#);
        toolbox.error("nope", "{}");
        toolbox.error("echo", "{");
        toolbox.error("echo", "{}");
        toolbox.error("spin", "{}");
        toolbox.error("fail", r#"{"how":"type_error"}"#);
        toolbox.error("odd_return", r#"{"what":"number"}"#);
        toolbox.error("memory_bomb", "{}");
    });
    let mut counters = Vec::new();
    let mut latencies = 0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let labels: Vec<String> = key
            .key()
            .labels()
            .map(|label| format!("{}={}", label.key(), label.value()))
            .collect();
        match value {
            DebugValue::Counter(count) => {
                counters.push((key.key().name().to_owned(), labels.join(","), count))
            }
            DebugValue::Histogram(samples) => {
                assert_eq!(key.key().name(), "character_tool_latency_seconds");
                latencies += samples.len();
            }
            DebugValue::Gauge(_) => panic!("no gauges expected"),
        }
    }
    counters.sort();
    let expected = [
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=(unknown)",
            1,
        ),
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=echo",
            3,
        ),
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=fail",
            1,
        ),
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=memory_bomb",
            1,
        ),
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=odd_return",
            1,
        ),
        (
            "character_tool_calls_total",
            "character_name=Toolbox,tool_name=spin",
            1,
        ),
        ("character_tool_errors_total", "error_type=bad_return", 1),
        ("character_tool_errors_total", "error_type=execution", 1),
        ("character_tool_errors_total", "error_type=json_parse", 1),
        ("character_tool_errors_total", "error_type=out_of_memory", 1),
        ("character_tool_errors_total", "error_type=timeout", 1),
        ("character_tool_errors_total", "error_type=unknown_tool", 1),
        ("character_tool_errors_total", "error_type=validation", 1),
        ("character_tools_loaded_total", "character_name=Patient", 1),
        ("character_tools_loaded_total", "character_name=Plain", 0),
        ("character_tools_loaded_total", "character_name=Toolbox", 10),
    ];
    let expected: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(name, labels, count)| (name.to_string(), labels.to_string(), *count))
        .collect();
    assert_eq!(counters, expected);
    assert_eq!(latencies, 8);
}

#[test]
fn rejections_are_counted_by_reason() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        load_characters(&fixtures("broken"), &options());
    });
    let counts: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "character_tool_validation_errors_total")
        .map(|(key, _, _, value)| {
            let label = key.key().labels().next().unwrap().value().to_owned();
            match value {
                DebugValue::Counter(count) => (label, count),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    for reason in [
        "missing_handler",
        "invalid_schema",
        "duplicate_name",
        "syntax_error",
        "tools_not_array",
        "missing_export",
        "invalid_export",
        "module_error",
    ] {
        assert!(
            counts
                .iter()
                .any(|(label, count)| label == reason && *count > 0),
            "{reason}: {counts:?}"
        );
    }
}

#[test]
fn a_hundred_concurrent_calls_across_three_characters() {
    let runtime = runtime();
    let loaded = loaded("concurrent");
    let sessions: Vec<Arc<CharacterSession>> = ["adder", "reverser", "sleeper"]
        .iter()
        .map(|name| {
            Arc::new(
                runtime
                    .block_on(character(&loaded, name).start_conversation())
                    .unwrap(),
            )
        })
        .collect();
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..100)
            .map(|index: i64| {
                let session = Arc::clone(&sessions[index as usize % 3]);
                tokio::spawn(async move {
                    let (tool, arguments, expected) = match index % 3 {
                        0 => (
                            "add",
                            format!(r#"{{"a":{index},"b":1000}}"#),
                            (index + 1000).to_string(),
                        ),
                        1 => (
                            "reverse",
                            format!(r#"{{"text":"ab{index}"}}"#),
                            format!("{}ba", index.to_string().chars().rev().collect::<String>()),
                        ),
                        _ => (
                            "square",
                            format!(r#"{{"n":{index}}}"#),
                            (index * index).to_string(),
                        ),
                    };
                    let result = session.call_tool(&call(tool, &arguments)).await;
                    (result, expected)
                })
            })
            .collect();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap());
        }
        results
    });
    assert_eq!(results.len(), 100);
    for (result, expected) in results {
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.content, expected);
    }
}

#[test]
fn a_slow_character_does_not_delay_another() {
    let runtime = runtime();
    let toolbox = character(&loaded("runtime"), "toolbox");
    let adder = character(&loaded("concurrent"), "adder");
    let spinning = runtime.block_on(toolbox.start_conversation()).unwrap();
    let adding = runtime.block_on(adder.start_conversation()).unwrap();
    runtime.block_on(async {
        let spin = async {
            let result = spinning.call_tool(&call("spin", "{}")).await;
            (result, Instant::now())
        };
        let add = async {
            // Give the spin a head start so that it is running when the add arrives.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let result = adding.call_tool(&call("add", r#"{"a":1,"b":2}"#)).await;
            (result, Instant::now())
        };
        let ((spun, spin_done), (added, add_done)) = tokio::join!(spin, add);
        assert!(spun.is_error);
        assert_eq!(added.content, "3");
        // The spin holds its own thread for 100 ms; the add is answered while it still runs.
        assert!(add_done < spin_done, "the add waited for the spin to end");
    });
}

/// Polls a future once (far enough for a tool call to queue its job) and drops it, as a
/// client that gives up drops its request.
fn queue_and_abandon(future: impl std::future::Future) {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(future.as_mut().poll(&mut context).is_pending());
}

/// Calls whose callers are gone never start: five calls queued behind a slow one and then
/// abandoned are dropped, so the next caller waits only for the call already running.
#[test]
fn abandoned_calls_queued_behind_a_slow_one_never_run() {
    let runtime = runtime();
    let loaded = loaded("queue");
    let character = character(&loaded, "slow");
    let session = runtime.block_on(character.start_conversation()).unwrap();
    let slow = call("slow", r#"{"ms": 1000}"#);
    let result = runtime.block_on(async {
        let mut running = std::pin::pin!(session.call_tool(&slow));
        std::future::poll_fn(|context| {
            assert!(running.as_mut().poll(context).is_pending());
            std::task::Poll::Ready(())
        })
        .await;
        for _ in 0..5 {
            queue_and_abandon(session.call_tool(&slow));
        }
        assert_eq!(running.await.content, "runs: 1, starts: 1");
        session.call_tool(&call("slow", r#"{"ms": 0}"#)).await
    });
    assert_eq!(
        result.content, "runs: 2, starts: 1",
        "only the call that was running and the new one ran"
    );
}

/// A conversation whose caller left before its instance was made is never started.
#[test]
fn an_abandoned_start_is_never_run() {
    let runtime = runtime();
    let loaded = loaded("queue");
    let character = character(&loaded, "slow");
    let session = runtime.block_on(character.start_conversation()).unwrap();
    let slow = call("slow", r#"{"ms": 1000}"#);
    let result = runtime.block_on(async {
        let mut running = std::pin::pin!(session.call_tool(&slow));
        std::future::poll_fn(|context| {
            assert!(running.as_mut().poll(context).is_pending());
            std::task::Poll::Ready(())
        })
        .await;
        for _ in 0..5 {
            queue_and_abandon(character.start_conversation());
        }
        running.await;
        session.call_tool(&call("slow", r#"{"ms": 0}"#)).await
    });
    assert_eq!(
        result.content, "runs: 2, starts: 1",
        "no instance was made for the abandoned starts"
    );
}
