//! Cost of the whole executor path of a character tool call (validation, hand-off to the
//! character's thread, the JavaScript handler, the string check, metrics, the reply) for
//! the narrator's `log_story_event`, and of loading a directory of 10 characters.
//! Run with `cargo bench -p switchboard-characters`. No tracing subscriber is installed, so
//! the handler's `console.log` costs what a filtered-out log line costs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use divan::{Bencher, black_box};
use switchboard_characters::{Character, CharacterSession, LoadOptions, load_characters};
use switchboard_tools::ToolCall;

fn main() {
    divan::main();
    percentiles();
}

fn repo_characters() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../characters")
}

fn narrator() -> Arc<Character> {
    let loaded = load_characters(&repo_characters(), &LoadOptions::default());
    match loaded.get("narrator") {
        Some(narrator) => Arc::clone(narrator),
        None => unreachable!("the repository's narrator loads: {:?}", loaded.rejections),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => unreachable!("a current-thread runtime builds: {error}"),
    }
}

fn session(runtime: &tokio::runtime::Runtime, character: &Arc<Character>) -> CharacterSession {
    match runtime.block_on(character.start_conversation()) {
        Ok(session) => session,
        Err(error) => unreachable!("the narrator starts: {error}"),
    }
}

fn hero_fell() -> ToolCall {
    ToolCall {
        id: "call_1".to_owned(),
        name: "log_story_event".to_owned(),
        arguments: r#"{"event":"The hero fell","importance":"high"}"#.to_owned(),
    }
}

/// A directory of 10 characters: the narrator under 10 names.
fn ten_characters() -> tempfile::TempDir {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => unreachable!("a temporary directory: {error}"),
    };
    let source = std::fs::read_to_string(repo_characters().join("narrator.js")).unwrap_or_default();
    for index in 0..10 {
        let renamed = source.replace("\"Narrator\"", &format!("\"Narrator {index}\""));
        if let Err(error) = std::fs::write(dir.path().join(format!("narrator-{index}.js")), renamed)
        {
            unreachable!("writing a character: {error}");
        }
    }
    dir
}

#[divan::bench(sample_count = 2000)]
fn call_log_story_event(bencher: Bencher) {
    let runtime = runtime();
    let character = narrator();
    let session = session(&runtime, &character);
    let call = hero_fell();
    bencher.bench_local(|| {
        runtime
            .block_on(session.call_tool(black_box(&call)))
            .is_error
    });
}

#[divan::bench(sample_count = 2000)]
fn call_unknown_tool(bencher: Bencher) {
    let runtime = runtime();
    let character = narrator();
    let session = session(&runtime, &character);
    let call = ToolCall {
        name: "nope".to_owned(),
        ..hero_fell()
    };
    bencher.bench_local(|| {
        runtime
            .block_on(session.call_tool(black_box(&call)))
            .is_error
    });
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn load_ten_characters(bencher: Bencher) {
    let dir = ten_characters();
    let options = LoadOptions::default();
    bencher.bench_local(|| {
        load_characters(black_box(dir.path()), &options)
            .characters
            .len()
    });
}

#[divan::bench(sample_count = 50)]
fn start_conversation(bencher: Bencher) {
    let runtime = runtime();
    let character = narrator();
    bencher.bench_local(|| runtime.block_on(character.start_conversation()).is_ok());
}

/// Each call timed alone, for the p99 divan does not report.
fn percentiles() {
    let runtime = runtime();
    let character = narrator();
    let session = session(&runtime, &character);
    let call = hero_fell();
    switchboard_bench::heading("per call, each sample one call (median, p99)");
    let summary = switchboard_bench::measure(20_000, 1, || {
        black_box(
            runtime
                .block_on(session.call_tool(black_box(&call)))
                .is_error,
        );
    });
    switchboard_bench::report("log_story_event, whole executor path", &summary);
    let dir = ten_characters();
    let options = LoadOptions::default();
    let summary = switchboard_bench::measure(50, 1, || {
        black_box(load_characters(dir.path(), &options).characters.len());
    });
    switchboard_bench::report("load a directory of 10 characters", &summary);
}
