//! A real model server for the real-backend suite, not a double: llama.cpp's `llama-server`
//! running SmolLM2-135M-Instruct, as `scripts/llama-server setup` builds it. The binary, the
//! weights and the chat template come from `LLAMA_SERVER_BIN`, `LLAMA_MODEL` and
//! `LLAMA_TEMPLATE`; without them the suite's tests print a SKIP line and pass, unless
//! `SWITCHBOARD_REQUIRE_PEERS=1` (as CI sets it), where they fail (see [`crate::peers`]); a
//! quick run (`SWITCHBOARD_QUICK=1`) leaves the server out.
//!
//! The server runs with a fixed seed, without prompt-cache reuse (which changes sampling) and
//! with one slot (requests in a batch change each other's numerics), so the same request
//! gets the same answer every time; and with one thread, because llama.cpp's threads wait for
//! each other at every step: on a busy machine two ran 15 times slower than one.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What `scripts/llama-server setup` prints, to `eval` before running the suite.
const SETUP_HINT: &str = "scripts/test, or eval \"$(scripts/llama-server setup)\" and export the three (builds llama.cpp's server once per machine, about 10 minutes)";
/// Loading the 98 MB model takes about a second; a slow disk or a busy machine more.
const STARTUP_LIMIT: Duration = Duration::from_secs(180);

/// A running `llama-server` on a free loopback port; stopped when dropped, and also when the
/// test process ends however it ends (see [`LlamaServer::start`]).
#[derive(Debug)]
pub struct LlamaServer {
    base: String,
    log: PathBuf,
    watchdog: Child,
    /// The watchdog's standard input: closing it stops the server.
    lifeline: Option<ChildStdin>,
}

/// Whether the server keeps prompts' KV cache between requests.
#[derive(Debug, Clone, Copy)]
enum Cache {
    /// Every prompt evaluated in full, on one slot: deterministic answers for the tests.
    Off,
    On {
        slots: u32,
    },
}

/// The three files the server needs, from the environment.
#[derive(Debug)]
struct Files {
    binary: PathBuf,
    model: PathBuf,
    template: PathBuf,
}

impl Files {
    /// `None` when none of the variables is set; a panic naming the problem when only some
    /// are, or a file is missing.
    fn from_env() -> Option<Self> {
        let names = ["LLAMA_SERVER_BIN", "LLAMA_MODEL", "LLAMA_TEMPLATE"];
        let values: Vec<Option<PathBuf>> = names
            .iter()
            .map(|name| {
                std::env::var_os(name)
                    .filter(|value| !value.is_empty())
                    .map(PathBuf::from)
            })
            .collect();
        if values.iter().all(Option::is_none) {
            return None;
        }
        for (name, value) in names.iter().zip(&values) {
            match value {
                None => panic!(
                    "{name} is not set while the other llama-server variables are; {SETUP_HINT}"
                ),
                Some(path) if !path.is_file() => {
                    panic!("{name}={} is not a file; {SETUP_HINT}", path.display())
                }
                Some(_) => {}
            }
        }
        let mut values = values.into_iter().flatten();
        Some(Self {
            binary: values.next()?,
            model: values.next()?,
            template: values.next()?,
        })
    }
}

impl LlamaServer {
    /// The model name the suite's routes ask for (the server serves one model, whatever the
    /// name).
    pub const MODEL: &'static str = "SmolLM2-135M-Instruct";

    /// Starts a server and waits until `/health` answers. `None` when the variables are not
    /// set, or in a quick run: a SKIP line naming the running test goes to standard error
    /// (see [`crate::peers`]). Panics when `SWITCHBOARD_REQUIRE_PEERS=1` is set and the
    /// variables are not, or when the server does not come up (with its log).
    pub fn start() -> Option<Self> {
        let files = Self::files()?;
        Some(Self::launch(&files, Cache::Off))
    }

    /// A server as one is run in production: prompt caching on, `slots` conversations kept
    /// at once, and `/metrics` (whose `llamacpp:prompt_tokens_total` sums the prompt tokens
    /// it evaluated, `timings.prompt_n`). `None`, with the same SKIP line, when the
    /// variables are not set.
    pub fn start_caching(slots: u32) -> Option<Self> {
        let files = Self::files()?;
        Some(Self::launch(&files, Cache::On { slots }))
    }

    /// The server's files, or `None` after a SKIP line (a panic when peers are required).
    fn files() -> Option<Files> {
        crate::peers::peer("llama-server", || {
            Files::from_env().ok_or_else(|| {
                format!(
                    "LLAMA_SERVER_BIN, LLAMA_MODEL and LLAMA_TEMPLATE are not set; to run it: {SETUP_HINT}"
                )
            })
        })
    }

    /// One server for the whole test process, started by the first test that asks; the
    /// tests then queue on its single slot. It stops when the process ends.
    pub fn shared() -> Option<&'static Self> {
        static SHARED: OnceLock<Option<LlamaServer>> = OnceLock::new();
        let mut first = false;
        let shared = SHARED.get_or_init(|| {
            first = true;
            Self::start()
        });
        match shared {
            Some(server) => Some(server),
            // The first caller said why; later ones say it for their own test.
            None => {
                if !first {
                    let _ = Self::start();
                }
                None
            }
        }
    }

    fn launch(files: &Files, cache: Cache) -> Self {
        let port = free_port();
        let log = std::env::temp_dir().join(format!("switchboard-llama-server-{port}.log"));
        let log_file = std::fs::File::create(&log)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", log.display()));
        let log_copy = log_file.try_clone().unwrap();
        // The shell starts the server and waits on its standard input, a pipe from this
        // process: when this process ends in any way the pipe closes, `read` returns and the
        // server is killed. A static server is never dropped, so this is what stops it.
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(r#""$@" & server=$!; read -r _; kill -KILL "$server" 2>/dev/null; wait "$server""#)
            .arg("llama-server-watchdog")
            .arg(&files.binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--model")
            .arg(&files.model)
            .args(["--jinja", "--chat-template-file"])
            .arg(&files.template)
            .args(["--seed", "42", "--threads", "1"])
            .args(match cache {
                Cache::Off => vec![
                    "--no-cache-prompt".to_owned(),
                    "--ctx-size".to_owned(),
                    "4096".to_owned(),
                    "--parallel".to_owned(),
                    "1".to_owned(),
                ],
                Cache::On { slots } => vec![
                    "--metrics".to_owned(),
                    "--ctx-size".to_owned(),
                    (2048 * slots).to_string(),
                    "--parallel".to_owned(),
                    slots.to_string(),
                ],
            })
            .stdin(Stdio::piped())
            .stdout(log_file)
            .stderr(log_copy)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run sh to start llama-server: {error}"));
        let mut server = Self {
            base: format!("http://127.0.0.1:{port}"),
            log,
            lifeline: None,
            watchdog,
        };
        server.lifeline = server.watchdog.stdin.take();
        server.wait_until_healthy(port);
        server
    }

    fn wait_until_healthy(&mut self, port: u16) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.watchdog.try_wait() {
                panic!(
                    "llama-server exited ({status}) before answering /health; its log, {}:\n{}",
                    self.log.display(),
                    self.log_tail()
                );
            }
            if health_is_ok(port) {
                return;
            }
            if started.elapsed() > STARTUP_LIMIT {
                panic!(
                    "llama-server did not answer /health within {STARTUP_LIMIT:?}; its log, {}:\n{}",
                    self.log.display(),
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `http://127.0.0.1:PORT`; the OpenAI-compatible API is under `/v1`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The file the server's output goes to.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last 40 lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let _ = self.watchdog.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// `GET /health` answered 200 (it is 503 while the model loads).
fn health_is_ok(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}
