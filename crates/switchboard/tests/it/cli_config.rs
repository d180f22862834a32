//! Configuration as an operator changes it: `switchboard check-config` naming every problem
//! with its key path (exit 1) or summing up what would be served (exit 0), and a running
//! `serve` taking a changed file on SIGHUP (new routes and keys at once) or, when the file
//! has problems, logging each one and serving on as before.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Served, characters, switchboard};
use serde_json::{Value, json};
use switchboard_testkit::{OpenAiScript, ScriptedServer};

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn route(name: &str, url: &str) -> String {
    format!("[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nurl = \"{url}\"\nmodel = \"m\"\n")
}

fn check_config(file: &Path, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let output: Output = switchboard()
        .args(["--characters", &characters(), "check-config"])
        .arg(file)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn check_config_names_every_problem_with_its_key_path_or_sums_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_config(
        dir.path(),
        &format!(
            "character_max_tokens = 0\n{}[[route]]\nname = \"local\"\nprovider = \"olama\"\nurl = \"127.0.0.1:11434\"\nmodel = \"m\"\n[[key]]\nname = \"ci\"\nkey_env = \"CI_KEY\"\nmax_concurrent = 0\n",
            route("qwen", "http://127.0.0.1:9/v1")
        ),
    );
    let (code, stdout, stderr) = check_config(&file, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "route[1] (\"local\").provider: \"olama\" is not one of openai, anthropic, ollama\n\
         route[1] (\"local\").url: \"127.0.0.1:11434\" must start with http:// or https://\n\
         character_max_tokens must be at least 1\n\
         key[0] (\"ci\").max_concurrent must be at least 1; leave it out for no limit\n"
    );
    assert!(
        stderr.ends_with("switchboard.toml: 4 problem(s)\n"),
        "{stderr}"
    );

    // A sound file whose environment and references fail: those are named together too.
    let file = write_config(
        dir.path(),
        &format!(
            "listen = \"0.0.0.0:8080\"\ncharacter_route = \"llama\"\n{}[[key]]\nname = \"ci\"\nkey_env = \"CI_KEY\"\n[[key]]\nname = \"ops\"\nkey_env = \"OPS_KEY\"\n",
            route("qwen", "http://127.0.0.1:9/v1")
        ),
    );
    let (code, stdout, _) = check_config(&file, &[("CI_KEY", "sk-ci")]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(
        stdout,
        "key[1] (\"ops\").key_env: the environment variable OPS_KEY is not set or is empty\n\
         character_route: no route is named \"llama\"\n"
    );

    // Text that is not TOML: one line, where.
    let file = write_config(dir.path(), "listen = \"127.0.0.1:8080\"\n[[route]\n");
    let (code, stdout, _) = check_config(&file, &[]);
    assert_eq!(code, Some(1));
    assert!(stdout.starts_with("line 2, column "), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");

    let file = write_config(
        dir.path(),
        &format!(
            "listen = \"0.0.0.0:8080\"\n{}{}[[key]]\nname = \"ci\"\nkey_env = \"CI_KEY\"\n",
            route("qwen", "http://127.0.0.1:9/v1"),
            route("claude", "http://127.0.0.1:9")
        ),
    );
    let (code, stdout, stderr) = check_config(&file, &[("CI_KEY", "sk-ci")]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(&format!("{}: OK\n", file.display())),
        "{stdout}"
    );
    for line in [
        "listen: 0.0.0.0:8080\n",
        "routes: 2 (qwen, claude)\n",
        "keys: 1\n",
        "characters: 5 loaded from ",
    ] {
        assert!(stdout.contains(line), "{line}\nin:\n{stdout}");
    }

    let (code, _, stderr) = check_config(&dir.path().join("absent.toml"), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read "), "{stderr}");
}

/// A backend that answers every request with its own name.
async fn backend(name: &'static str) -> ScriptedServer {
    ScriptedServer::responding(move |_| {
        OpenAiScript::new()
            .text(&format!("from {name}"))
            .finish("stop", 1, 1)
            .reply()
    })
    .await
}

/// A chat request for `model` with `key`: the status and the answer's text (or error code).
async fn ask(served: &Served, key: &str, model: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.base))
        .bearer_auth(key)
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    let said = body["choices"][0]["message"]["content"]
        .as_str()
        .or_else(|| body["error"]["code"].as_str())
        .unwrap_or_default()
        .to_owned();
    (status, said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_swaps_routes_and_keys_or_keeps_serving_and_names_every_problem() {
    let (a, b) = (backend("a").await, backend("b").await);
    let dir = tempfile::tempdir().unwrap();
    let head = format!("characters = \"{}\"\n", characters());
    let ci = "[[key]]\nname = \"ci\"\nkey_env = \"CI_KEY\"\n";
    let file = write_config(
        dir.path(),
        &format!(
            "{head}{}{ci}routes = [\"a\"]\n",
            route("a", &format!("{}/v1", a.base))
        ),
    );
    let env = [("CI_KEY", "sk-ci"), ("OPS_KEY", "sk-ops")];
    let served = Served::start(&file, "127.0.0.1:0", &env);
    assert_eq!(ask(&served, "sk-ci", "a").await, (200, "from a".into()));
    assert_eq!(ask(&served, "sk-ci", "b").await.0, 404);
    assert_eq!(ask(&served, "sk-ops", "a").await.0, 401);

    // Route b, key ci allowed to use it, key ops for b only, and a setting that needs a
    // restart.
    let reloaded = format!(
        "{head}max_connections = 100\n{}{}{ci}routes = [\"a\", \"b\"]\n[[key]]\nname = \"ops\"\nkey_env = \"OPS_KEY\"\nroutes = [\"b\"]\n",
        route("a", &format!("{}/v1", a.base)),
        route("b", &format!("{}/v1", b.base))
    );
    write_config(dir.path(), &reloaded);
    served.signal("HUP");
    let log = served.wait_for_log("configuration reloaded", 1);
    assert!(
        log.contains("2 route(s) (added b), 2 key(s) (added ops; changed ci)"),
        "{log}"
    );
    assert!(
        log.contains("max_connections changed, which takes a restart; the running value stays"),
        "{log}"
    );
    assert_eq!(ask(&served, "sk-ci", "b").await, (200, "from b".into()));
    assert_eq!(ask(&served, "sk-ops", "b").await, (200, "from b".into()));
    assert_eq!(
        ask(&served, "sk-ops", "a").await,
        (404, "model_not_found".into())
    );

    // Problems in the file: each is logged, and the configuration above keeps serving.
    write_config(
        dir.path(),
        &format!(
            "{head}{}[[route]]\nname = \"c\"\nprovider = \"openai\"\nurl = \"nowhere\"\nmodel = \"m\"\n{ci}requests_per_minute = 0\n",
            route("a", "http://127.0.0.1:9/v1")
        ),
    );
    served.signal("HUP");
    let log = served.wait_for_log("configuration not reloaded", 1);
    for problem in [
        "route[1] (\"c\").url: \"nowhere\" must start with http:// or https://",
        "key[0] (\"ci\").requests_per_minute must be at least 1; leave it out for no limit",
        "configuration not reloaded: 2 problem(s) in ",
    ] {
        assert!(log.contains(problem), "{problem}\nin:\n{log}");
    }
    // Problems only the environment or the routes reveal are named the same way.
    write_config(
        dir.path(),
        &format!(
            "{head}character_route = \"gone\"\n{}{ci}[[key]]\nname = \"new\"\nkey_env = \"NEW_KEY\"\n",
            route("a", "http://127.0.0.1:9/v1")
        ),
    );
    served.signal("HUP");
    let log = served.wait_for_log("configuration not reloaded", 2);
    for problem in [
        "key[1] (\"new\").key_env: the environment variable NEW_KEY is not set or is empty",
        "character_route: no route is named \"gone\"",
    ] {
        assert!(log.contains(problem), "{problem}\nin:\n{log}");
    }
    assert_eq!(ask(&served, "sk-ci", "b").await, (200, "from b".into()));
    assert_eq!(ask(&served, "sk-ops", "b").await, (200, "from b".into()));
    assert_eq!(ask(&served, "sk-ci", "a").await, (200, "from a".into()));
    assert_eq!(log.matches("configuration reloaded").count(), 1, "{log}");
}

/// A gateway-only deployment (no `characters` setting, no `./characters` folder) starts
/// saying plainly that no characters are loaded: no rejected "character", no warning about
/// a folder it cannot watch. A folder configured explicitly and missing is still a problem.
#[test]
fn a_missing_default_characters_folder_is_no_rejection_and_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &route("a", "http://127.0.0.1:9/v1"));
    let mut served = Served::start(&config, "127.0.0.1:0", &[]);
    served.stop();
    let log = served.log();
    assert!(
        log.contains("no characters loaded: there is no characters folder"),
        "{log}"
    );
    assert!(!log.contains("rejected"), "{log}");
    assert!(
        !log.lines()
            .any(|line| line.contains("WARN") && line.contains("characters")),
        "{log}"
    );

    let missing = dir.path().join("missing");
    let config = write_config(
        dir.path(),
        &format!(
            "characters = \"{}\"\n{}",
            missing.display(),
            route("a", "http://127.0.0.1:9/v1")
        ),
    );
    let mut served = Served::start(&config, "127.0.0.1:0", &[]);
    served.stop();
    let log = served.log();
    assert!(log.contains("0 loaded, 1 rejected"), "{log}");
    assert!(log.contains("reload only on SIGHUP"), "{log}");
}

/// `--help` lists the commands as often as a user reaches for them, and says what `serve`
/// serves now.
#[test]
fn help_lists_serve_first_and_names_the_three_apis() {
    let output = switchboard().arg("--help").output().unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    // Commands sit two spaces in; their descriptions may wrap onto deeper lines.
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(&commands[..4], ["serve", "chat", "check", "call"], "{help}");
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "serve Serve the gateway: OpenAI Chat Completions, Anthropic Messages and OpenAI Responses"
        ),
        "{help}"
    );
}
