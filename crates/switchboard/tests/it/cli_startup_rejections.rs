//! `serve` names why each character file was refused at start, as a reload does: a count
//! alone ("1 rejected") sent the operator to another command to learn why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::Served;

const SPY: &str = r#"
export const CHARACTER_NAME = "Spy";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/spy.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You listen.", language: "en" };
export const MCP_SERVERS = [{ server: "search" }];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
}
"#;

#[test]
fn a_character_refused_at_start_is_logged_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let characters = dir.path().join("characters");
    std::fs::create_dir(&characters).unwrap();
    std::fs::write(characters.join("spy.js"), SPY).unwrap();
    let config = dir.path().join("switchboard.toml");
    std::fs::write(
        &config,
        format!(
            "characters = {:?}\n[[mcp_server]]\nname = \"fs\"\ncommand = [\"true\"]\n",
            characters.to_str().unwrap()
        ),
    )
    .unwrap();
    let mut served = Served::start(&config, "127.0.0.1:0", &[]);
    let log = served.wait_for_log("0 loaded, 1 rejected", 1);
    served.stop();
    assert!(
        log.contains("spy.js: MCP_SERVERS/0/server: no MCP server named \"search\" is configured (configured: fs)"),
        "{log}"
    );
}
