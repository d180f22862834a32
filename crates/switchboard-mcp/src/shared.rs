//! 2025-11-25 sessions shared by several processes serving one endpoint (replicas behind a
//! load balancer): each session is recorded in a [`SessionDirectory`] (the gateway's is
//! Redis), with its owner and the `initialize` it was opened with. The directory is the
//! truth, asked on every request that names a session: a replica that never saw the
//! session restores it (the SDK replays the handshake on a fresh worker), and one whose
//! session was ended elsewhere (a `DELETE` on another replica, or the directory's expiry)
//! ends its own copy and answers as for an unknown session.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::{Value, json};

use crate::sessions::{SessionOwner, opening_owner};

/// A session as the directory keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Who opened it ([`SessionOwner`]); only they may use it.
    pub owner: Option<String>,
    /// The `initialize` request's params, replayed where the session is restored.
    pub initialize: Value,
}

impl SessionRecord {
    pub fn to_json(&self) -> Value {
        json!({"owner": self.owner, "initialize": self.initialize})
    }

    pub fn from_json(value: &Value) -> Option<Self> {
        let owner = match &value["owner"] {
            Value::Null => None,
            Value::String(owner) => Some(owner.clone()),
            _ => return None,
        };
        let initialize = value.get("initialize")?.clone();
        Some(Self { owner, initialize })
    }

    pub(crate) fn owned_by(&self, owner: Option<&SessionOwner>) -> bool {
        self.owner.as_deref() == owner.map(|owner| &*owner.0)
    }
}

/// Why the directory could not be asked.
#[derive(Debug, thiserror::Error)]
#[error("the shared session directory is unavailable: {0}")]
pub struct DirectoryError(pub String);

/// Where sessions live beyond one process. Every call is bounded in time by the
/// implementation.
pub trait SessionDirectory: Send + Sync + std::fmt::Debug + 'static {
    /// Records a session opened here, to expire after `ttl` unless used.
    fn put(
        &self,
        id: &str,
        record: SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), DirectoryError>>;
    /// The session, if it is live, its expiry pushed back to `ttl` from now.
    fn touch(
        &self,
        id: &str,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Option<SessionRecord>, DirectoryError>>;
    /// Ends the session everywhere; whether it was live.
    fn remove(&self, id: &str) -> BoxFuture<'_, Result<bool, DirectoryError>>;
}

/// The directory and the idle time its records live for.
#[derive(Debug, Clone)]
pub struct SharedSessions {
    pub directory: Arc<dyn SessionDirectory>,
    pub idle: Duration,
}

/// The SDK's store hook over the directory: it records a session after its handshake,
/// loads one to restore, and removes one at `DELETE`.
#[derive(Debug)]
pub(crate) struct Store(pub(crate) SharedSessions);

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(record) = self.0.directory.touch(session_id, self.0.idle).await? else {
            return Ok(None);
        };
        let params = serde_json::from_value(record.initialize)?;
        Ok(Some(SessionState::new(params)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let record = SessionRecord {
            owner: opening_owner().map(|owner| owner.0.to_string()),
            initialize: serde_json::to_value(&state.initialize_params)?,
        };
        Ok(self
            .0
            .directory
            .put(session_id, record, self.0.idle)
            .await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.0.directory.remove(session_id).await?;
        Ok(())
    }
}
