//! MCP over stdin and stdout, for clients that spawn their servers. Nothing else may
//! write to stdout: logs go to stderr.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleServer, ServiceExt};
use tokio::sync::Notify;

use crate::catalog::ToolCatalog;
use crate::handler::McpServer;

/// Messages waiting to be written to stdout at most before stdin is no longer read: a
/// client that sends requests and never reads the answers would otherwise have every
/// answer held in memory.
const MAX_UNWRITTEN: usize = 8;

/// Why serving over stdio stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("the MCP client's handshake failed: {0}")]
    Handshake(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
}

/// Serves `server` on stdin and stdout until the client closes them.
pub async fn serve_stdio<C: ToolCatalog>(server: McpServer<C>) -> Result<(), StdioError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = Backpressured {
        inner: AsyncRwTransport::new_server(stdin, stdout),
        unwritten: Arc::default(),
    };
    let running = server
        .serve(transport)
        .await
        .map_err(|error| StdioError::Handshake(error.to_string()))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|error| StdioError::Session(error.to_string()))
}

/// A transport that stops reading while [`MAX_UNWRITTEN`] messages wait to be written. The
/// SDK reads on while its writes wait (each in a task of its own), so the bound has to be
/// here.
struct Backpressured<T> {
    inner: T,
    unwritten: Arc<Unwritten>,
}

#[derive(Default)]
struct Unwritten {
    count: AtomicUsize,
    /// One more message written (a permit is kept for a reader not yet waiting).
    written: Notify,
}

/// One message waiting to be written; counted until its write ends either way.
struct Waiting(Arc<Unwritten>);

impl Waiting {
    fn new(unwritten: &Arc<Unwritten>) -> Self {
        unwritten.count.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(unwritten))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.written.notify_one();
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Backpressured<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let waiting = Waiting::new(&self.unwritten);
        let send = self.inner.send(item);
        async move {
            let sent = send.await;
            drop(waiting);
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Nothing is read while waiting, so a wait cut short (the SDK polls this among other
        // things) loses nothing.
        while self.unwritten.count.load(Ordering::Acquire) >= MAX_UNWRITTEN {
            self.unwritten.written.notified().await;
        }
        self.inner.receive().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
