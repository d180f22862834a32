//! Responses made with `store: true`, kept so that `previous_response_id` can continue their
//! conversation and `GET`/`DELETE /v1/responses/{id}` can find them. [`ResponseStore`] is
//! the interface; [`MemoryStore`] keeps them in this process: bounded in entries and bytes
//! (each entry counted at what it holds in memory, not its JSON length), each entry expiring
//! a fixed time after it was made; when full, room is made from the key holding the most,
//! least recently used first, so that one key cannot push out another key's responses while
//! it holds more than that key. [`RedisStore`] keeps them in Redis (`state = "redis://…"`),
//! so that every replica finds every response: each entry bounded in bytes and expiring like
//! the memory store's, the total bounded by the Redis server's own `maxmemory`.

use std::collections::HashMap;
use std::fmt::Debug;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use lru::LruCache;
use redis::AsyncCommands;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use switchboard_wire::json_len;
use switchboard_wire::responses::{Item, Response, value_slot_bytes};

use switchboard_redis::RedisLink;

/// `[responses]`: bounds of the store that keeps responses made with `store: true`, in this
/// process's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    /// Most responses kept; the least recently used goes first.
    #[serde(default = "default_store_entries")]
    pub store_max_entries: usize,
    /// Most bytes kept (each response with the conversation it continues, as JSON).
    #[serde(default = "default_store_bytes")]
    pub store_max_bytes: usize,
    /// How long a response is kept after it was made, in seconds.
    #[serde(default = "default_store_ttl")]
    pub store_ttl_secs: u64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            store_max_entries: default_store_entries(),
            store_max_bytes: default_store_bytes(),
            store_ttl_secs: default_store_ttl(),
        }
    }
}

fn default_store_entries() -> usize {
    1000
}

fn default_store_bytes() -> usize {
    64 * 1024 * 1024
}

fn default_store_ttl() -> u64 {
    3600
}

/// The store: in Redis (`shared`, the `state` URL) when replicas share state there, so that any replica
/// continues any conversation; in this process otherwise.
pub fn open(
    settings: &StoreSettings,
    shared: Option<&str>,
) -> Result<Arc<dyn ResponseStore>, String> {
    let ttl = Duration::from_secs(settings.store_ttl_secs);
    Ok(match shared {
        Some(url) => Arc::new(RedisStore::new(url, settings.store_max_bytes, ttl)?),
        None => Arc::new(MemoryStore::new(
            NonZeroUsize::new(settings.store_max_entries).unwrap_or(NonZeroUsize::MIN),
            settings.store_max_bytes,
            ttl,
        )),
    })
}

const REDIS_PREFIX: &str = "switchboard:responses:";

/// A conversation as the shared pieces it was built from: a continuation holds the pieces of
/// the conversation it continued and adds its own, so that a chain of continuations shares
/// one copy of its history instead of copying it at every turn. On the wire (and in Redis)
/// it is one flat list of items.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation(Vec<Arc<[Item]>>);

impl Conversation {
    pub fn iter(&self) -> impl Iterator<Item = &Item> {
        self.0.iter().flat_map(|piece| piece.iter())
    }

    pub fn first(&self) -> Option<&Item> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<&Item> {
        self.0.iter().rev().find_map(|piece| piece.last())
    }

    /// This conversation followed by `items`, which are moved, not copied.
    pub fn then(mut self, items: Vec<Item>) -> Self {
        if !items.is_empty() {
            self.0.push(Arc::from(items));
        }
        self
    }

    /// Its length as JSON, counted without writing it anywhere.
    fn json_bytes(&self) -> usize {
        self.iter().map(json_len).sum()
    }
}

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Item>::deserialize(deserializer).map(|items| Self::default().then(items))
    }
}

/// A response and the conversation it answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub response: Response,
    /// Every item before the response's output: the conversation it continued and the
    /// request's own input.
    pub input: Conversation,
    /// The name of the API key that made it: only that key may read, continue or delete it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The whole conversation's length as JSON, input and output: what a continuation adds
    /// to its request, measured once.
    #[serde(skip)]
    conversation_bytes: usize,
}

impl StoredResponse {
    pub fn new(response: Response, input: Conversation, owner: Option<String>) -> Self {
        let mut stored = Self {
            response,
            input,
            owner,
            conversation_bytes: 0,
        };
        stored.measure();
        stored
    }

    fn measure(&mut self) {
        self.conversation_bytes =
            self.input.json_bytes() + self.response.output.iter().map(json_len).sum::<usize>();
    }

    /// Whether the caller with this key name (none without keys) may see it.
    pub fn belongs_to(&self, caller: Option<&str>) -> bool {
        self.owner.as_deref() == caller
    }

    /// The whole conversation's length as JSON (its input, then its output).
    pub fn conversation_bytes(&self) -> usize {
        self.conversation_bytes
    }

    /// The whole conversation, to continue: its input (shared), then its output.
    pub fn conversation(&self) -> Conversation {
        self.input.clone().then(self.response.output.clone())
    }

    /// What the entry holds in memory: its JSON text's worth of strings, plus the slots of
    /// its items and of every JSON value in it, which the JSON length leaves out (30,000
    /// one-letter messages are 1.4 MB of JSON and several times that in memory).
    fn footprint(&self) -> usize {
        let response = &self.response;
        let values = [
            response.instructions.as_ref(),
            Some(&response.reasoning),
            Some(&response.text),
            Some(&response.tool_choice),
            response.tool_call_errors.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(value_slot_bytes)
        .sum::<usize>()
            + response
                .metadata
                .values()
                .map(value_slot_bytes)
                .sum::<usize>();
        json_len(self)
            + values
            + self
                .input
                .iter()
                .chain(&response.output)
                .map(Item::slot_bytes)
                .sum::<usize>()
    }
}

/// The error code of a store that cannot be reached.
pub const STORE_UNAVAILABLE: &str = "store_unavailable";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the response and its conversation take {size} bytes, more than the store holds ({limit})"
    )]
    TooLarge { size: usize, limit: usize },
    #[error("the response store failed: {0}")]
    Backend(String),
}

impl StoreError {
    /// The error code a client is told.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::TooLarge { .. } => "stored_response_too_large",
            StoreError::Backend(_) => STORE_UNAVAILABLE,
        }
    }
}

/// Where stored responses live.
pub trait ResponseStore: Send + Sync + Debug {
    /// The response with this id, unless it is unknown, expired or was evicted.
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<Arc<StoredResponse>>, StoreError>>;
    fn put(&self, stored: StoredResponse) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Whether there was such a response.
    fn delete(&self, id: &str) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Whether a response could be kept now: asked before a `store: true` request goes to
    /// its backend, so that an outage is told to the client instead of an answer that is
    /// silently not kept.
    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// The in-process store.
#[derive(Debug)]
pub struct MemoryStore {
    kept: Mutex<Contents>,
    max_entries: NonZeroUsize,
    max_bytes: usize,
    ttl: Duration,
}

/// The entries, by the key that made them (`None` without keys), each key's least recently
/// used first.
#[derive(Debug, Default)]
struct Contents {
    owners: HashMap<Option<String>, Owned>,
    /// Whose each id is.
    index: HashMap<String, Option<String>>,
    bytes: usize,
}

#[derive(Debug)]
struct Owned {
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
            kept: Mutex::new(Contents::default()),
            max_entries,
            max_bytes,
            ttl,
        }
    }

    fn get_at(&self, id: &str, now: Instant) -> Option<Arc<StoredResponse>> {
        let mut kept = self.kept.lock().ok()?;
        let owner = kept.index.get(id)?.clone();
        let entry = kept.owners.get_mut(&owner)?.entries.get(id)?;
        let (expired, stored) = (entry.expires <= now, Arc::clone(&entry.stored));
        if expired {
            kept.remove(id);
            return None;
        }
        Some(stored)
    }

    fn put_at(&self, stored: StoredResponse, now: Instant) -> Result<(), StoreError> {
        let size = stored.footprint();
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
        let owner = stored.owner.clone();
        kept.remove(&id);
        while kept.bytes + size > self.max_bytes || kept.index.len() >= self.max_entries.get() {
            let by_bytes = kept.bytes + size > self.max_bytes;
            if !kept.evict(by_bytes, &owner) {
                break;
            }
        }
        let entry = Entry {
            stored: Arc::new(stored),
            size,
            expires: now + self.ttl,
        };
        kept.bytes += size;
        kept.index.insert(id.clone(), owner.clone());
        let held = kept.owners.entry(owner).or_insert_with(|| Owned {
            entries: LruCache::unbounded(),
            bytes: 0,
        });
        held.bytes += size;
        held.entries.push(id, entry);
        Ok(())
    }
}

impl Contents {
    fn remove(&mut self, id: &str) -> bool {
        let Some(owner) = self.index.remove(id) else {
            return false;
        };
        let Some(held) = self.owners.get_mut(&owner) else {
            return false;
        };
        let Some(entry) = held.entries.pop(id) else {
            return false;
        };
        held.bytes -= entry.size;
        self.bytes -= entry.size;
        if held.entries.is_empty() {
            self.owners.remove(&owner);
        }
        true
    }

    /// Drops the least recently used entry of the key that holds the most (in bytes when
    /// the byte bound is what is reached, in entries otherwise; the key making room when it
    /// holds as much as another); whether there was one.
    fn evict(&mut self, by_bytes: bool, making_room: &Option<String>) -> bool {
        let largest = self
            .owners
            .iter()
            .max_by_key(|(owner, held)| {
                let held = if by_bytes {
                    held.bytes
                } else {
                    held.entries.len()
                };
                (held, *owner == making_room)
            })
            .and_then(|(_, held)| held.entries.peek_lru())
            .map(|(id, _)| id.clone());
        match largest {
            Some(id) => self.remove(&id),
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

    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
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
        let mut stored: StoredResponse = serde_json::from_slice(&text).map_err(|error| {
            StoreError::Backend(format!(
                "the response stored in Redis at {} as {id} is not readable: {error}",
                self.link.address()
            ))
        })?;
        stored.measure();
        Ok(Some(Arc::new(stored)))
    }

    /// A round trip: a link that was up may have broken since it was last used.
    async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.link.connection().await.map_err(unavailable)?;
        let pong: Result<String, _> = redis::cmd("PING").query_async(&mut connection).await;
        match pong {
            Ok(_) => Ok(()),
            Err(error) => Err(unavailable(self.link.failed(&error).await)),
        }
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

fn unavailable(error: switchboard_redis::LinkError) -> StoreError {
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

    fn ready(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.ping())
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
        let input: Vec<Item> = input;
        StoredResponse::new(
            response,
            Conversation::default().then(input),
            Some("k".into()),
        )
    }

    fn size(stored: &StoredResponse) -> usize {
        stored.footprint()
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

    #[test]
    fn room_is_made_from_the_key_holding_the_most() {
        let now = Instant::now();
        let store = MemoryStore::new(
            NonZeroUsize::new(4).unwrap(),
            usize::MAX,
            Duration::from_secs(60),
        );
        let owned = |id: &str, owner: &str| StoredResponse {
            owner: Some(owner.into()),
            ..stored(id, "x")
        };
        store.put_at(owned("resp_b0", "b"), now).unwrap();
        for index in 0..6 {
            store
                .put_at(owned(&format!("resp_a{index}"), "a"), now)
                .unwrap();
        }
        assert!(
            store.get_at("resp_b0", now).is_some(),
            "b holds less than a"
        );
        assert!(store.get_at("resp_a2", now).is_none() && store.get_at("resp_a5", now).is_some());
        // Once b holds the most, b's own go first.
        for index in 1..4 {
            store
                .put_at(owned(&format!("resp_b{index}"), "b"), now)
                .unwrap();
        }
        assert!(store.get_at("resp_a5", now).is_some());
        assert!(store.get_at("resp_b0", now).is_none());
    }

    #[test]
    fn a_conversation_is_shared_in_memory_and_flat_on_the_wire() {
        let first = stored("resp_a", "one");
        let conversation = first
            .conversation()
            .then(first.input.iter().cloned().collect());
        assert!(
            Arc::ptr_eq(&conversation.0[0], &first.input.0[0]),
            "shared, not copied"
        );
        let text = serde_json::to_value(&conversation).unwrap();
        assert_eq!(text.as_array().unwrap().len(), 2, "{text}");
        let back: Conversation = serde_json::from_value(text).unwrap();
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            conversation.iter().collect::<Vec<_>>()
        );
        assert_eq!(conversation.last(), first.input.first());
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
