//! `switchboard decode`: a captured body in, one chat.completion out; a cut body names the
//! byte where it stopped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../switchboard-wire/tests/fixtures")
        .join(name)
}

fn decode(provider: &str, file: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["decode", "--provider", provider])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn each_format_decodes_to_the_same_completion_shape() {
    for (provider, file, first_call) in [
        ("openai", "openai_parallel.sse", "get_weather"),
        ("openai", "openai_parallel.json", "get_weather"),
        ("anthropic", "anthropic_tools.sse", "search"),
        ("ollama", "ollama_tools.ndjson", "forecast"),
    ] {
        let output = decode(provider, &fixture(file));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{file}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let completion: Value = serde_json::from_slice(&output.stdout).unwrap();
        let choice = &completion["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls", "{file}");
        assert_eq!(
            choice["message"]["tool_calls"][0]["function"]["name"], first_call,
            "{file}"
        );
        let arguments = choice["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert!(
            serde_json::from_str::<Value>(arguments)
                .unwrap()
                .is_object(),
            "{file}: arguments are JSON text"
        );
        let usage = &completion["usage"];
        assert_eq!(
            usage["total_tokens"].as_u64(),
            Some(
                usage["prompt_tokens"].as_u64().unwrap()
                    + usage["completion_tokens"].as_u64().unwrap()
            )
        );
    }
}

#[test]
fn a_cut_body_names_the_byte_and_exits_1() {
    let whole = std::fs::read(fixture("openai_parallel.sse")).unwrap();
    let cut = std::env::temp_dir().join(format!("switchboard-cut-{}.sse", std::process::id()));
    std::fs::write(&cut, &whole[..700]).unwrap();
    let output = decode("openai", &cut);
    let _ = std::fs::remove_file(&cut);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("at byte 700") && stderr.contains("[DONE]"),
        "{stderr}"
    );
}
