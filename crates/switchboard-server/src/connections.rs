//! Client connections: accepted up to a cap, served as HTTP/1.1 or HTTP/2 (prior
//! knowledge, or an h2c upgrade) under the same limits, and closed when they waste the gateway's resources:
//! headers not sent in time, a body not sent in time, or nothing in flight for too long.
//! Each of these was a way for a handful of clients to hold every descriptor the process
//! has; the cap keeps `accept` from failing with "too many open files" at all.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::h2c;

/// Streams one HTTP/2 connection may carry at once.
const MAX_STREAMS_PER_CONNECTION: u32 = 128;
/// Bytes of headers one request may send (both protocols).
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Wait after a failed `accept` (descriptors exhausted by other parts of the process).
const ACCEPT_RETRY: Duration = Duration::from_millis(200);
/// What a client speaking HTTP/2 with prior knowledge sends first.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How connections are served.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    /// Deadline for a request's whole body, from its arrival.
    pub body_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// A request body not received in full by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s", .0.as_secs())]
pub struct BodyTimedOut(pub Duration);

/// Raises the soft limit on open descriptors to the hard limit, so the cap below is what
/// bounds connections; returns the limit in force.
pub fn raise_descriptor_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => Some(limit),
        Err(error) => {
            tracing::warn!(%error, "cannot read or raise the open-file limit");
            None
        }
    }
}

/// The connections being served, and the signals that end them.
pub struct Server {
    limits: ConnectionLimits,
    /// For connections whose first bytes the peek could not place (see [`sniff`]).
    builder: auto::Builder<TokioExecutor>,
    /// For connections that begin with an HTTP/1 request, with the same settings as
    /// `builder`'s HTTP/1.
    http1: http1::Builder,
    /// For connections that begin with the HTTP/2 preface and those upgraded to h2c, with
    /// the same settings as `builder`'s HTTP/2.
    http2: http2::Builder<TokioExecutor>,
    router: Router,
    connections: JoinSet<()>,
    /// Asks every connection to finish its requests and close.
    closing: CancellationToken,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("limits", &self.limits)
            .field("open", &self.connections.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    pub fn new(router: Router, mut limits: ConnectionLimits) -> Self {
        // Half the descriptors for clients: each may need a backend connection, and
        // character files and the listener need some too.
        if let Some(descriptors) = raise_descriptor_limit() {
            let affordable = usize::try_from(descriptors / 2)
                .unwrap_or(usize::MAX)
                .max(1);
            if affordable < limits.max_connections {
                tracing::info!(
                    descriptors,
                    max_connections = affordable,
                    "the open-file limit allows fewer connections than configured"
                );
                limits.max_connections = affordable;
            }
        }
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(MAX_HEADER_BYTES.max(8192));
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(MAX_HEADER_BYTES.max(8192));
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
            .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).unwrap_or(u32::MAX));
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
            .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).unwrap_or(u32::MAX));
        Self {
            limits,
            builder,
            http1,
            http2,
            router,
            connections: JoinSet::new(),
            closing: CancellationToken::new(),
        }
    }

    /// Accepts and serves connections until `stop` resolves; the listener is closed then.
    pub async fn accept(&mut self, listener: TcpListener, stop: impl Future<Output = ()>) {
        let slots = Arc::new(Semaphore::new(self.limits.max_connections));
        let mut at_cap = false;
        tokio::pin!(stop);
        loop {
            while self.connections.try_join_next().is_some() {}
            let slot = match Arc::clone(&slots).try_acquire_owned() {
                Ok(slot) => {
                    at_cap = false;
                    slot
                }
                Err(_) => {
                    if !at_cap {
                        at_cap = true;
                        tracing::warn!(
                            max_connections = self.limits.max_connections,
                            "open connections reached max_connections; new connections wait to be accepted until one closes"
                        );
                    }
                    tokio::select! {
                        slot = Arc::clone(&slots).acquire_owned() => match slot {
                            Ok(slot) => slot,
                            Err(_) => return,
                        },
                        () = &mut stop => return,
                    }
                }
            };
            let accepted = loop {
                tokio::select! {
                    accepted = listener.accept() => break accepted,
                    // A connection that ended gives its task's memory back now, not at the
                    // next accept: after a burst that may be long, and each task is the
                    // size of a connection's state (kilobytes).
                    Some(_) = self.connections.join_next(), if !self.connections.is_empty() => {}
                    () = &mut stop => return,
                }
            };
            let (stream, _) = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::error!(%error, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            };
            // Without TCP_NODELAY a streamed answer's small SSE writes can wait on the
            // client's delayed ACK (Nagle's algorithm).
            let _ = stream.set_nodelay(true);
            self.connections.spawn(self.serve(stream, slot));
        }
    }

    /// Asks every connection to close once its requests are answered, and waits up to
    /// `wait` for them; returns whether all closed.
    pub async fn close(&mut self, wait: Duration) -> bool {
        self.closing.cancel();
        let all = async { while self.connections.join_next().await.is_some() {} };
        tokio::time::timeout(wait, all).await.is_ok()
    }

    /// Ends every connection still open at once.
    pub async fn abort(&mut self) {
        self.connections.shutdown().await;
    }

    /// The connection's task; `slot` is its place under `max_connections`, given back as
    /// it ends.
    fn serve(
        &self,
        stream: TcpStream,
        slot: OwnedSemaphorePermit,
    ) -> impl Future<Output = ()> + Send + 'static {
        let activity = Arc::new(Activity::default());
        let router = self.router.clone();
        let body_deadline = self.limits.body_read_timeout;
        let service_activity = Arc::clone(&activity);
        let (upgrade, mut upgraded) = oneshot::channel::<(OnUpgrade, Bytes)>();
        let upgrade = Arc::new(Mutex::new(Some(upgrade)));
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            let router = router.clone();
            let busy = Busy::start(&service_activity);
            let switching = h2c::wants_upgrade(&request)
                .then(|| h2c::stream_one(&request))
                .flatten()
                .and_then(|stream_one| {
                    let sender = upgrade.lock().ok()?.take()?;
                    sender
                        .send((hyper::upgrade::on(&mut request), stream_one))
                        .ok()
                });
            async move {
                if switching.is_some() {
                    let response = Response::builder()
                        .status(StatusCode::SWITCHING_PROTOCOLS)
                        .header(header::CONNECTION, "upgrade")
                        .header(header::UPGRADE, "h2c")
                        .body(Body::empty())
                        .unwrap_or_default();
                    drop(busy);
                    return Ok::<_, Infallible>(response);
                }
                let request = request.map(|body| Body::new(Deadline::new(body, body_deadline)));
                let response = router
                    .oneshot(request)
                    .await
                    .unwrap_or_else(|never| match never {});
                // The request is in flight until its response body is done with.
                Ok::<_, Infallible>(response.map(|body| {
                    Body::new(body.map_frame(move |frame| {
                        let _ = &busy;
                        frame
                    }))
                }))
            }
        });
        let builder = self.builder.clone();
        let http1 = self.http1.clone();
        let http2 = self.http2.clone();
        let closing = self.closing.clone();
        let idle = self.limits.idle_timeout;
        // hyper's header timer starts only once the protocol is known (HTTP/1 or the
        // HTTP/2 preface) and HTTP/2 has none: a socket that sends nothing, or a byte, would
        // hold its slot until the idle timeout. The first request must begin within the
        // header timeout of the accept, whatever has arrived.
        let first_request_by = Instant::now() + self.limits.header_read_timeout;
        async move {
            let _slot = slot;
            let ending = Ending {
                closing: &closing,
                activity: &activity,
                idle,
            };
            // Each connection is boxed where it is made: passed on by value it would take
            // space in every future that holds it (kilobytes, several times over, in the
            // task of every open connection).
            let served = async {
                match sniff(&stream).await {
                    Some(Protocol::Http1) => {
                        let connection = http1
                            .serve_connection(TokioIo::new(stream), service.clone())
                            .with_upgrades();
                        ending
                            .drive(Box::pin(connection), |c| c.graceful_shutdown())
                            .await;
                    }
                    Some(Protocol::Http2) => {
                        let connection =
                            http2.serve_connection(TokioIo::new(stream), service.clone());
                        ending
                            .drive(Box::pin(connection), |c| c.graceful_shutdown())
                            .await;
                    }
                    None => {
                        let connection = builder
                            .serve_connection_with_upgrades(TokioIo::new(stream), service.clone());
                        ending
                            .drive(Box::pin(connection), |c| c.graceful_shutdown())
                            .await;
                    }
                }
            };
            tokio::select! {
                () = served => {}
                () = activity.none_begun_by(first_request_by) => return,
            }
            // An h2c upgrade: the same connection goes on as HTTP/2, under the same limits.
            let Ok((upgrading, stream_one)) = upgraded.try_recv() else {
                return;
            };
            let replayed = match upgrading.await {
                Ok(io) => h2c::replay(TokioIo::new(io), stream_one).await,
                Err(error) => Err(std::io::Error::other(error)),
            };
            match replayed {
                Ok(io) => {
                    let connection = http2.serve_connection(TokioIo::new(io), service);
                    ending
                        .drive(Box::pin(connection), |c| c.graceful_shutdown())
                        .await;
                }
                Err(error) => tracing::debug!(%error, "h2c upgrade failed"),
            }
        }
    }
}

/// What ends a connection early: the server closing, or nothing in flight for `idle`.
struct Ending<'a> {
    closing: &'a CancellationToken,
    activity: &'a Activity,
    idle: Duration,
}

impl Ending<'_> {
    /// Runs a connection to its end, asking it to close gracefully once the server is
    /// closing or once it has had nothing in flight for `idle`.
    async fn drive<C: Future>(
        &self,
        mut connection: Pin<Box<C>>,
        graceful_shutdown: impl Fn(Pin<&mut C>),
    ) {
        let mut closing_asked = false;
        loop {
            tokio::select! {
                _ = connection.as_mut() => return,
                () = self.closing.cancelled(), if !closing_asked => {
                    closing_asked = true;
                    graceful_shutdown(connection.as_mut());
                }
                () = self.activity.idle_for(self.idle), if !closing_asked => {
                    closing_asked = true;
                    graceful_shutdown(connection.as_mut());
                }
            }
        }
    }
}

/// The protocol a connection speaks.
enum Protocol {
    Http1,
    /// With prior knowledge (an h2c upgrade begins as HTTP/1).
    Http2,
}

/// The protocol the client's first bytes announce, looked at without reading them; `None`
/// when they do not tell yet (a part of the HTTP/2 preface) or the socket failed, for
/// hyper's own detection to read and decide. Knowing it, the connection is served by that
/// protocol's builder: hyper's detection hands the bytes it read to HTTP/1 as a first read
/// of their own, and its read buffer grows to twice its size on the next read (16 KiB held
/// by every HTTP/1 connection instead of 8).
async fn sniff(stream: &TcpStream) -> Option<Protocol> {
    let mut first = [0u8; HTTP2_PREFACE.len()];
    match stream.peek(&mut first).await {
        Ok(0) | Err(_) => None,
        Ok(read) if first[..read] != HTTP2_PREFACE[..read] => Some(Protocol::Http1),
        Ok(read) if read == HTTP2_PREFACE.len() => Some(Protocol::Http2),
        Ok(_) => None,
    }
}

/// Requests in flight on one connection, and since when it has had none.
struct Activity {
    /// Whether any request has begun on the connection.
    begun: std::sync::atomic::AtomicBool,
    in_flight: AtomicUsize,
    idle_since: Mutex<Instant>,
    changed: Notify,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            begun: std::sync::atomic::AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }
}

impl Activity {
    /// Resolves at `deadline` if no request has begun by then; never otherwise.
    async fn none_begun_by(&self, deadline: Instant) {
        tokio::time::sleep_until(deadline).await;
        if self.begun.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once the connection has had no request in flight for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let since = self
                .idle_since
                .lock()
                .map(|since| *since)
                .unwrap_or_else(|_| Instant::now());
            if self.in_flight.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    () = tokio::time::sleep_until(since + idle) => {
                        let unchanged = self.idle_since.lock().is_ok_and(|now| *now == since);
                        if unchanged && self.in_flight.load(Ordering::Acquire) == 0 {
                            return;
                        }
                    }
                    () = self.changed.notified() => {}
                }
            } else {
                self.changed.notified().await;
            }
        }
    }
}

/// One request in flight; dropped with its response body.
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: &Arc<Activity>) -> Self {
        activity.begun.store(true, Ordering::Release);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        activity.changed.notify_one();
        Self(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1
            && let Ok(mut since) = self.0.idle_since.lock()
        {
            *since = Instant::now();
        }
        self.0.changed.notify_one();
    }
}

/// A request body that fails once its deadline passes: a client trickling its body (or
/// sending less than its `Content-Length`) is not waited for.
struct Deadline {
    body: Incoming,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
}

impl Deadline {
    fn new(body: Incoming, limit: Duration) -> Self {
        Self {
            body,
            deadline: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(context) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match this.deadline.as_mut().poll(context) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A connection that ended gives its task back then, not when the next client connects:
    /// after a burst of thousands, each finished task held the size of a connection's state.
    #[tokio::test]
    async fn an_ended_connection_is_not_held_until_the_next_accept() {
        let router = Router::new().route("/", axum::routing::get(|| async { "hello" }));
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_secs(5),
            body_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            max_connections: 16,
        };
        let mut server = Server::new(router, limits);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let client = tokio::spawn(async move {
            let mut socket = TcpStream::connect(address).await.unwrap();
            socket
                .write_all(b"GET / HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut answer = Vec::new();
            socket.read_to_end(&mut answer).await.unwrap();
            // The server has closed its end; its task ends as the close completes.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = stop.send(());
            answer
        });
        server
            .accept(listener, async {
                let _ = stopped.await;
            })
            .await;
        assert!(client.await.unwrap().ends_with(b"hello"));
        assert_eq!(server.connections.len(), 0, "{server:?}");
    }
}
