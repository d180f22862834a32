//! MCP servers for tests: the reference servers from npm (pinned), Python with the official
//! `mcp` SDK, and a server process on a free port that dies with the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::npm::npm_package;
use crate::peers::peer;

/// The reference servers' version, pinned (the registry mirror's newest in Nov 2026).
pub const REFERENCE_SERVERS: &str = "2026.8.31";

/// `node` and the entry point of `@modelcontextprotocol/server-<name>`.
pub fn reference_server(name: &str) -> Option<(String, PathBuf)> {
    let package = format!("@modelcontextprotocol/server-{name}");
    peer(&package.clone(), || {
        let node_runs = Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success());
        if !node_runs {
            return Err("node is missing".to_owned());
        }
        let root = npm_package(&package, REFERENCE_SERVERS)?;
        Ok((
            "node".to_owned(),
            root.join("node_modules")
                .join(&package)
                .join("dist/index.js"),
        ))
    })
}

/// `python3`, when it runs (and, with `module`, imports it).
pub fn python(module: Option<&str>) -> Option<String> {
    let what = module.map_or("python3".to_owned(), |module| {
        format!("python3 with {module}")
    });
    peer(&what, || {
        let mut command = Command::new("python3");
        command.arg("-c").arg(match module {
            Some(module) => format!("import {module}"),
            None => "pass".to_owned(),
        });
        match command.stdout(Stdio::null()).stderr(Stdio::null()).status() {
            Ok(status) if status.success() => Ok("python3".to_owned()),
            _ => Err(format!(
                "python3 (or its {}) is missing; pip install -r tests/requirements.txt",
                module.unwrap_or("interpreter")
            )),
        }
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Writes `text` to `name` in `dir` and returns its path as a string.
pub fn script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A server process the test started; killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    _child: tokio::process::Child,
}

impl ServerProcess {
    /// Runs `program args` with `env` added, and waits until `port` accepts connections.
    pub async fn start(program: &str, args: &[&str], env: &[(&str, &str)], port: u16) -> Self {
        let child = tokio::process::Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{program} did not listen on {port} within a minute"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self { _child: child }
    }
}
