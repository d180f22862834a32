//! The character commands with `[[mcp_server]]` entries in the configuration `serve` reads:
//! `check` refuses a character naming a server the file does not configure, `call` runs a
//! tool of a character's server as its conversation would, and `check-config` names the
//! servers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::switchboard;

use switchboard_testkit::mcp::reference_server;

const LIBRARIAN: &str = r#"
export const CHARACTER_NAME = "Librarian";
export const VOICE_SOURCE = { source_type: "file", path_on_server: "voices/librarian.wav" };
export const INSTRUCTIONS = { instruction_prompt: "You look things up.", language: "en" };
export const MCP_SERVERS = [{ server: "fs", tools: ["read_text_file"] }];
export class PromptGenerator {
  constructor(instructions) { this.instructions = instructions; }
  makeSystemPrompt() { return this.instructions.instruction_prompt; }
}
"#;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_character_commands_use_the_configured_mcp_servers() {
    let Some((node, filesystem)) = reference_server("filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "water the plants\n").unwrap();
    let characters = dir.path().join("characters");
    std::fs::create_dir(&characters).unwrap();
    std::fs::write(characters.join("librarian.js"), LIBRARIAN).unwrap();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        format!(
            "[[mcp_server]]\nname = \"fs\"\ncommand = [{}, {}, {}]\n",
            serde_json::to_string(&node).unwrap(),
            serde_json::to_string(filesystem.to_str().unwrap()).unwrap(),
            serde_json::to_string(notes.to_str().unwrap()).unwrap(),
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        switchboard()
            .current_dir(dir.path())
            .env_remove("SWITCHBOARD_CHARACTERS")
            .args(args)
            .output()
            .unwrap()
    };

    let check = run(&["check"]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));

    let path = notes.join("todo.txt");
    let arguments = serde_json::json!({"path": path.to_str().unwrap()}).to_string();
    let call = run(&["call", "librarian", "fs_read_text_file", &arguments]);
    assert_eq!(call.status.code(), Some(0), "{}", text(&call.stderr));
    assert_eq!(text(&call.stdout), "water the plants\n\n");
    // A tool the character's entry leaves out is not its tool.
    let refused = run(&["call", "librarian", "fs_write_file", "{}"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stdout).starts_with("Error: Unknown tool: fs_write_file"),
        "{}",
        text(&refused.stdout)
    );

    let summary = run(&["check-config"]);
    assert_eq!(summary.status.code(), Some(0), "{}", text(&summary.stdout));
    assert!(
        text(&summary.stdout).contains("mcp servers: 1 (fs)"),
        "{}",
        text(&summary.stdout)
    );

    // A character naming a server the configuration lacks is refused, with that named.
    std::fs::write(
        characters.join("researcher.js"),
        LIBRARIAN
            .replace("Librarian", "Researcher")
            .replace("server: \"fs\"", "server: \"search\""),
    )
    .unwrap();
    let check = run(&["check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(
        text(&check.stdout).contains(
            "MCP_SERVERS/0/server: no MCP server named \"search\" is configured (configured: fs)"
        ),
        "{}",
        text(&check.stdout)
    );
}
