//! Whether each route's backend answers: checked at start-up and then periodically by
//! opening a TCP connection to its host, and reported by `/healthz`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::Uri;
use serde::Serialize;
use tokio::net::TcpStream;

use super::route::Route;

/// The last check of one backend.
#[derive(Debug, Clone, Serialize)]
pub struct BackendHealth {
    pub route: String,
    pub url: String,
    pub reachable: Option<bool>,
    pub detail: Option<String>,
    pub checked_at: Option<u64>,
}

#[derive(Debug)]
pub struct Health {
    backends: Mutex<Vec<BackendHealth>>,
}

impl Health {
    pub fn new(routes: &[Arc<Route>]) -> Self {
        let backends = routes
            .iter()
            .map(|route| BackendHealth {
                route: route.name.clone(),
                url: route.url.clone(),
                reachable: None,
                detail: None,
                checked_at: None,
            })
            .collect();
        Self {
            backends: Mutex::new(backends),
        }
    }

    pub fn snapshot(&self) -> Vec<BackendHealth> {
        self.backends
            .lock()
            .map(|backends| backends.clone())
            .unwrap_or_default()
    }

    /// Checks every backend once, concurrently.
    pub async fn check(&self) {
        let targets: Vec<String> = self
            .snapshot()
            .into_iter()
            .map(|backend| backend.url)
            .collect();
        let results = futures::future::join_all(targets.iter().map(|url| probe(url))).await;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        if let Ok(mut backends) = self.backends.lock() {
            for (backend, result) in backends.iter_mut().zip(results) {
                backend.reachable = Some(result.is_ok());
                backend.detail = result.err();
                backend.checked_at = Some(now);
            }
        }
    }
}

async fn probe(url: &str) -> Result<(), String> {
    let uri: Uri = url.parse().map_err(|error| format!("bad URL: {error}"))?;
    let host = uri.host().ok_or("the URL has no host")?;
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("no answer within 2 s".to_owned()),
    }
}
