//! The 2025-11-25 sessions of the HTTP endpoint: the SDK's own session manager, bounded
//! (live sessions overall and per owner) and with each session bound to the owner that
//! opened it. The owner is whatever the layers in front name with [`SessionOwner`] (the
//! gateway: the caller's key); a request of another owner is told the session does not
//! exist.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId,
};

/// Who opened a session, as a request extension: only requests naming the same owner may
/// use it, and an owner may hold at most [`SessionLimits::per_owner`] sessions. A request
/// without one is nobody's: it may use only sessions opened by nobody, and counts against
/// the overall bound alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionOwner(pub Arc<str>);

/// How many sessions may be live at once.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub overall: usize,
    pub per_owner: usize,
}

/// Why a session was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Full {
    #[error("the MCP endpoint holds its most sessions ({0}); try again once some have ended")]
    Overall(usize),
    #[error(
        "this caller holds its most MCP sessions ({0}); end one (DELETE with its Mcp-Session-Id) or let one expire"
    )]
    PerOwner(usize),
}

/// What the session manager can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Full(#[from] Full),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

tokio::task_local! {
    /// The request being answered, while the SDK answers it: the SDK asks for a new session
    /// without the request, so its owner (and a refusal, for the answer) travel here.
    static OPENING: Opening;
}

/// The request a session may be opened for.
struct Opening {
    owner: Option<SessionOwner>,
    refused: Cell<Option<Full>>,
}

/// Runs `answer` (the SDK answering one request) so that a session it opens is `owner`'s;
/// returns its answer, or why it was refused a session.
pub(crate) async fn opening<F: Future>(
    owner: Option<SessionOwner>,
    answer: F,
) -> Result<F::Output, Full> {
    let opening = Opening {
        owner,
        refused: Cell::new(None),
    };
    let (answer, refused) = OPENING
        .scope(opening, async {
            let answer = answer.await;
            (answer, OPENING.with(|opening| opening.refused.get()))
        })
        .await;
    match refused {
        Some(full) => Err(full),
        None => Ok(answer),
    }
}

/// The owner of the request being answered, where the SDK asks without the request (its
/// session store hook records a new session's owner with it).
pub(crate) fn opening_owner() -> Option<SessionOwner> {
    OPENING
        .try_with(|opening| opening.owner.clone())
        .ok()
        .flatten()
}

/// Live sessions and their owners.
#[derive(Default)]
struct Registry {
    owners: HashMap<SessionId, Option<SessionOwner>>,
    /// Sessions opened or being opened, overall and per owner.
    total: usize,
    per_owner: HashMap<SessionOwner, usize>,
}

impl Registry {
    fn release(&mut self, owner: Option<&SessionOwner>) {
        self.total = self.total.saturating_sub(1);
        if let Some(owner) = owner
            && let Some(count) = self.per_owner.get_mut(owner)
        {
            *count -= 1;
            if *count == 0 {
                self.per_owner.remove(owner);
            }
        }
    }
}

/// The SDK's local session manager, bounded, each session bound to its owner.
pub(crate) struct Sessions {
    local: LocalSessionManager,
    limits: SessionLimits,
    registry: Mutex<Registry>,
}

/// A place taken under the bounds, given back unless a session takes it.
struct Place<'a> {
    sessions: &'a Sessions,
    owner: Option<SessionOwner>,
    /// Taken by a session, which gives it back as it closes.
    kept: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.sessions.registry().release(self.owner.as_ref());
        }
    }
}

impl Sessions {
    pub(crate) fn new(local: LocalSessionManager, limits: SessionLimits) -> Self {
        Self {
            local,
            limits,
            registry: Mutex::default(),
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A poisoned lock only means a panic mid-update elsewhere; the counts stay usable.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `owner` may use the session `id`: it is live and theirs.
    pub(crate) fn belongs(&self, id: &str, owner: Option<&SessionOwner>) -> bool {
        self.registry()
            .owners
            .get(id)
            .is_some_and(|opened_by| opened_by.as_ref() == owner)
    }

    /// Whether this process holds the session `id`.
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.registry().owners.contains_key(id)
    }

    /// A place for the session the request being answered opens, or why there is none
    /// (told to the request's answer too).
    fn place_for_opening(&self) -> Result<Place<'_>, Full> {
        self.take(opening_owner()).inspect_err(|full| {
            let _ = OPENING.try_with(|opening| opening.refused.set(Some(*full)));
        })
    }

    /// The place is the session's now: closing it gives the place back.
    fn keep(&self, place: &mut Place<'_>, id: &SessionId) {
        place.kept = true;
        self.registry()
            .owners
            .insert(id.clone(), place.owner.take());
    }

    /// Takes a place for a new session of `owner`, within the bounds.
    fn take(&self, owner: Option<SessionOwner>) -> Result<Place<'_>, Full> {
        let mut registry = self.registry();
        if registry.total >= self.limits.overall {
            return Err(Full::Overall(self.limits.overall));
        }
        if let Some(owner) = &owner {
            let held = registry.per_owner.entry(owner.clone()).or_default();
            if *held >= self.limits.per_owner {
                return Err(Full::PerOwner(self.limits.per_owner));
            }
            *held += 1;
        }
        registry.total += 1;
        Ok(Place {
            sessions: self,
            owner,
            kept: false,
        })
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let mut place = self.place_for_opening()?;
        let (id, transport) = self.local.create_session().await?;
        self.keep(&mut place, &id);
        Ok((id, transport))
    }

    /// A session opened on another replica, recorded in the shared directory, gets a worker
    /// here (the SDK then replays its handshake); it takes a place under this process's
    /// bounds as one opened here does.
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let mut place = self.place_for_opening()?;
        let restored = self.local.restore_session(id.clone()).await?;
        if matches!(restored, RestoreOutcome::Restored(_)) {
            self.keep(&mut place, &id);
        }
        Ok(restored)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Closed twice for a DELETE (by it, then as the session's task ends): the place is
        // given back once.
        let closed = self.local.close_session(id).await;
        let mut registry = self.registry();
        if let Some(owner) = registry.owners.remove(id) {
            registry.release(owner.as_ref());
        }
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }
}
