//! One connection to the Redis server named by `state = "redis://HOST:PORT/DB"`, shared by
//! what replicas keep together (rate-limit counters, stored responses). It is opened on
//! first use and again after a failure, at most once a second, each attempt and each
//! command bounded in time, so a Redis outage costs a request at most one bounded wait and
//! then none until the next attempt.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};
use tokio::sync::Mutex;

/// Loopback or a LAN: a healthy Redis answers well within this.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failure, Redis is not asked again for this long.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why Redis could not be asked, or what it answered instead.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("Redis at {address} is unreachable: {detail}")]
    Unreachable { address: String, detail: String },
    #[error("Redis at {address} is not retried until {wait_ms} ms from now, after a failure")]
    Waiting { address: String, wait_ms: u128 },
    #[error("Redis at {address} answered with an error: {detail}")]
    Command { address: String, detail: String },
}

#[derive(Debug)]
enum Link {
    Up(MultiplexedConnection),
    Down { retry_at: Instant },
}

/// The client and its one multiplexed connection.
pub struct RedisLink {
    client: Client,
    /// `host:port`: the URL may hold a password, so it is never shown.
    address: String,
    link: Mutex<Link>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink")
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

impl RedisLink {
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
        })
    }

    /// `host:port`, never the password.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// A live connection, opening one when the last failure is long enough ago.
    pub async fn connection(&self) -> Result<MultiplexedConnection, LinkError> {
        let mut link = self.link.lock().await;
        match &*link {
            Link::Up(connection) => return Ok(connection.clone()),
            Link::Down { retry_at } => {
                let now = Instant::now();
                if *retry_at > now {
                    return Err(LinkError::Waiting {
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
                Err(LinkError::Unreachable {
                    address: self.address.clone(),
                    detail: error.to_string(),
                })
            }
        }
    }

    /// What a failed command means; forgets a connection that broke, so the next use
    /// reconnects (not before [`RETRY_AFTER`]).
    pub async fn failed(&self, error: &redis::RedisError) -> LinkError {
        let connection_lost = error.is_io_error()
            || error.is_timeout()
            || error.is_connection_dropped()
            || error.is_connection_refusal();
        if connection_lost {
            *self.link.lock().await = Link::Down {
                retry_at: Instant::now() + RETRY_AFTER,
            };
            LinkError::Unreachable {
                address: self.address.clone(),
                detail: error.to_string(),
            }
        } else {
            self.answered(error.to_string())
        }
    }

    /// Redis answered, but not as it should have.
    pub fn answered(&self, detail: String) -> LinkError {
        LinkError::Command {
            address: self.address.clone(),
            detail,
        }
    }
}
