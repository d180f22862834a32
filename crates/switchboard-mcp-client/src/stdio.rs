//! The child process of a stdio upstream: spawned with exactly its configured environment
//! (plus `PATH` and `HOME`, so it can find `node` or `python3`), killed when dropped, its
//! stderr logged line by line under the server's name, and its stdout bounded per line.
//!
//! rmcp's line reader already drops a line past its limit, but it drops it silently and the
//! call waiting for that message would wait out its deadline. Here a line past the bound
//! ends the connection instead, with a reason the calls and the health page can show.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Longest stderr line logged whole; the rest of a longer line is cut (the line is counted,
/// not buffered). A server's log messages are cut to it too.
pub(crate) const MAX_STDERR_LINE: usize = 4096;

/// A spawned child and the two ends rmcp speaks over.
pub(crate) struct Spawned {
    pub child: Child,
    pub stdout: BoundedLines<ChildStdout>,
    pub stdin: ChildStdin,
    /// Set when stdout broke the line bound: why the connection ended.
    pub overflow: Arc<Mutex<Option<String>>>,
}

pub(crate) fn spawn(
    server: &str,
    command: &[String],
    env: &BTreeMap<String, String>,
    max_line: usize,
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
    tokio::spawn(log_stderr(server.to_owned(), stderr));
    let overflow = Arc::new(Mutex::new(None));
    Ok(Spawned {
        child,
        stdout: BoundedLines {
            inner: stdout,
            since_newline: 0,
            max_line,
            overflow: overflow.clone(),
        },
        stdin,
        overflow,
    })
}

/// Logs each stderr line at `info` with the server's name; a line past [`MAX_STDERR_LINE`]
/// is cut, so a child writing without newlines costs a fixed buffer, not memory.
async fn log_stderr(server: String, mut stderr: tokio::process::ChildStderr) {
    let mut chunk = [0u8; 8192];
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = 0usize;
    let flush = |line: &mut Vec<u8>, cut: &mut usize| {
        let text = String::from_utf8_lossy(line);
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

/// Passes a child's stdout through, failing the read once a line runs past `max_line`
/// bytes without a newline. The bytes are not held here; this only counts them.
pub(crate) struct BoundedLines<R> {
    inner: R,
    since_newline: usize,
    max_line: usize,
    overflow: Arc<Mutex<Option<String>>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.since_newline > self.max_line {
            return Poll::Ready(Err(too_long(self.max_line)));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let fresh = &buf.filled()[before..];
                match fresh.iter().rposition(|byte| *byte == b'\n') {
                    Some(at) => this.since_newline = fresh.len() - at - 1,
                    None => this.since_newline += fresh.len(),
                }
                if this.since_newline > this.max_line {
                    let why = format!(
                        "it sent a message longer than {} bytes (or output that is not line-delimited JSON-RPC)",
                        this.max_line
                    );
                    if let Ok(mut slot) = this.overflow.lock() {
                        slot.get_or_insert(why);
                    }
                    buf.set_filled(before);
                    return Poll::Ready(Err(too_long(this.max_line)));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

fn too_long(max_line: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a line longer than {max_line} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_past_the_bound_fails_the_read_and_says_why() {
        let overflow = Arc::new(Mutex::new(None));
        let data = format!("{}\n{}", "a".repeat(10), "b".repeat(100));
        let mut reader = BoundedLines {
            inner: data.as_bytes(),
            since_newline: 0,
            max_line: 20,
            overflow: overflow.clone(),
        };
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.err();
        assert!(error.is_some());
        assert!(overflow.lock().ok().and_then(|slot| slot.clone()).is_some());
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_through() {
        let overflow = Arc::new(Mutex::new(None));
        let data = "a".repeat(10) + "\n" + &"b".repeat(20) + "\n";
        let mut reader = BoundedLines {
            inner: data.as_bytes(),
            since_newline: 0,
            max_line: 20,
            overflow,
        };
        let mut out = String::new();
        reader.read_to_string(&mut out).await.ok();
        assert_eq!(out, data);
    }
}
