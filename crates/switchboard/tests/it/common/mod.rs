//! What the tests that run `switchboard` as a process share: the command with the
//! environment cleared of the variables `serve` reads, and a running `serve` whose log is
//! kept.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long `serve` may take to start listening, or to log what a signal made it do.
pub const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// The repository's demonstration characters.
pub fn characters() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../characters")
        .display()
        .to_string()
}

/// `switchboard`, without the variables that would give `serve` routes or settings the
/// test did not write.
pub fn switchboard() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    for variable in [
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "OLLAMA_HOST",
        "SWITCHBOARD_CONFIG",
        "SWITCHBOARD_LISTEN",
        "SWITCHBOARD_STATE",
        "RUST_LOG",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SDK_DISABLED",
        "OTEL_TRACES_EXPORTER",
        "OTEL_TRACES_SAMPLER",
    ] {
        command.env_remove(variable);
    }
    command
}

/// A running `switchboard serve`, killed when dropped; its log is kept.
pub struct Served {
    child: Child,
    pub base: String,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `serve` with this configuration file (and variables) and waits until it
    /// listens.
    pub fn start(config: &Path, listen: &str, env: &[(&str, &str)]) -> Self {
        let mut child = switchboard()
            .args(["serve", "--config"])
            .arg(config)
            .args(["--listen", listen])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (found, address) = mpsc::channel();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on http://") {
                    let _ = found.send(line[at + "listening on ".len()..].trim().to_owned());
                }
                let mut log = lines.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let base = address
            .recv_timeout(PROCESS_TIMEOUT)
            .unwrap_or_else(|_| panic!("serve did not start listening:\n{}", log.lock().unwrap()));
        let base = base.replace("0.0.0.0", "127.0.0.1");
        Self { child, base, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends a signal (`HUP`, `TERM`) to the process.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// The names of the process's threads.
    pub fn threads(&self) -> Vec<String> {
        let tasks = format!("/proc/{}/task", self.child.id());
        std::fs::read_dir(tasks)
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .map(|name| name.trim().to_owned())
            .collect()
    }

    /// Stops it as an operator does (SIGTERM) and waits for it to exit.
    pub fn stop(&mut self) {
        self.signal("TERM");
        self.exit_code();
    }

    /// Waits for the process to exit (within [`PROCESS_TIMEOUT`]); its exit code.
    pub fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PROCESS_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "serve did not stop:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `text` occurs `times` times in the log; the log then.
    pub fn wait_for_log(&self, text: &str, times: usize) -> String {
        let deadline = Instant::now() + PROCESS_TIMEOUT;
        loop {
            let log = self.log();
            if log.matches(text).count() >= times {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "the log never said {text:?} {times} time(s):\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
