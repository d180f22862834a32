//! The playground page in a real browser: tests/browser/playground.mjs drives Debian's
//! Chromium (headless, through playwright-core) against a gateway in front of a scripted
//! backend, on a copy of the repository's narrator that the script edits while the
//! gateway watches it. playwright-core is installed with npm into a cache directory outside
//! the work tree when it is missing; without Chromium, node or npm the test says SKIP and
//! passes, and fails under `SWITCHBOARD_REQUIRE_PEERS=1` (`scripts/test` installs all three,
//! CI sets the variable).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::*;
use switchboard_server::{Config, RunningGateway};
use switchboard_testkit::peers::peer;
use switchboard_testkit::{OpenAiScript, ScriptedServer, npm_package};

const PLAYWRIGHT_VERSION: &str = "1.65.1";

/// Where the browser is, or why the test cannot run here.
fn chromium() -> Result<PathBuf, String> {
    let browser = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !browser.exists() {
        return Err(format!(
            "{} is missing (apt-get install -y chromium)",
            browser.display()
        ));
    }
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success());
        if !found {
            return Err(format!("{tool} is missing"));
        }
    }
    Ok(browser)
}

/// playwright-core in a cache directory outside the work tree, installed once (node and
/// npm were checked first).
fn playwright() -> PathBuf {
    npm_package("playwright-core", PLAYWRIGHT_VERSION).unwrap_or_else(|why| panic!("{why}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_in_chromium() {
    let Some(browser) = peer("Chromium", chromium) else {
        return;
    };
    let playwright = tokio::task::spawn_blocking(playwright).await.unwrap();

    // The narrator logs an event, then narrates; its words are held after the first part
    // until the page has shown that part. Then a route's model calls get_weather wrongly.
    let gate = Arc::new(tokio::sync::Notify::new());
    let call = OpenAiScript::new()
        .tool_call(
            "call_narratornarratornarrator1",
            "log_story_event",
            &[
                "{\"event\": \"The hero found the brass key\", ",
                "\"importance\": \"high\"}",
            ],
        )
        .finish("tool_calls", 100, 20)
        .reply();
    let mut words = OpenAiScript::new()
        .text("The door ")
        .text("creaks open. ")
        .text("What do you do?")
        .finish("stop", 150, 12)
        .reply();
    words.gate = Some((2, Arc::clone(&gate)));
    let weather = OpenAiScript::new()
        .tool_call(
            "call_weatherweatherweather01",
            "get_weather",
            &["{\"city\": 7}"],
        )
        .finish("tool_calls", 30, 8)
        .reply();
    let backend = ScriptedServer::start(vec![call, words, weather]).await;

    let characters = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(CHARACTERS).join("narrator.js"),
        characters.path().join("narrator.js"),
    )
    .unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/forms.js"),
        characters.path().join("forms.js"),
    )
    .unwrap();
    let config = Config::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\ncharacters = \"{}\"\n{}",
        characters.path().display(),
        route("qwen", "openai", &backend.base, "")
    ))
    .unwrap();
    let gateway = RunningGateway::start(&config, &|_| None).await.unwrap();
    let _watching = gateway.state.characters.watch().unwrap();

    let screenshots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("playground-screenshots");
    let _ = std::fs::remove_dir_all(&screenshots);
    std::fs::create_dir_all(&screenshots).unwrap();
    let mut child = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/browser/playground.mjs"
        ))
        .env("BASE_URL", gateway.base_url())
        .env("CHARACTERS_DIR", characters.path())
        .env("SCREENSHOTS", &screenshots)
        .env("CHROMIUM", &browser)
        .env("PLAYWRIGHT_DIR", &playwright)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let opener = Arc::clone(&gate);
    let lines = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "partial-text-seen" {
                opener.notify_one();
            }
            lines.push(line);
        }
        lines
    });
    let log = tokio::task::spawn_blocking(move || std::io::read_to_string(stderr).unwrap());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let lines = lines.await.unwrap();
    let log = log.await.unwrap();
    assert!(
        status.success() && lines.last().map(String::as_str) == Some("all-steps-passed"),
        "the browser test failed ({status}); screenshots in {}\nstdout: {lines:?}\n{log}",
        screenshots.display()
    );
    for shot in [
        "desktop-character",
        "desktop-forms",
        "desktop-problems",
        "desktop-route",
        "phone-character",
        "phone-route-error",
    ] {
        let png = std::fs::read(screenshots.join(format!("{shot}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{shot}.png is not a PNG");
    }
    assert_eq!(backend.requests().len(), 3);
    gateway.stop().await.unwrap();
}
