//! The child process of a stdio upstream: spawned with exactly its configured environment
//! (plus `PATH` and `HOME`, so it can find `node` or `python3`) in a process group of its
//! own, killed with that group when dropped, its stderr logged line by line under the
//! server's name, and its stdout bounded per line.
//!
//! rmcp's line reader drops a line past its limit, and a line that is not JSON, silently:
//! the call waiting for that message would wait out its deadline. Here such a line ends the
//! connection instead, with a reason the calls and the health page can show. A line that
//! does not even begin like a message (a banner a server prints on stdout) is still
//! skipped, as rmcp does. A tool listing nested too deep only for some of its tools loses
//! those tools, with a warning, rather than the server its connection (see `deep`).
//!
//! A child can end while a process it started (a shell's background job) holds its stdout
//! open: no end of file ever comes. So the supervisor also waits on the child itself, a
//! failed write to its stdin ends the connection too, and the whole group is killed.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::task::{Context, Poll};

use switchboard_wire::secrets::Secrets;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::deep::{self, MAX_NESTING, Nesting};
use crate::fault::Fault;

/// Longest stderr line logged whole; the rest of a longer line is cut (the line is counted,
/// not buffered). A server's log messages are cut to it too.
pub(crate) const MAX_STDERR_LINE: usize = 4096;
/// A message line's buffer past this is freed once the line is checked, so one big result
/// does not keep its size allocated for the life of the connection.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// A spawned child and the two ends rmcp speaks over.
pub(crate) struct Spawned {
    pub process: Process,
    pub stdout: BoundedLines<ChildStdout>,
    pub stdin: WatchedStdin,
    /// Set when stdout broke a bound or stdin could not be written: why the connection ended.
    pub fault: Arc<Fault>,
}

pub(crate) fn spawn(
    server: &str,
    command: &[String],
    env: &BTreeMap<String, String>,
    max_line: usize,
    secrets: &Secrets,
) -> io::Result<Spawned> {
    let Some((program, args)) = command.split_first() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the command is empty",
        ));
    };
    let mut builder = Command::new(program);
    builder
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own group, led by it: what it starts can be killed with it.
    #[cfg(unix)]
    builder.process_group(0);
    // Only what a program needs to find its interpreter and its per-user files; the
    // gateway's own secrets (provider keys) stay out of a third-party program.
    for inherited in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(inherited) {
            builder.env(inherited, value);
        }
    }
    builder.envs(env);
    let mut child = builder.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(io::Error::other("the child's pipes were not set up"));
    };
    let process = Process::new(child);
    tokio::spawn(log_stderr(server.to_owned(), stderr, secrets.clone()));
    let fault = Arc::new(Fault::default());
    Ok(Spawned {
        process,
        stdout: BoundedLines::new(stdout, server, max_line, fault.clone()),
        stdin: WatchedStdin {
            inner: stdin,
            fault: fault.clone(),
        },
        fault,
    })
}

/// The child and its process group: the group is killed when this is dropped (the child
/// too, by `kill_on_drop`), on a restart as on shutdown.
#[derive(Debug)]
pub(crate) struct Process {
    child: Child,
    #[cfg(unix)]
    group: Option<rustix::process::Pid>,
}

impl Process {
    /// Read while the child's id is known (it is gone once the child is reaped).
    fn new(child: Child) -> Self {
        #[cfg(unix)]
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            // Never 1: a signal to "group 1" would go to every process the gateway may
            // signal.
            .filter(|id| *id > 1)
            .and_then(rustix::process::Pid::from_raw);
        Self {
            child,
            #[cfg(unix)]
            group,
        }
    }

    /// Waits for the child to exit, and reaps it.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            // Fails only when nobody is left in the group, which is what is wanted.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

/// The child's stdin: a write that fails ends the connection (the child closed its stdin or
/// died), as the end of its stdout does.
pub(crate) struct WatchedStdin {
    inner: ChildStdin,
    fault: Arc<Fault>,
}

impl WatchedStdin {
    fn watch<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(error)) = &polled {
            self.fault
                .write_failed(format!("writing to its stdin failed ({error})"));
        }
        polled
    }
}

impl AsyncWrite for WatchedStdin {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Logs each stderr line at `info` with the server's name, its credentials cut; a line past
/// [`MAX_STDERR_LINE`] is cut, so a child writing without newlines costs a fixed buffer,
/// not memory.
async fn log_stderr(server: String, mut stderr: tokio::process::ChildStderr, secrets: Secrets) {
    let mut chunk = [0u8; 8192];
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = 0usize;
    let flush = |line: &mut Vec<u8>, cut: &mut usize| {
        let text = secrets.text(&String::from_utf8_lossy(line));
        if *cut > 0 {
            tracing::info!(server = %server, "stderr: {text} [… {cut} bytes cut]", cut = *cut);
        } else {
            tracing::info!(server = %server, "stderr: {text}");
        }
        line.clear();
        *cut = 0;
    };
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for &byte in &chunk[..read] {
            if byte == b'\n' {
                flush(&mut line, &mut cut);
            } else if line.len() < MAX_STDERR_LINE {
                line.push(byte);
            } else {
                cut += 1;
            }
        }
    }
    if !line.is_empty() {
        flush(&mut line, &mut cut);
    }
}

/// Passes a child's stdout through, failing the read (and saying why in the fault) once a
/// line runs past `max_line` bytes without a newline, or a line that begins as a message
/// (`{`) is not JSON or nests deeper than rmcp reads (a tool listing loses its too-deep
/// tools instead). Only such a line is held, up to `max_line`, and passed on once checked
/// at its newline (rmcp reads whole lines anyway); other lines are only counted.
pub(crate) struct BoundedLines<R> {
    inner: R,
    /// The server's name, for the warnings.
    server: String,
    since_newline: usize,
    max_line: usize,
    fault: Arc<Fault>,
    kind: LineKind,
    line: Vec<u8>,
    nesting: Nesting,
    /// What is ready for rmcp, from `sent` on.
    ready: Vec<u8>,
    sent: usize,
    /// The child's stdout ended (what was held is in `ready`).
    ended: bool,
    /// The reason a read failed, repeated by every later read.
    failed: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// Only blanks (or a byte order mark) so far.
    Undecided,
    /// It began with `{`: a message, checked.
    Message,
    /// Anything else: skipped by rmcp, only counted here.
    Noise,
}

impl<R> BoundedLines<R> {
    fn new(inner: R, server: &str, max_line: usize, fault: Arc<Fault>) -> Self {
        Self {
            inner,
            server: server.to_owned(),
            since_newline: 0,
            max_line,
            fault,
            kind: LineKind::Undecided,
            line: Vec::new(),
            nesting: Nesting::default(),
            ready: Vec::new(),
            sent: 0,
            ended: false,
            failed: None,
        }
    }

    /// Takes in bytes just read; `Err` with the reason when they break the stream.
    fn scan(&mut self, mut fresh: &[u8]) -> Result<(), String> {
        loop {
            let (part, rest) = match fresh.iter().position(|byte| *byte == b'\n') {
                Some(at) => (&fresh[..at], Some(&fresh[at + 1..])),
                None => (fresh, None),
            };
            self.since_newline += part.len();
            if self.since_newline > self.max_line {
                return Err(format!(
                    "it sent a message longer than {} bytes (or output that is not line-delimited JSON-RPC)",
                    self.max_line
                ));
            }
            self.take(part);
            let Some(rest) = rest else {
                return Ok(());
            };
            self.end_line()?;
            self.ready.push(b'\n');
            fresh = rest;
        }
    }

    fn take(&mut self, mut part: &[u8]) {
        if self.kind == LineKind::Undecided {
            let Some(at) = part
                .iter()
                .position(|byte| !byte.is_ascii_whitespace() && ![0xEF, 0xBB, 0xBF].contains(byte))
            else {
                self.ready.extend_from_slice(part);
                return;
            };
            self.ready.extend_from_slice(&part[..at]);
            part = &part[at..];
            self.kind = if part[0] == b'{' {
                LineKind::Message
            } else {
                LineKind::Noise
            };
        }
        if self.kind == LineKind::Message {
            self.line.extend_from_slice(part);
            self.nesting.feed(part);
        } else {
            self.ready.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) -> Result<(), String> {
        let checked = if self.kind != LineKind::Message {
            Ok(())
        } else if self.nesting.deepest > MAX_NESTING {
            match deep::drop_deep_tools(&self.line, MAX_NESTING) {
                Some((kept, dropped)) => {
                    for tool in &dropped {
                        tool.warn(&self.server);
                    }
                    self.line = kept;
                    checked_json(&self.line)
                }
                None => Err(format!(
                    "it sent a message nested {} levels deep, past the {MAX_NESTING} that can be read",
                    self.nesting.deepest
                )),
            }
        } else {
            checked_json(&self.line)
        };
        if checked.is_ok() && self.kind == LineKind::Message {
            if self.ready.is_empty() {
                // Handed on without a copy: a 16 MiB line is not held twice.
                std::mem::swap(&mut self.ready, &mut self.line);
            } else {
                self.ready.extend_from_slice(&self.line);
            }
        }
        self.since_newline = 0;
        self.kind = LineKind::Undecided;
        self.nesting = Nesting::default();
        self.line.clear();
        if self.line.capacity() > KEPT_LINE_CAPACITY {
            self.line = Vec::new();
        }
        checked
    }
}

/// A message line that rmcp can parse as JSON, or why not.
fn checked_json(line: &[u8]) -> Result<(), String> {
    match serde_json::from_slice::<&serde_json::value::RawValue>(line) {
        Ok(_) => Ok(()),
        Err(error) => Err(format!(
            "it sent invalid JSON at byte {} of a message ({})",
            error.column(),
            error
        )),
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.sent < this.ready.len() {
                let give = (this.ready.len() - this.sent).min(buf.remaining());
                buf.put_slice(&this.ready[this.sent..this.sent + give]);
                this.sent += give;
                if this.sent == this.ready.len() {
                    this.ready.clear();
                    this.sent = 0;
                    if this.ready.capacity() > KEPT_LINE_CAPACITY {
                        this.ready = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(why) = &this.failed {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why.clone())));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut fresh = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut fresh) {
                Poll::Ready(Ok(())) if fresh.filled().is_empty() => {
                    // A last line without its newline goes to rmcp as it is, unchecked.
                    this.ended = true;
                    this.ready.append(&mut this.line);
                }
                Poll::Ready(Ok(())) => {
                    let held = this.ready.len();
                    if let Err(why) = this.scan(fresh.filled()) {
                        // None of these bytes reach rmcp: the line that broke the stream, and
                        // what came with it, are not half-read.
                        this.ready.truncate(held);
                        this.fault.end(why.clone());
                        this.failed = Some(why);
                    }
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read(data: &str, max_line: usize) -> (Result<String, io::Error>, Option<String>) {
        let fault = Arc::new(Fault::default());
        let mut reader = BoundedLines::new(data.as_bytes(), "test", max_line, fault.clone());
        let mut out = String::new();
        let read = reader.read_to_string(&mut out).await.map(|_| out);
        (read, fault.why())
    }

    #[tokio::test]
    async fn a_line_past_the_bound_fails_the_read_and_says_why() {
        let (read, why) = read(&format!("{}\n{}", "a".repeat(10), "b".repeat(100)), 20).await;
        assert!(read.is_err());
        assert!(why.is_some_and(|why| why.contains("longer than 20 bytes")));
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_through() {
        let data = "a".repeat(10) + "\n" + &"b".repeat(20) + "\n";
        assert_eq!(read(&data, 20).await.0.ok(), Some(data));
    }

    #[tokio::test]
    async fn noise_passes_and_a_broken_or_too_deep_message_fails_the_read() {
        let fine = "starting up\n[info] ready\n \u{feff}{\"a\": \"{[\\\"\"}\r\n";
        assert_eq!(read(fine, 1000).await.0.ok().as_deref(), Some(fine));
        let (read_broken, why) = read("{\"jsonrpc\": \"2.0\", \"id\": 1,,}\n", 1000).await;
        assert!(read_broken.is_err());
        assert_eq!(
            why.as_deref(),
            Some(
                "it sent invalid JSON at byte 28 of a message (key must be a string at line 1 column 28)"
            )
        );
        let deep = format!("{{\"a\": {}{}}}\n", "[".repeat(127), "]".repeat(127));
        let (read_deep, why) = read(&deep, 1000).await;
        assert!(read_deep.is_err());
        assert_eq!(
            why.as_deref(),
            Some("it sent a message nested 128 levels deep, past the 127 that can be read")
        );
        let deepest = format!("{{\"a\": {}{}}}\n", "[".repeat(126), "]".repeat(126));
        assert!(read(&deepest, 1000).await.0.is_ok());
    }

    #[tokio::test]
    async fn a_listing_loses_only_its_too_deep_tools() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let listing = format!(
            "noise\n{{\"id\": 1, \"result\": {{\"tools\": [{{\"name\": \"d\", \"x\": {deep}}}, {{\"name\": \"a\"}}]}}}}\n{{\"id\": 2}}\n"
        );
        let (read, why) = read(&listing, 10_000).await;
        assert_eq!(
            read.ok().as_deref(),
            Some("noise\n{\"id\": 1, \"result\": {\"tools\": [{\"name\": \"a\"}]}}\n{\"id\": 2}\n")
        );
        assert_eq!(why, None);
    }
}
