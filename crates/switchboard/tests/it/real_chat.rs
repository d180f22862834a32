//! `switchboard chat narrator` against a real model server for several turns: llama.cpp's
//! server with SmolLM2 (crates/switchboard-testkit/src/llama.rs; SKIP without it, failure
//! under `SWITCHBOARD_REQUIRE_PEERS=1`). Its second line used to fail: the server
//! closes its connection after each stream and the chat reused it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use switchboard_testkit::LlamaServer;

#[test]
fn the_narrator_chats_for_several_turns() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let characters = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../characters");
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--characters")
        .arg(&characters)
        .args(["chat", "narrator", "--model", LlamaServer::MODEL])
        .arg("--backend")
        .arg(format!("{}/v1", server.base_url()))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("SWITCHBOARD_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"I open the old door.\nI walk inside.\nI light a torch.\n/history\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    assert!(!stderr.contains("error"), "{stderr}");
    // The history printed at the end: each line and a reply to each.
    let history = &stdout[stdout
        .find("user: I open the old door.")
        .unwrap_or_else(|| panic!("{stdout}"))..];
    assert_eq!(history.matches("\nuser: ").count(), 2, "{history}");
    let replies = history
        .lines()
        .filter(|line| line.starts_with("assistant: ") && line.len() > "assistant: ".len())
        .count();
    assert!(replies >= 3, "{history}");
}
