//! The `/mcp` endpoint's 2025-11-25 sessions in Redis (`state = "redis://…"`), so that every
//! replica serves every session and a `DELETE` on any ends it on all: one JSON value per
//! session (its owner, the key's name, never its secret; and its `initialize`), expiring
//! after the session's idle time, which each request that names it pushes back.

use std::time::Duration;

use futures::future::BoxFuture;
use redis::AsyncCommands;
use switchboard_mcp::{DirectoryError, SessionDirectory, SessionRecord};
use switchboard_redis::{LinkError, RedisLink};

const PREFIX: &str = "switchboard:mcp-session:";

/// The sessions' directory in Redis.
#[derive(Debug)]
pub struct RedisSessions {
    link: RedisLink,
}

impl RedisSessions {
    pub fn new(url: &str) -> Result<Self, String> {
        Ok(Self {
            link: RedisLink::new(url)?,
        })
    }

    async fn failed(&self, error: &redis::RedisError) -> DirectoryError {
        unavailable(self.link.failed(error).await)
    }
}

fn unavailable(error: LinkError) -> DirectoryError {
    DirectoryError(error.to_string())
}

fn seconds(ttl: Duration) -> u64 {
    ttl.as_secs().max(1)
}

impl SessionDirectory for RedisSessions {
    fn put(
        &self,
        id: &str,
        record: SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), DirectoryError>> {
        let key = format!("{PREFIX}{id}");
        Box::pin(async move {
            let mut connection = self.link.connection().await.map_err(unavailable)?;
            let set: Result<(), _> = connection
                .set_ex(key, record.to_json().to_string(), seconds(ttl))
                .await;
            match set {
                Ok(()) => Ok(()),
                Err(error) => Err(self.failed(&error).await),
            }
        })
    }

    fn touch(
        &self,
        id: &str,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Option<SessionRecord>, DirectoryError>> {
        let key = format!("{PREFIX}{id}");
        Box::pin(async move {
            let mut connection = self.link.connection().await.map_err(unavailable)?;
            let text: Result<Option<String>, _> = redis::cmd("GETEX")
                .arg(&key)
                .arg("EX")
                .arg(seconds(ttl))
                .query_async(&mut connection)
                .await;
            match text {
                Ok(None) => Ok(None),
                Ok(Some(text)) => serde_json::from_str(&text)
                    .ok()
                    .and_then(|value| SessionRecord::from_json(&value))
                    .map(Some)
                    .ok_or_else(|| {
                        DirectoryError(format!(
                            "the MCP session stored in Redis at {} is not readable",
                            self.link.address()
                        ))
                    }),
                Err(error) => Err(self.failed(&error).await),
            }
        })
    }

    fn remove(&self, id: &str) -> BoxFuture<'_, Result<bool, DirectoryError>> {
        let key = format!("{PREFIX}{id}");
        Box::pin(async move {
            let mut connection = self.link.connection().await.map_err(unavailable)?;
            let removed: Result<u64, _> = connection.del(key).await;
            match removed {
                Ok(count) => Ok(count > 0),
                Err(error) => Err(self.failed(&error).await),
            }
        })
    }
}
