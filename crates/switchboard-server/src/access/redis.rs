//! Rate-limit counters shared by gateway replicas through Redis (`state =
//! "redis://HOST:PORT/DB"`): each decision is one atomic script (`limits.lua`) on Redis's
//! own clock. The connection is opened on first use and again after a failure, at most once
//! a second, each attempt and each command bounded in time, so a Redis outage costs a
//! request at most one bounded wait and then none until the next attempt. What to do
//! without Redis (admit or refuse) is the caller's choice.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Script};
use tokio::sync::Mutex;

use super::keys::Key;

/// Loopback or a LAN: a healthy Redis answers well within this.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failure, requests pass Redis by (fail open or closed) for this long.
const RETRY_AFTER: Duration = Duration::from_secs(1);
const PREFIX: &str = "switchboard:limits:";

/// Why Redis could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("Redis at {address} is unreachable: {detail}")]
    Unreachable { address: String, detail: String },
    #[error("Redis at {address} is not retried until {wait_ms} ms from now, after a failure")]
    Waiting { address: String, wait_ms: u128 },
    #[error("Redis at {address} answered the rate-limit script with an error: {detail}")]
    Script { address: String, detail: String },
}

/// The levels a decision is made from (see `limits::decide`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    pub refused: u8,
    pub requests: f64,
    pub tokens: f64,
    pub open: u32,
}

#[derive(Debug)]
enum Link {
    Up(MultiplexedConnection),
    Down { retry_at: Instant },
}

/// The Redis side of the limiter.
pub struct Shared {
    client: Client,
    /// `host:port`: the URL may hold a password, so it is never shown.
    address: String,
    link: Mutex<Link>,
    script: Script,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// Checks a `state` URL; the message never repeats the URL (it may hold a password).
pub fn check_url(url: &str) -> Result<(), String> {
    if !url.starts_with("redis://") {
        return Err("state: expected redis://HOST:PORT/DB".into());
    }
    Client::open(url)
        .map(drop)
        .map_err(|error| format!("state: not a usable Redis URL ({:?})", error.kind()))
}

impl Shared {
    pub fn new(url: &str) -> Result<Self, String> {
        check_url(url)?;
        let client = Client::open(url).map_err(|error| format!("state: {:?}", error.kind()))?;
        let address = client.get_connection_info().addr.to_string();
        Ok(Self {
            client,
            address,
            link: Mutex::new(Link::Down {
                retry_at: Instant::now(),
            }),
            script: Script::new(include_str!("limits.lua")),
        })
    }

    /// `host:port`, for log lines.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// A live connection, opening one when the last failure is long enough ago.
    async fn connection(&self) -> Result<MultiplexedConnection, StoreError> {
        let mut link = self.link.lock().await;
        match &*link {
            Link::Up(connection) => return Ok(connection.clone()),
            Link::Down { retry_at } => {
                let now = Instant::now();
                if *retry_at > now {
                    return Err(StoreError::Waiting {
                        address: self.address.clone(),
                        wait_ms: (*retry_at - now).as_millis(),
                    });
                }
            }
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(CONNECT_TIMEOUT)
            .set_response_timeout(RESPONSE_TIMEOUT);
        match self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
        {
            Ok(connection) => {
                *link = Link::Up(connection.clone());
                Ok(connection)
            }
            Err(error) => {
                *link = Link::Down {
                    retry_at: Instant::now() + RETRY_AFTER,
                };
                Err(StoreError::Unreachable {
                    address: self.address.clone(),
                    detail: error.to_string(),
                })
            }
        }
    }

    /// Forgets a connection that failed, so the next use reconnects (not before
    /// [`RETRY_AFTER`]).
    async fn failed(&self, error: &redis::RedisError) -> StoreError {
        let connection_lost = error.is_io_error()
            || error.is_timeout()
            || error.is_connection_dropped()
            || error.is_connection_refusal();
        if connection_lost {
            *self.link.lock().await = Link::Down {
                retry_at: Instant::now() + RETRY_AFTER,
            };
            StoreError::Unreachable {
                address: self.address.clone(),
                detail: error.to_string(),
            }
        } else {
            StoreError::Script {
                address: self.address.clone(),
                detail: error.to_string(),
            }
        }
    }

    /// Decides on a request in Redis and, when admitted, counts it; an admitted request
    /// with a limit on open requests holds the lease `lease` until [`Shared::release`] or
    /// until `lease_length` has passed (a replica that died cannot hold it for ever).
    pub async fn admit(
        &self,
        key: &Key,
        lease: &str,
        lease_length: Duration,
    ) -> Result<Levels, StoreError> {
        let mut connection = self.connection().await?;
        let limits = key.limits;
        let reply: Result<Vec<String>, _> = self
            .script
            .key(bucket(key, "requests"))
            .key(bucket(key, "tokens"))
            .key(bucket(key, "open"))
            .arg("admit")
            .arg(limits.requests_per_minute.unwrap_or(0))
            .arg(limits.tokens_per_minute.unwrap_or(0))
            .arg(limits.max_concurrent.unwrap_or(0))
            .arg(lease)
            .arg(lease_length.as_micros() as u64)
            .invoke_async(&mut connection)
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => return Err(self.failed(&error).await),
        };
        let number = |index: usize| reply.get(index).and_then(|text| text.parse::<f64>().ok());
        match (number(0), number(1), number(2), number(3)) {
            (Some(refused), Some(requests), Some(tokens), Some(open)) => Ok(Levels {
                refused: refused as u8,
                requests,
                tokens,
                open: open as u32,
            }),
            _ => Err(StoreError::Script {
                address: self.address.clone(),
                detail: format!("unexpected reply {reply:?}"),
            }),
        }
    }

    /// Adds an answer's tokens to the key's token bucket.
    pub async fn charge(&self, key: &Key, tokens: u64) -> Result<(), StoreError> {
        let Some(per_minute) = key.limits.tokens_per_minute else {
            return Ok(());
        };
        let mut connection = self.connection().await?;
        let reply: Result<String, _> = self
            .script
            .key(bucket(key, "requests"))
            .key(bucket(key, "tokens"))
            .key(bucket(key, "open"))
            .arg("charge")
            .arg(per_minute)
            .arg(tokens)
            .invoke_async(&mut connection)
            .await;
        match reply {
            Ok(_) => Ok(()),
            Err(error) => Err(self.failed(&error).await),
        }
    }

    /// Ends an open request's lease.
    pub async fn release(&self, key: &Key, lease: &str) -> Result<(), StoreError> {
        let mut connection = self.connection().await?;
        let removed: Result<i64, _> = redis::cmd("ZREM")
            .arg(bucket(key, "open"))
            .arg(lease)
            .query_async(&mut connection)
            .await;
        match removed {
            Ok(_) => Ok(()),
            Err(error) => Err(self.failed(&error).await),
        }
    }

    /// Whether Redis answers now (for the start-up report).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.connection().await?;
        let pong: Result<String, _> = redis::cmd("PING").query_async(&mut connection).await;
        match pong {
            Ok(_) => Ok(()),
            Err(error) => Err(self.failed(&error).await),
        }
    }
}

/// A key's Redis key; the braces keep a key's three entries in one cluster slot, which a
/// script touching all three needs.
fn bucket(key: &Key, part: &str) -> String {
    format!("{PREFIX}{{{}}}:{part}", key.name)
}
