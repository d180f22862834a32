//! Reloading while characters serve: a save that breaks a file keeps its last good version
//! running with the problems reported, a reload of some files leaves the others untouched,
//! new files appear, deleted ones go, and a watched directory reloads on its own as files
//! are saved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_characters::{CharacterRegistry, LoadOptions, Location};

fn character(name: &str, prompt: &str) -> String {
    format!(
        r#"export const CHARACTER_NAME = "{name}";
export const VOICE_SOURCE = {{ source_type: "file" }};
export const INSTRUCTIONS = {{ instruction_prompt: "x" }};
export class PromptGenerator {{ makeSystemPrompt() {{ return "{prompt}"; }} }}
"#
    )
}

const BROKEN: &str = r#"export const CHARACTER_NAME = "Broken";
export const VOICE_SOURCE = { source_type: "file" };
export const INSTRUCTIONS = { instruction_prompt: "x" ;
"#;

struct Dir(tempfile::TempDir);

impl Dir {
    fn new(files: &[(&str, String)]) -> Self {
        let dir = Self(tempfile::tempdir().unwrap());
        for (name, text) in files {
            dir.write(name, text);
        }
        dir
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    fn registry(&self) -> Arc<CharacterRegistry> {
        Arc::new(CharacterRegistry::load(
            self.0.path(),
            LoadOptions::default(),
        ))
    }
}

fn prompt(registry: &CharacterRegistry, name: &str) -> String {
    let character = registry
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not loaded"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(character.start_conversation())
        .unwrap()
        .system_prompt()
        .to_owned()
}

fn names(registry: &CharacterRegistry) -> Vec<String> {
    registry
        .current()
        .characters
        .iter()
        .map(|character| character.name().to_owned())
        .collect()
}

#[test]
fn a_broken_save_keeps_the_last_good_version_running_and_reports_the_problem() {
    let dir = Dir::new(&[("one.js", character("One", "first"))]);
    let registry = dir.registry();
    dir.write("one.js", BROKEN);
    let loaded = registry.reload();

    assert_eq!(
        prompt(&registry, "one"),
        "first",
        "the last good version serves"
    );
    let rejection = loaded.rejection(&dir.path("one.js")).unwrap();
    assert_eq!(rejection.problems.len(), 1, "{rejection}");
    let problem = &rejection.problems[0];
    assert_eq!(problem.kind, "syntax_error");
    assert_eq!(
        problem.location,
        Some(Location {
            file: "one.js".into(),
            line: 3,
            column: problem.location.as_ref().unwrap().column
        })
    );
    assert!(
        problem.message.starts_with("syntax error at line 3"),
        "{problem:?}"
    );

    dir.write("one.js", &character("One", "second"));
    let loaded = registry.reload_files(&[dir.path("one.js")]);
    assert!(loaded.rejections.is_empty(), "{:?}", loaded.rejections);
    assert_eq!(prompt(&registry, "one"), "second");
}

#[test]
fn a_file_broken_from_the_start_has_no_running_version() {
    let dir = Dir::new(&[("broken.js", BROKEN.to_owned())]);
    let registry = dir.registry();
    let loaded = registry.reload();
    assert!(loaded.characters.is_empty());
    assert_eq!(loaded.rejections.len(), 1);
    assert!(registry.get("broken").is_none());
}

#[test]
fn reloading_some_files_leaves_the_others_untouched() {
    let dir = Dir::new(&[
        ("a.js", character("A", "a1")),
        ("b.js", character("B", "b1")),
    ]);
    let registry = dir.registry();
    let b_before = registry.get("b").unwrap();
    dir.write("a.js", &character("A", "a2"));
    dir.write("b.js", &character("B", "b2"));
    registry.reload_files(&[dir.path("a.js")]);
    assert_eq!(prompt(&registry, "a"), "a2");
    assert!(
        Arc::ptr_eq(&registry.get("b").unwrap(), &b_before),
        "b.js was not named, so it was not loaded again"
    );
    assert_eq!(prompt(&registry, "b"), "b1");
}

#[test]
fn new_files_appear_and_deleted_files_go() {
    let dir = Dir::new(&[("a.js", character("A", "a")), ("b.js", BROKEN.to_owned())]);
    let registry = dir.registry();
    dir.write("c.js", &character("C", "c"));
    std::fs::remove_file(dir.path("a.js")).unwrap();
    std::fs::remove_file(dir.path("b.js")).unwrap();
    let loaded = registry.reload_files(&[dir.path("a.js"), dir.path("b.js"), dir.path("c.js")]);
    assert_eq!(names(&registry), ["C"]);
    assert!(loaded.rejections.is_empty(), "{:?}", loaded.rejections);
}

#[test]
fn a_name_taken_by_another_file_is_refused_and_retried_when_freed() {
    let dir = Dir::new(&[("a.js", character("Twin", "a"))]);
    let registry = dir.registry();
    dir.write("b.js", &character("twin", "b"));
    let loaded = registry.reload_files(&[dir.path("b.js")]);
    assert_eq!(names(&registry), ["Twin"]);
    let problems = &loaded.rejection(&dir.path("b.js")).unwrap().problems;
    assert_eq!(problems[0].kind, "duplicate_name");
    assert_eq!(problems[0].path.as_deref(), Some("CHARACTER_NAME"));

    // a.js lets the name go; b.js, refused for it, is loaded again with a.js.
    dir.write("a.js", &character("Solo", "a"));
    let loaded = registry.reload_files(&[dir.path("a.js")]);
    assert!(loaded.rejections.is_empty(), "{:?}", loaded.rejections);
    assert_eq!(names(&registry), ["Solo", "twin"]);
}

#[test]
fn a_broken_file_does_not_keep_a_name_another_file_now_holds() {
    let dir = Dir::new(&[("b.js", character("Twin", "b"))]);
    let registry = dir.registry();
    // a.js sorts first and takes the name while b.js breaks: b's old version cannot keep it.
    dir.write("a.js", &character("Twin", "a"));
    dir.write("b.js", BROKEN);
    let loaded = registry.reload();
    assert_eq!(names(&registry), ["Twin"]);
    assert_eq!(prompt(&registry, "twin"), "a");
    assert!(loaded.rejection(&dir.path("b.js")).is_some());
}

#[test]
fn tool_problems_carry_their_json_path() {
    let dir = Dir::new(&[(
        "tools.js",
        r#"export const CHARACTER_NAME = "Tools";
export const VOICE_SOURCE = { source_type: "file" };
export const INSTRUCTIONS = { instruction_prompt: "x" };
export const TOOLS = [{ type: "function", function: { name: "bad-name", description: "d" } }];
export class PromptGenerator { makeSystemPrompt() { return "p"; } handleToolCall() { return ""; } }
"#
        .to_owned(),
    )]);
    let loaded = dir.registry().current();
    let problems = &loaded.rejections[0].problems;
    let problem = problems
        .iter()
        .find(|problem| problem.path.as_deref() == Some("TOOLS/0/function/name"))
        .unwrap_or_else(|| panic!("{problems:#?}"));
    assert_eq!(problem.kind, "invalid_schema");
    assert!(
        problem.message.starts_with("TOOLS/0/function/name: "),
        "{problem:?}"
    );
}

/// Waits (up to a bound, never asserting speed) until `done` holds.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_watched_directory_reloads_saved_files_on_its_own() {
    let dir = Dir::new(&[
        ("a.js", character("A", "a1")),
        ("b.js", character("B", "b1")),
    ]);
    std::fs::create_dir(dir.path("resources")).unwrap();
    let registry = dir.registry();
    let watcher = registry.watch().unwrap();
    let b_before = registry.get("b").unwrap();

    dir.write("a.js", &character("A", "a2"));
    eventually("a.js reloads", || prompt(&registry, "a") == "a2");
    assert!(Arc::ptr_eq(&registry.get("b").unwrap(), &b_before));

    dir.write("a.js", BROKEN);
    eventually("a.js's problems are reported", || {
        registry.current().rejection(&dir.path("a.js")).is_some()
    });
    assert_eq!(prompt(&registry, "a"), "a2", "the last good version serves");

    dir.write("c.js", &character("C", "c"));
    eventually("c.js appears", || registry.get("c").is_some());
    std::fs::remove_file(dir.path("b.js")).unwrap();
    eventually("b.js goes", || registry.get("b").is_none());

    // A change to an imported module reloads every character.
    let c_before = registry.get("c").unwrap();
    dir.write("resources/shared.js", "export const x = 1;");
    eventually("everything reloads", || {
        !Arc::ptr_eq(&registry.get("c").unwrap(), &c_before)
    });

    // Loading reads the files; reads must not start another reload.
    let settled = registry.current();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        Arc::ptr_eq(&settled, &registry.current()),
        "a reload without a save"
    );

    drop(watcher);
    assert_eq!(prompt(&registry, "a"), "a2");
}

#[test]
fn watching_a_missing_directory_is_an_error_naming_it() {
    let registry = Arc::new(CharacterRegistry::load(
        Path::new("/no/such/characters"),
        LoadOptions::default(),
    ));
    let error = registry.watch().unwrap_err().to_string();
    assert!(error.contains("/no/such/characters"), "{error}");
}

fn using(name: &str, servers: &str) -> String {
    format!(
        "{}export const MCP_SERVERS = {servers};\n",
        character(name, "p")
    )
}

fn configured(names: &[&str]) -> Option<Vec<String>> {
    Some(names.iter().map(|name| (*name).to_owned()).collect())
}

#[test]
fn new_configured_mcp_servers_reload_the_files_that_use_servers_and_no_other() {
    let dir = Dir::new(&[
        ("a.js", using("A", r#"["fs", "search"]"#)),
        ("b.js", character("B", "p")),
        ("c.js", using("C", r#"["fs"]"#)),
    ]);
    let registry = CharacterRegistry::load(
        dir.0.path(),
        LoadOptions {
            mcp_servers: configured(&["fs"]),
            ..LoadOptions::default()
        },
    );
    assert_eq!(names(&registry), ["B", "C"]);
    let (b, c) = (registry.get("b").unwrap(), registry.get("c").unwrap());

    assert!(registry.set_mcp_servers(configured(&["fs"])).is_none());

    let loaded = registry
        .set_mcp_servers(configured(&["fs", "search"]))
        .unwrap();
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    assert_eq!(names(&registry), ["A", "B", "C"]);
    assert!(Arc::ptr_eq(&b, &registry.get("b").unwrap()));
    assert!(!Arc::ptr_eq(&c, &registry.get("c").unwrap()));

    // A server that goes refuses the files that name it; their last good versions keep running.
    let loaded = registry.set_mcp_servers(configured(&["search"])).unwrap();
    let problems: Vec<String> = loaded
        .rejections
        .iter()
        .flat_map(|rejection| &rejection.problems)
        .map(|problem| problem.message.clone())
        .collect();
    assert_eq!(
        problems,
        [
            "MCP_SERVERS/0: no MCP server named \"fs\" is configured (configured: search)",
            "MCP_SERVERS/0: no MCP server named \"fs\" is configured (configured: search)",
        ]
    );
    assert_eq!(names(&registry), ["A", "B", "C"]);

    // Without a configuration nothing is checked against a list.
    assert!(
        registry
            .set_mcp_servers(None)
            .unwrap()
            .rejections
            .is_empty()
    );
    // A later reload uses the names set last.
    assert!(registry.reload().rejections.is_empty());
}
