//! Loading a directory: every rejection reason, named by file and export, never stopping
//! the other files; imports confined to the directory; listing; reload.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard_characters::{CharacterRegistry, LoadOptions, Loaded, load_characters};

fn fixtures(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn options() -> LoadOptions {
    LoadOptions {
        load_timeout: Duration::from_millis(200),
        ..LoadOptions::default()
    }
}

fn broken() -> Loaded {
    load_characters(&fixtures("broken"), &options())
}

/// The problems of the rejected file named `file`.
fn problems(loaded: &Loaded, file: &str) -> Vec<String> {
    let rejection = loaded
        .rejections
        .iter()
        .find(|rejection| rejection.file.file_name().unwrap() == file)
        .unwrap_or_else(|| {
            panic!(
                "{file} was not rejected; rejections: {:#?}",
                loaded.rejections
            )
        });
    rejection
        .problems
        .iter()
        .map(|problem| problem.message.clone())
        .collect()
}

fn assert_one_problem_containing(loaded: &Loaded, file: &str, needles: &[&str]) {
    let found = problems(loaded, file);
    assert!(
        found
            .iter()
            .any(|problem| needles.iter().all(|needle| problem.contains(needle))),
        "{file}: no problem contains all of {needles:?}: {found:#?}"
    );
}

#[test]
fn a_broken_directory_still_loads_its_good_file() {
    let loaded = broken();
    let names: Vec<&str> = loaded
        .characters
        .iter()
        .map(|character| character.name())
        .collect();
    assert_eq!(names, ["Twin", "Good"]);
    assert_eq!(loaded.rejections.len(), 12, "{:#?}", loaded.rejections);
}

#[test]
fn missing_handler_names_the_tools_and_the_missing_method() {
    assert_one_problem_containing(
        &broken(),
        "missing_handler.js",
        &[
            "PromptGenerator",
            "TOOLS declares log_story_event",
            "no handleToolCall(toolName, toolInput) method",
        ],
    );
}

#[test]
fn bad_schema_reports_every_problem_with_its_path() {
    let loaded = broken();
    assert_one_problem_containing(
        &loaded,
        "bad_schema.js",
        &["TOOLS/0/function/name", "bad-name"],
    );
    assert_one_problem_containing(
        &loaded,
        "bad_schema.js",
        &["TOOLS/0/function/parameters", "strng"],
    );
}

#[test]
fn duplicate_names_reject_the_later_file_naming_both() {
    let loaded = broken();
    let found = problems(&loaded, "duplicate_b.js");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("CHARACTER_NAME: \"twin\" is also declared by"),
        "{found:?}"
    );
    assert!(found[0].contains("duplicate_a.js"), "{found:?}");
    let rejection = loaded
        .rejections
        .iter()
        .find(|r| r.file.ends_with("duplicate_b.js"))
        .unwrap();
    assert!(
        rejection
            .to_string()
            .contains("duplicate_b.js: CHARACTER_NAME"),
        "{rejection}"
    );
}

#[test]
fn a_syntax_error_gives_its_line_and_column() {
    let found = problems(&broken(), "syntax_error.js");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("syntax error at line 3, column "),
        "{found:?}"
    );
}

#[test]
fn tools_that_are_not_an_array_are_refused() {
    assert_one_problem_containing(
        &broken(),
        "tools_not_array.js",
        &["TOOLS: expected an array of tool definitions, got object"],
    );
}

#[test]
fn every_missing_export_is_named() {
    let found = problems(&broken(), "missing_exports.js");
    for export in [
        "CHARACTER_NAME: missing",
        "VOICE_SOURCE: missing",
        "INSTRUCTIONS: missing",
        "PromptGenerator: missing",
    ] {
        assert!(
            found.iter().any(|problem| problem.starts_with(export)),
            "{export}: {found:#?}"
        );
    }
}

#[test]
fn every_wrong_type_is_named() {
    let found = problems(&broken(), "wrong_types.js");
    for expected in [
        "CHARACTER_NAME: expected a string, got number",
        "VOICE_SOURCE: expected an object, got string",
        "INSTRUCTIONS.instruction_prompt: expected a string, got number",
        "METADATA.good: expected a boolean, got string",
        "TOOL_TIMEOUT_MS: expected a whole number of milliseconds from 1 to 10000, got 0",
        "PromptGenerator: expected a class, got function",
    ] {
        assert!(
            found.iter().any(|problem| problem == expected),
            "{expected}: {found:#?}"
        );
    }
    assert_eq!(found.len(), 6, "{found:#?}");
}

#[test]
fn a_class_without_make_system_prompt_is_refused() {
    assert_one_problem_containing(
        &broken(),
        "no_prompt_method.js",
        &["PromptGenerator: has no makeSystemPrompt() method"],
    );
}

#[test]
fn an_import_leaving_the_directory_is_refused() {
    assert_one_problem_containing(
        &broken(),
        "escaping_import.js",
        &[
            "import refused",
            "../outside/secret.js",
            "leaves the characters directory",
        ],
    );
}

#[test]
fn a_bare_import_is_refused() {
    assert_one_problem_containing(
        &broken(),
        "bare_import.js",
        &[
            "import refused: Error resolving module 'os'",
            "only relative imports",
        ],
    );
}

#[test]
fn top_level_code_that_throws_or_loops_is_refused() {
    let loaded = broken();
    assert_one_problem_containing(
        &loaded,
        "top_level_throw.js",
        &["ReferenceError", "undefinedFunction", "top_level_throw.js:"],
    );
    assert_one_problem_containing(
        &loaded,
        "top_level_loop.js",
        &["did not finish within 200ms"],
    );
}

#[test]
fn a_character_imports_its_resources() {
    let loaded = broken();
    let good = loaded.get("good").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let session = runtime.block_on(good.start_conversation()).unwrap();
    assert_eq!(session.system_prompt(), "Hello from resources");
}

#[test]
fn a_missing_directory_is_one_rejection() {
    let loaded = load_characters(&fixtures("no-such-directory"), &options());
    assert!(loaded.characters.is_empty());
    assert_eq!(loaded.rejections.len(), 1);
    assert!(
        loaded.rejections[0].problems[0]
            .message
            .starts_with("cannot read the characters directory")
    );
}

#[test]
fn characters_are_found_by_name_or_file_stem_and_hidden_ones_are_not_listed() {
    let loaded = load_characters(&fixtures("runtime"), &options());
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    assert_eq!(loaded.get("TOOLBOX").unwrap().name(), "Toolbox");
    assert_eq!(loaded.get("plain").unwrap().name(), "Plain");
    assert!(loaded.get("nobody").is_none());
    let listed: Vec<&str> = loaded.listed().map(|character| character.name()).collect();
    assert_eq!(listed, ["Patient", "Toolbox"]);
    let plain = loaded.get("plain").unwrap();
    assert!(plain.tools().is_empty());
    assert_eq!(plain.metadata().unwrap()["comment"], "hidden");
    assert_eq!(plain.instructions()["language"], "fr");
    assert_eq!(plain.voice_source()["path_on_server"], "voices/plain.wav");
    assert_eq!(
        loaded.get("patient").unwrap().tool_timeout(),
        Duration::from_millis(250)
    );
    assert_eq!(
        loaded.get("toolbox").unwrap().tool_timeout(),
        Duration::from_millis(100)
    );
}

#[test]
fn reload_swaps_the_set_and_running_conversations_keep_their_character() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, greeting: &str| {
        std::fs::write(
            dir.path().join("one.js"),
            format!(
                r#"export const CHARACTER_NAME = "{name}";
export const VOICE_SOURCE = {{ source_type: "file" }};
export const INSTRUCTIONS = {{ instruction_prompt: "x" }};
export class PromptGenerator {{ makeSystemPrompt() {{ return "{greeting}"; }} }}"#
            ),
        )
        .unwrap();
    };
    write("First", "first prompt");
    let registry = CharacterRegistry::load(dir.path(), options());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let old = registry.get("first").unwrap();
    let session = runtime.block_on(old.start_conversation()).unwrap();

    write("Second", "second prompt");
    let reloaded = registry.reload();
    assert!(reloaded.rejections.is_empty());
    assert!(registry.get("first").is_none());
    let new = registry.get("second").unwrap();
    assert_eq!(
        runtime
            .block_on(new.start_conversation())
            .unwrap()
            .system_prompt(),
        "second prompt"
    );

    // The conversation that started before the reload still runs on the old character.
    assert_eq!(session.character().name(), "First");
    drop(old);
    assert_eq!(
        runtime
            .block_on(session.character().start_conversation())
            .unwrap()
            .system_prompt(),
        "first prompt"
    );
}

#[test]
fn an_unknown_upper_case_export_is_warned_about_as_a_likely_typo() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("typo.js"),
        r#"export const CHARACTER_NAME = "Typo";
export const VOICE_SOURCE = { source_type: "file" };
export const INSTRUCTIONS = { instruction_prompt: "x" };
export const TOOL = [];
export class PromptGenerator { makeSystemPrompt() { return "p"; } }"#,
    )
    .unwrap();
    let captured = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writer = std::sync::Arc::clone(&captured);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || Writer(std::sync::Arc::clone(&writer)))
        .with_ansi(false)
        .finish();
    let loaded =
        tracing::subscriber::with_default(subscriber, || load_characters(dir.path(), &options()));
    assert_eq!(loaded.characters.len(), 1);
    let logs = String::from_utf8(captured.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("typo.js: export TOOL is not part of the character format"),
        "{logs}"
    );
}

/// A directory with one character, `mcp.js`, whose other exports follow `exports`.
fn mcp_character(exports: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mcp.js"),
        format!(
            r#"export const CHARACTER_NAME = "Researcher";
export const VOICE_SOURCE = {{ source_type: "file" }};
export const INSTRUCTIONS = {{ instruction_prompt: "x" }};
{exports}
export class PromptGenerator {{ makeSystemPrompt() {{ return "p"; }} }}"#
        ),
    )
    .unwrap();
    dir
}

fn configured(names: &[&str]) -> LoadOptions {
    LoadOptions {
        mcp_servers: Some(names.iter().map(|name| (*name).to_owned()).collect()),
        ..options()
    }
}

#[test]
fn a_character_with_mcp_servers_and_no_tools_of_its_own_needs_no_handler() {
    let dir = mcp_character(
        r#"export const MCP_SERVERS = ["fs", { server: "search", tools: ["search_web", "search_*"] }];"#,
    );
    let loaded = load_characters(dir.path(), &configured(&["fs", "search", "memory"]));
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    let character = loaded.get("researcher").unwrap();
    assert!(character.tools().is_empty());
    let servers: Vec<(&str, Option<&[String]>)> = character
        .mcp_servers()
        .iter()
        .map(|used| (used.server.as_str(), used.tools.as_deref()))
        .collect();
    assert_eq!(
        servers,
        [
            ("fs", None),
            (
                "search",
                Some(&["search_web".to_owned(), "search_*".to_owned()][..])
            )
        ]
    );
    let search = character.mcp_server("search").unwrap();
    assert!(search.allows("search_news"));
    assert!(!search.allows("fetch_page"));
    assert!(character.mcp_server("fs").unwrap().allows("read_file"));
    assert!(character.mcp_server("memory").is_none());
}

#[test]
fn absent_null_or_empty_mcp_servers_use_no_server() {
    for exports in [
        "",
        "export const MCP_SERVERS = null;",
        "export const MCP_SERVERS = [];",
    ] {
        let dir = mcp_character(exports);
        let loaded = load_characters(dir.path(), &configured(&[]));
        assert!(
            loaded.rejections.is_empty(),
            "{exports}: {:#?}",
            loaded.rejections
        );
        assert!(loaded.get("researcher").unwrap().mcp_servers().is_empty());
    }
}

#[test]
fn an_mcp_server_the_configuration_does_not_define_refuses_the_file() {
    let dir = mcp_character(r#"export const MCP_SERVERS = ["fs", { server: "search" }];"#);
    let loaded = load_characters(dir.path(), &configured(&["fs", "memory"]));
    assert!(loaded.characters.is_empty());
    assert_eq!(
        problems(&loaded, "mcp.js"),
        [
            "MCP_SERVERS/1/server: no MCP server named \"search\" is configured (configured: fs, memory)"
        ]
    );
    let rejection = &loaded.rejections[0];
    assert_eq!(rejection.problems[0].kind, "unknown_mcp_server");
    assert_eq!(
        rejection.problems[0].path.as_deref(),
        Some("MCP_SERVERS/1/server")
    );
    assert!(
        rejection
            .to_string()
            .ends_with("mcp.js: MCP_SERVERS/1/server: no MCP server named \"search\" is configured (configured: fs, memory)"),
        "{rejection}"
    );
}

#[test]
fn without_a_configuration_mcp_server_names_are_not_checked_against_a_list() {
    let dir = mcp_character(r#"export const MCP_SERVERS = ["fs", { server: "search" }];"#);
    let loaded = load_characters(dir.path(), &options());
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    assert_eq!(loaded.get("researcher").unwrap().mcp_servers().len(), 2);
}

#[test]
fn wrong_mcp_servers_are_refused_with_every_problem_beside_the_other_exports() {
    let dir = mcp_character(
        r#"export const TOOL_TIMEOUT_MS = 0;
export const MCP_SERVERS = ["fs", () => 1, { server: "fs", tools: "read" }, "bad name"];"#,
    );
    let loaded = load_characters(dir.path(), &configured(&["fs"]));
    assert_eq!(
        problems(&loaded, "mcp.js"),
        [
            "TOOL_TIMEOUT_MS: expected a whole number of milliseconds from 1 to 10000, got 0",
            "MCP_SERVERS/1: expected a server name or a { server, tools } object, got null",
            "MCP_SERVERS/2/tools: expected an array of tool names, got string",
            "MCP_SERVERS/2/server: \"fs\" is already listed at MCP_SERVERS/0; list each server once",
            "MCP_SERVERS/3: \"bad name\" is not an MCP server name; names are 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
        ]
    );
    let kinds: Vec<&str> = loaded.rejections[0]
        .problems
        .iter()
        .map(|problem| problem.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "invalid_export",
            "invalid_mcp_servers",
            "invalid_mcp_servers",
            "invalid_mcp_servers",
            "invalid_mcp_servers"
        ]
    );
}

#[test]
fn mcp_servers_that_are_not_an_array_are_refused() {
    let dir = mcp_character(r#"export const MCP_SERVERS = "fs";"#);
    let loaded = load_characters(dir.path(), &options());
    assert_eq!(
        problems(&loaded, "mcp.js"),
        [
            "MCP_SERVERS: expected an array of MCP server names or { server, tools } objects, got string"
        ]
    );
}

#[test]
fn tools_still_need_a_handler_when_mcp_servers_are_declared_too() {
    let dir = mcp_character(
        r#"export const MCP_SERVERS = ["fs"];
export const TOOLS = [{ type: "function", function: { name: "roll", description: "Rolls a die", parameters: { type: "object", properties: {} } } }];"#,
    );
    let loaded = load_characters(dir.path(), &configured(&["fs"]));
    assert_eq!(
        problems(&loaded, "mcp.js"),
        [
            "PromptGenerator: TOOLS declares roll but PromptGenerator has no handleToolCall(toolName, toolInput) method to implement it"
        ]
    );
}

#[test]
fn a_reload_checks_mcp_servers_against_the_same_configuration() {
    let dir = mcp_character(r#"export const MCP_SERVERS = ["fs"];"#);
    let registry = CharacterRegistry::load(dir.path(), configured(&["fs"]));
    assert!(registry.get("researcher").is_some());
    let old = mcp_character(r#"export const MCP_SERVERS = ["fs", "search"];"#);
    std::fs::copy(old.path().join("mcp.js"), dir.path().join("mcp.js")).unwrap();
    let reloaded = registry.reload();
    assert_eq!(
        problems(&reloaded, "mcp.js"),
        ["MCP_SERVERS/1: no MCP server named \"search\" is configured (configured: fs)"]
    );
    // The last good version keeps running.
    assert_eq!(
        registry.get("researcher").unwrap().mcp_servers()[0].server,
        "fs"
    );
}

struct Writer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
