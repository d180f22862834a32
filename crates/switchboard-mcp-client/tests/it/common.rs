//! What the tests share: finding the peers (a missing one is a SKIP, or a failure under
//! SWITCHBOARD_REQUIRE_PEERS=1), free ports, child servers that die with the test, and
//! building configurations.

use std::collections::BTreeMap;
use std::time::Duration;

use switchboard_mcp_client::{Transport, Upstream, UpstreamConfig};
pub use switchboard_testkit::mcp::{
    ServerProcess as Server, free_port, python, reference_server, script,
};

/// A stdio upstream named `name` running `command`, with a short call deadline.
pub fn stdio(name: &str, command: &[&str]) -> UpstreamConfig {
    stdio_with_env(name, command, BTreeMap::new())
}

pub fn stdio_with_env(
    name: &str,
    command: &[&str],
    env: BTreeMap<String, String>,
) -> UpstreamConfig {
    let mut config = UpstreamConfig::new(
        name,
        Transport::Stdio {
            command: command.iter().map(|part| (*part).to_owned()).collect(),
            env,
        },
    );
    config.call_timeout = Duration::from_secs(20);
    config
}

pub fn http(name: &str, url: &str, headers: BTreeMap<String, String>) -> UpstreamConfig {
    let mut config = UpstreamConfig::new(
        name,
        Transport::Http {
            url: url.to_owned(),
            headers,
        },
    );
    config.call_timeout = Duration::from_secs(20);
    config
}

/// Starts `config` and waits for its first connection.
pub async fn connected(config: UpstreamConfig) -> Upstream {
    logs();
    let upstream = Upstream::start(config).unwrap();
    tokio::time::timeout(Duration::from_secs(60), upstream.ready())
        .await
        .expect("the first connection took over a minute")
        .unwrap_or_else(|error| panic!("{error}"));
    upstream
}

pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().unwrap().clone()
}

/// Logs to the test's output when RUST_LOG is set.
pub fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Collects what the test's own subscriber logs.
#[derive(Clone, Default)]
pub struct Captured(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
