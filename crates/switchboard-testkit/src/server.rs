//! The scripted server: one reply per connection, in order or chosen by looking at the
//! request, over chunked HTTP/1.1; a reply can also keep its connection and drop it under
//! the next request, as servers that close idle keep-alive connections do.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a reply's body is cut into HTTP chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    Whole,
    /// One HTTP chunk per piece ending with this separator (an SSE event, an NDJSON line).
    PerEvent(&'static str),
    /// One byte per HTTP chunk.
    Bytes,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub chunking: Chunking,
    /// Wait this long before sending the body (to trip timeouts, or to keep a stream open).
    pub delay_before_body: Option<Duration>,
    /// Wait this long before each piece after the first: a stream that takes its time, as a
    /// model generating tokens does.
    pub pace: Option<Duration>,
    /// Close the connection without the final empty chunk: a stream cut short.
    pub drop_connection: bool,
    /// Send this many chunks, then wait for the gate to open before sending the rest: lets a
    /// test prove something happened while the stream was still open.
    pub gate: Option<(usize, Arc<tokio::sync::Notify>)>,
    /// Announce `connection: keep-alive` and keep the connection after the answer; when the
    /// client sends its next request on it, read that request and close without answering:
    /// what a client sees when it reuses a connection the server had just let go (llama.cpp's
    /// server closes its connection after each stream).
    pub close_when_reused: bool,
    /// Read the request and close the connection without a byte of answer.
    pub hang_up: bool,
}

impl Reply {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>, chunking: Chunking) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            chunking,
            delay_before_body: None,
            pace: None,
            drop_connection: false,
            gate: None,
            close_when_reused: false,
            hang_up: false,
        }
    }

    /// A connection closed as soon as the request is read: no status, no byte.
    pub fn hang_up() -> Self {
        Self {
            hang_up: true,
            ..Self::ok("text/plain", "", Chunking::Whole)
        }
    }

    /// The same reply on a connection the server closes under the client's next request.
    pub fn then_close_when_reused(mut self) -> Self {
        self.close_when_reused = true;
        self
    }

    /// A JSON body with this status (errors, non-streaming answers).
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            ..Self::ok("application/json", body.to_string(), Chunking::Whole)
        }
    }

    pub fn sse(body: impl Into<Vec<u8>>, chunking: Chunking) -> Self {
        Self::ok("text/event-stream", body, chunking)
    }

    /// The same reply with `pace` between its pieces.
    pub fn paced(mut self, pace: Duration) -> Self {
        self.pace = Some(pace);
        self
    }

    /// The same reply with one more response header (`retry-after`, for instance).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Request line and headers, lower-cased.
    pub head: String,
    pub body: Value,
}

/// A running scripted server; it stops accepting once its replies are used up.
#[derive(Debug, Clone)]
pub struct ScriptedServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    captured: Arc<Mutex<Vec<Captured>>>,
    hung_up: Arc<std::sync::atomic::AtomicUsize>,
}

impl ScriptedServer {
    /// Starts a server that answers the `n`th connection with `replies[n]`, and stops
    /// accepting once its replies are used up. Like a model server
    /// without a tokenizer, it answers tokenizer probes (`/tokenize`, `/apply-template`,
    /// which the gateway sends beside a streamed Messages answer) with a 404 that uses no
    /// reply and is not recorded; [`Self::responding`] scripts them.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let captured = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&captured);
        let hung_up = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hangups = Arc::clone(&hung_up);
        // Each connection takes the next reply when it is accepted, as it always did; one
        // that turns out to be a tokenizer probe puts its reply back for the next.
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let probing = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let returned = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(async move {
            loop {
                let next = replies.lock().unwrap().pop_front();
                let Some(reply) = next else {
                    // A connection still being read may yet give its reply back.
                    if probing.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                        return;
                    }
                    returned.notified().await;
                    continue;
                };
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                probing.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (replies, probing, returned) = (
                    Arc::clone(&replies),
                    Arc::clone(&probing),
                    Arc::clone(&returned),
                );
                tokio::spawn(answer(
                    socket,
                    Box::new(move |request| {
                        let reply = if request.is_some_and(is_tokenizer_probe) {
                            replies.lock().unwrap().push_front(reply);
                            None
                        } else {
                            Some(reply)
                        };
                        probing.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        returned.notify_one();
                        reply
                    }),
                    Arc::clone(&log),
                    Arc::clone(&hangups),
                ));
            }
        });
        Self {
            base,
            captured,
            hung_up,
        }
    }

    /// Starts a server that answers every connection with what `respond` makes of its
    /// request: for a client whose requests are not known in advance (an agent's side
    /// requests), each reply is chosen by looking at the request.
    pub async fn responding(respond: impl Fn(&Captured) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let captured = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&captured);
        let hung_up = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hangups = Arc::clone(&hung_up);
        let respond = Arc::new(respond);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let respond = Arc::clone(&respond);
                tokio::spawn(answer(
                    socket,
                    Box::new(move |request| request.map(|request| respond(request))),
                    Arc::clone(&log),
                    Arc::clone(&hangups),
                ));
            }
        });
        Self {
            base,
            captured,
            hung_up,
        }
    }

    /// How many clients closed their connection while a gated reply was held open: how a
    /// test sees that a request it started was cancelled.
    pub fn hung_up(&self) -> usize {
        self.hung_up.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }
}

/// Chooses the reply once the request is read (`None` when the client closed first);
/// `None` for a tokenizer probe, answered 404 and not recorded.
type Choose = Box<dyn FnOnce(Option<&Captured>) -> Option<Reply> + Send>;

/// A request for a tokenizer endpoint of vLLM or llama.cpp.
fn is_tokenizer_probe(request: &Captured) -> bool {
    let path = request.head.split_whitespace().nth(1).unwrap_or_default();
    path.ends_with("/tokenize") || path.ends_with("/apply-template")
}

async fn answer(
    mut socket: TcpStream,
    choose: Choose,
    log: Arc<Mutex<Vec<Captured>>>,
    hung_up: Arc<std::sync::atomic::AtomicUsize>,
) {
    socket.set_nodelay(true).unwrap();
    let request = read_request(&mut socket).await;
    let reply = choose(request.as_ref());
    let Some(request) = request else {
        return;
    };
    let Some(reply) = reply else {
        let _ = socket
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return;
    };
    log.lock().unwrap().push(request);
    if reply.hang_up {
        return;
    }

    let connection = if reply.close_when_reused {
        "keep-alive"
    } else {
        "close"
    };
    let mut response = format!(
        "HTTP/1.1 {} Scripted\r\ntransfer-encoding: chunked\r\nconnection: {connection}\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    if socket.write_all(response.as_bytes()).await.is_err() {
        return;
    }
    if let Some(delay) = reply.delay_before_body {
        tokio::time::sleep(delay).await;
    }
    let pieces: Vec<&[u8]> = match reply.chunking {
        Chunking::Whole => vec![&reply.body[..]],
        Chunking::Bytes => reply.body.chunks(1).collect(),
        Chunking::PerEvent(separator) => std::str::from_utf8(&reply.body)
            .unwrap()
            .split_inclusive(separator)
            .map(str::as_bytes)
            .collect(),
    };
    for (sent, piece) in pieces
        .into_iter()
        .filter(|piece| !piece.is_empty())
        .enumerate()
    {
        if let Some((after, gate)) = &reply.gate
            && sent == *after
        {
            // While held, a read that ends means the client closed the connection.
            let mut probe = [0u8; 64];
            tokio::select! {
                () = gate.notified() => {}
                _ = socket.read(&mut probe) => {
                    hung_up.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    return;
                }
            }
        }
        if let Some(pace) = reply.pace
            && sent > 0
        {
            tokio::time::sleep(pace).await;
        }
        let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
        frame.extend_from_slice(piece);
        frame.extend_from_slice(b"\r\n");
        if socket.write_all(&frame).await.is_err() {
            return;
        }
    }
    if !reply.drop_connection {
        let _ = socket.write_all(b"0\r\n\r\n").await;
    }
    if reply.close_when_reused
        && let Some(request) = read_request(&mut socket).await
    {
        log.lock().unwrap().push(request);
    }
    let _ = socket.shutdown().await;
}

/// Reads one request (head and `content-length` body); `None` when the client closed first.
async fn read_request(socket: &mut TcpStream) -> Option<Captured> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
        if let Some(at) = request.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse().unwrap());
    while request.len() < head_end + length {
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        request.extend_from_slice(&buffer[..read]);
    }
    let body = serde_json::from_slice(&request[head_end..head_end + length]).unwrap_or(Value::Null);
    Some(Captured { head, body })
}
