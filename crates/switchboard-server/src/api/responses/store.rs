//! Responses made with `store: true`, kept so that `previous_response_id` can continue their
//! conversation and `GET`/`DELETE /v1/responses/{id}` can find them. [`ResponseStore`] is
//! the interface; [`MemoryStore`] keeps them in this process: least recently used first
//! out, bounded in entries and bytes, each entry expiring a fixed time after it was made.
//! [`RedisStore`] keeps them in Redis (`state = "redis://…"`), so that every replica finds
//! every response: each entry bounded in bytes and expiring like the memory store's, the
//! total bounded by the Redis server's own `maxmemory`.

use std::fmt::Debug;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use lru::LruCache;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use switchboard_wire::responses::{Item, Response};

use crate::redis_link::RedisLink;

const REDIS_PREFIX: &str = "switchboard:responses:";

/// A response and the conversation it answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub response: Response,
    /// Every item before the response's output: the conversation it continued and the
    /// request's own input.
    pub input: Vec<Item>,
    /// The name of the API key that made it: only that key may read, continue or delete it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl StoredResponse {
    /// Whether the caller with this key name (none without keys) may see it.
    pub fn belongs_to(&self, caller: Option<&str>) -> bool {
        self.owner.as_deref() == caller
    }

    /// The whole conversation, to continue: its input, then its output.
    pub fn conversation(&self) -> Vec<Item> {
        let mut items = self.input.clone();
        items.extend(self.response.output.iter().cloned());
        items
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the response and its conversation take {size} bytes, more than the store holds ({limit})"
    )]
    TooLarge { size: usize, limit: usize },
    #[error("the response store failed: {0}")]
    Backend(String),
}

/// Where stored responses live.
pub trait ResponseStore: Send + Sync + Debug {
    /// The response with this id, unless it is unknown, expired or was evicted.
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<Arc<StoredResponse>>, StoreError>>;
    fn put(&self, stored: StoredResponse) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Whether there was such a response.
    fn delete(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>>;
}

/// The in-process store.
#[derive(Debug)]
pub struct MemoryStore {
    kept: Mutex<Kept>,
    max_bytes: usize,
    ttl: Duration,
}

#[derive(Debug)]
struct Kept {
    entries: LruCache<String, Entry>,
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    stored: Arc<StoredResponse>,
    size: usize,
    expires: Instant,
}

impl MemoryStore {
    pub fn new(max_entries: NonZeroUsize, max_bytes: usize, ttl: Duration) -> Self {
        Self {
            kept: Mutex::new(Kept {
                entries: LruCache::new(max_entries),
                bytes: 0,
            }),
            max_bytes,
            ttl,
        }
    }

    fn get_at(&self, id: &str, now: Instant) -> Option<Arc<StoredResponse>> {
        let mut kept = self.kept.lock().ok()?;
        let expired = kept.entries.peek(id)?.expires <= now;
        if expired {
            kept.remove(id);
            return None;
        }
        kept.entries.get(id).map(|entry| Arc::clone(&entry.stored))
    }

    fn put_at(&self, stored: StoredResponse, now: Instant) -> Result<(), StoreError> {
        let size = serde_json::to_vec(&stored).map_or(usize::MAX, |bytes| bytes.len());
        if size > self.max_bytes {
            return Err(StoreError::TooLarge {
                size,
                limit: self.max_bytes,
            });
        }
        let mut kept = self
            .kept
            .lock()
            .map_err(|_| StoreError::Backend("a writer panicked".into()))?;
        let id = stored.response.id.clone();
        kept.remove(&id);
        while kept.bytes + size > self.max_bytes {
            match kept.entries.pop_lru() {
                Some((_, gone)) => kept.bytes -= gone.size,
                None => break,
            }
        }
        let entry = Entry {
            stored: Arc::new(stored),
            size,
            expires: now + self.ttl,
        };
        kept.bytes += size;
        if let Some((_, pushed_out)) = kept.entries.push(id, entry) {
            kept.bytes -= pushed_out.size;
        }
        Ok(())
    }
}

impl Kept {
    fn remove(&mut self, id: &str) -> bool {
        match self.entries.pop(id) {
            Some(entry) => {
                self.bytes -= entry.size;
                true
            }
            None => false,
        }
    }
}

impl ResponseStore for MemoryStore {
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<Arc<StoredResponse>>, StoreError>> {
        let found = self.get_at(id, Instant::now());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn put(&self, stored: StoredResponse) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.put_at(stored, Instant::now())))
    }

    fn delete(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let deleted = self.kept.lock().is_ok_and(|mut kept| kept.remove(id));
        Box::pin(std::future::ready(Ok(deleted)))
    }
}

/// The store shared by replicas through Redis: one JSON value per response, expiring on
/// Redis's clock.
#[derive(Debug)]
pub struct RedisStore {
    link: RedisLink,
    max_bytes: usize,
    ttl: Duration,
}

impl RedisStore {
    pub fn new(url: &str, max_bytes: usize, ttl: Duration) -> Result<Self, String> {
        Ok(Self {
            link: RedisLink::new(url)?,
            max_bytes,
            ttl,
        })
    }

    async fn fetch(&self, id: &str) -> Result<Option<Arc<StoredResponse>>, StoreError> {
        let mut connection = self.link.connection().await.map_err(unavailable)?;
        let text: Option<Vec<u8>> = match connection.get(format!("{REDIS_PREFIX}{id}")).await {
            Ok(text) => text,
            Err(error) => return Err(unavailable(self.link.failed(&error).await)),
        };
        let Some(text) = text else {
            return Ok(None);
        };
        serde_json::from_slice(&text)
            .map(Arc::new)
            .map(Some)
            .map_err(|error| {
                StoreError::Backend(format!(
                    "the response stored in Redis at {} as {id} is not readable: {error}",
                    self.link.address()
                ))
            })
    }

    async fn keep(&self, stored: StoredResponse) -> Result<(), StoreError> {
        let text = serde_json::to_vec(&stored)
            .map_err(|error| StoreError::Backend(format!("cannot encode the response: {error}")))?;
        if text.len() > self.max_bytes {
            return Err(StoreError::TooLarge {
                size: text.len(),
                limit: self.max_bytes,
            });
        }
        let mut connection = self.link.connection().await.map_err(unavailable)?;
        let key = format!("{REDIS_PREFIX}{}", stored.response.id);
        let ttl_ms = u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let set: Result<(), _> = connection.pset_ex(key, text, ttl_ms).await;
        match set {
            Ok(()) => Ok(()),
            Err(error) => Err(unavailable(self.link.failed(&error).await)),
        }
    }

    async fn remove(&self, id: &str) -> Result<bool, StoreError> {
        let mut connection = self.link.connection().await.map_err(unavailable)?;
        let removed: Result<u64, _> = connection.del(format!("{REDIS_PREFIX}{id}")).await;
        match removed {
            Ok(count) => Ok(count > 0),
            Err(error) => Err(unavailable(self.link.failed(&error).await)),
        }
    }
}

fn unavailable(error: crate::redis_link::LinkError) -> StoreError {
    StoreError::Backend(error.to_string())
}

impl ResponseStore for RedisStore {
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<Arc<StoredResponse>>, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move { self.fetch(&id).await })
    }

    fn put(&self, stored: StoredResponse) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.keep(stored))
    }

    fn delete(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move { self.remove(&id).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(id: &str, text: &str) -> StoredResponse {
        let response = serde_json::from_value(json!({
            "id": id, "object": "response", "created_at": 1, "status": "completed",
            "error": null, "incomplete_details": null, "instructions": null, "max_output_tokens": null,
            "model": "m", "output": [], "parallel_tool_calls": true, "previous_response_id": null,
            "reasoning": {}, "store": true, "temperature": null, "text": {}, "tool_choice": "auto",
            "tools": [], "top_p": null, "truncation": "disabled", "usage": null, "user": null, "metadata": {}
        }))
        .unwrap();
        let input =
            serde_json::from_value(json!([{"type": "message", "role": "user", "content": text}]))
                .unwrap();
        StoredResponse {
            response,
            input,
            owner: Some("k".into()),
        }
    }

    fn size(stored: &StoredResponse) -> usize {
        serde_json::to_vec(stored).unwrap().len()
    }

    #[test]
    fn entries_expire_and_the_least_recently_used_go_first() {
        let now = Instant::now();
        let one = size(&stored("resp_a", "x"));
        let store = MemoryStore::new(
            NonZeroUsize::new(2).unwrap(),
            3 * one,
            Duration::from_secs(60),
        );
        store.put_at(stored("resp_a", "x"), now).unwrap();
        store.put_at(stored("resp_b", "x"), now).unwrap();
        assert!(
            store.get_at("resp_a", now).is_some(),
            "a is now the most recently used"
        );
        store.put_at(stored("resp_c", "x"), now).unwrap();
        assert!(
            store.get_at("resp_b", now).is_none(),
            "b was evicted by the entry bound"
        );
        assert!(store.get_at("resp_a", now).is_some());
        assert!(
            store
                .get_at("resp_a", now + Duration::from_secs(61))
                .is_none(),
            "expired"
        );
        assert!(store.get_at("resp_c", now).is_some());
    }

    #[test]
    fn the_byte_bound_evicts_and_refuses_what_cannot_fit() {
        let now = Instant::now();
        let one = size(&stored("resp_a", "x"));
        let store = MemoryStore::new(
            NonZeroUsize::new(100).unwrap(),
            2 * one,
            Duration::from_secs(60),
        );
        for id in ["resp_a", "resp_b", "resp_c"] {
            store.put_at(stored(id, "x"), now).unwrap();
        }
        assert!(store.get_at("resp_a", now).is_none());
        assert!(store.get_at("resp_b", now).is_some() && store.get_at("resp_c", now).is_some());
        assert_eq!(store.kept.lock().unwrap().bytes, 2 * one);
        let big = stored("resp_big", &"x".repeat(3 * one));
        assert!(matches!(
            store.put_at(big, now),
            Err(StoreError::TooLarge { .. })
        ));
        assert!(store.kept.lock().unwrap().remove("resp_b"));
        assert_eq!(store.kept.lock().unwrap().bytes, one);
    }

    #[tokio::test]
    async fn redis_keeps_responses_for_every_replica_and_says_when_it_is_gone() {
        let redis = switchboard_testkit::RedisServer::start();
        let one = RedisStore::new(&redis.url, 1 << 20, Duration::from_secs(60)).unwrap();
        let other = RedisStore::new(&redis.url, 1 << 20, Duration::from_secs(60)).unwrap();
        let kept = stored("resp_shared", "hello");
        one.put(kept.clone()).await.unwrap();
        let found = other.get("resp_shared").await.unwrap().unwrap();
        assert_eq!(
            *found, kept,
            "a response kept by one replica is read by another"
        );
        assert!(found.belongs_to(Some("k")) && !found.belongs_to(None));
        assert!(other.get("resp_unknown").await.unwrap().is_none());

        let small = RedisStore::new(&redis.url, 10, Duration::from_secs(60)).unwrap();
        assert!(matches!(
            small.put(stored("resp_big", "x")).await,
            Err(StoreError::TooLarge { limit: 10, .. })
        ));
        let brief = RedisStore::new(&redis.url, 1 << 20, Duration::from_millis(50)).unwrap();
        brief.put(stored("resp_brief", "x")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            brief.get("resp_brief").await.unwrap().is_none(),
            "expired on Redis's clock"
        );

        assert!(other.delete("resp_shared").await.unwrap());
        assert!(!one.delete("resp_shared").await.unwrap());
        drop(redis);
        let error = one.get("resp_shared").await.unwrap_err().to_string();
        assert!(
            error.contains("Redis at 127.0.0.1:") && error.contains("unreachable"),
            "{error}"
        );
    }
}
