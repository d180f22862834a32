//! A real `redis-server` (Debian's package) on a free loopback port, for the tests of state
//! shared between gateway replicas. Nothing is written to disk; the server is killed when
//! dropped. Without `redis-server` on the PATH the test fails and says how to install it
//! (`scripts/test` does).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting server may take to answer `PING`.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    /// `redis://127.0.0.1:PORT/0`
    pub url: String,
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server and waits until it answers.
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap();
        Self::start_on(port)
    }

    /// Starts a server on `port` (one a gateway was already told of) and waits until it
    /// answers.
    pub fn start_on(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start redis-server ({error}); install it with `apt-get install redis-server` (scripts/test does)")
            });
        let server = Self {
            url: format!("redis://127.0.0.1:{port}/0"),
            port,
            child: Some(child),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not answer PING within {START_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Whether the server answers `PING` now.
    pub fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }

    /// Stops the server's process without ending it (`SIGSTOP`): a Redis that stalls, its
    /// connections open and unanswered, until [`RedisServer::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server run again (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill {signal} {}: {status}", child.id());
        }
    }

    /// Kills the server (an outage) and waits until it is gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
