//! A loopback relay in front of a real server that keeps a copy of what clients send: how a
//! real-backend test sees the request that reached the model (a prompted route's rewritten
//! prompt, say) without touching the answer. Bytes pass through unchanged, connection by
//! connection, so the server's keep-alive behaviour reaches the client as it is.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most kept per connection; the relay goes on past it, the copy stops.
const KEPT_PER_CONNECTION: usize = 16 * 1024 * 1024;

/// A running relay.
#[derive(Debug, Clone)]
pub struct Tap {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// What clients sent, one buffer per connection, in the order connections opened.
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Tap {
    /// Relays every connection to `upstream` (`http://HOST:PORT`, any path ignored).
    pub async fn start(upstream: &str) -> Self {
        let authority = upstream
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&sent);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(Vec::new());
                    log.len() - 1
                };
                tokio::spawn(relay(client, authority.clone(), Arc::clone(&log), index));
            }
        });
        Self { base, sent }
    }

    /// The JSON bodies of every request relayed so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .flat_map(|bytes| bodies(bytes))
            .collect()
    }
}

async fn relay(client: TcpStream, authority: String, log: Arc<Mutex<Vec<Vec<u8>>>>, index: usize) {
    let Ok(server) = TcpStream::connect(&authority).await else {
        return;
    };
    client.set_nodelay(true).unwrap();
    server.set_nodelay(true).unwrap();
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let upstream = async move {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let read = match from_client.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            {
                let mut log = log.lock().unwrap();
                let kept = &mut log[index];
                let room = KEPT_PER_CONNECTION.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
            if to_server.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = to_server.shutdown().await;
    };
    let downstream = async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    tokio::join!(upstream, downstream);
}

/// The JSON bodies of the HTTP/1.1 requests in `bytes` (each with a `content-length`).
fn bodies(mut bytes: &[u8]) -> Vec<Value> {
    let mut found = Vec::new();
    while let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        let body = &bytes[end + 4..];
        if body.len() < length {
            break;
        }
        found.push(serde_json::from_slice(&body[..length]).unwrap_or(Value::Null));
        bytes = &body[length..];
    }
    found
}
