//! Whether each replica of each route answers, as `/healthz` reports it: whether its port
//! accepts connections (checked at start-up and then periodically), what the pool knows of
//! it (taken out after failures, requests in flight, errors, ejections), and, for routes
//! with `health_check_secs`, the active checks that bring ejected replicas back.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::Uri;
use serde::Serialize;
use tokio::net::TcpStream;

use super::pool::Pool;
use super::replica::{Replica, ReplicaReport};
use super::route::Route;

/// One replica as `/healthz` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct BackendHealth {
    pub route: String,
    pub url: String,
    /// Whether its port accepted a connection at the last probe.
    pub reachable: Option<bool>,
    pub detail: Option<String>,
    pub checked_at: Option<u64>,
    #[serde(flatten)]
    pub pool: ReplicaReport,
}

#[derive(Debug)]
struct Probe {
    route: String,
    replica: Arc<Replica>,
    reachable: Option<bool>,
    detail: Option<String>,
    checked_at: Option<u64>,
}

#[derive(Debug)]
pub struct Health {
    probes: Mutex<Vec<Probe>>,
    /// Routes whose replicas are checked actively; held weakly so that checks end with
    /// the route.
    checked: Vec<(Weak<Pool>, Duration)>,
}

impl Health {
    pub fn new(routes: &[Arc<Route>]) -> Self {
        let probes = routes
            .iter()
            .flat_map(|route| {
                route.pool.replicas().iter().map(|replica| Probe {
                    route: route.name.clone(),
                    replica: Arc::clone(replica),
                    reachable: None,
                    detail: None,
                    checked_at: None,
                })
            })
            .collect();
        let checked = routes
            .iter()
            .filter_map(|route| {
                route
                    .health_check
                    .map(|period| (Arc::downgrade(&route.pool), period))
            })
            .collect();
        Self {
            probes: Mutex::new(probes),
            checked,
        }
    }

    pub fn snapshot(&self) -> Vec<BackendHealth> {
        self.probes
            .lock()
            .map(|probes| {
                probes
                    .iter()
                    .map(|probe| BackendHealth {
                        route: probe.route.clone(),
                        url: probe.replica.url.clone(),
                        reachable: probe.reachable,
                        detail: probe.detail.clone(),
                        checked_at: probe.checked_at,
                        pool: probe.replica.report(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether every route in a snapshot has a replica taking requests: not taken out by
    /// the pool, and not found unreachable at the last probe.
    pub fn every_route_serves(backends: &[BackendHealth]) -> bool {
        let mut routes: Vec<(&str, bool)> = Vec::new();
        for backend in backends {
            let serves = backend.pool.state == "healthy" && backend.reachable != Some(false);
            match routes.iter_mut().find(|(route, _)| *route == backend.route) {
                Some((_, any)) => *any |= serves,
                None => routes.push((&backend.route, serves)),
            }
        }
        routes.iter().all(|(_, serves)| *serves)
    }

    /// Probes every replica's port once, concurrently.
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
        if let Ok(mut probes) = self.probes.lock() {
            for (probe, result) in probes.iter_mut().zip(results) {
                probe.reachable = Some(result.is_ok());
                probe.detail = result.err();
                probe.checked_at = Some(now);
            }
        }
    }

    /// Runs each route's active checks at its own period, for as long as the route lives
    /// (a reload's new routes get their own). Outside a runtime (state built by a test)
    /// nothing runs.
    pub fn check_routes(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for (pool, every) in &self.checked {
            let pool = Weak::clone(pool);
            let every = *every;
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(pool) = pool.upgrade() else { break };
                    pool.check().await;
                }
            });
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
