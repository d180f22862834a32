//! The OpenAI client against a real llama.cpp server (crates/switchboard-testkit/src/llama.rs;
//! SKIP without it, failure under `SWITCHBOARD_REQUIRE_PEERS=1`). That server announces
//! keep-alive and closes the connection after every streamed answer; a request sent at once
//! can go out on the closing connection. Straight from the client, with nothing between two
//! requests, that happened to about one request in ten before such a request was retried on a
//! new connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchboard_providers::{BackendConfig, OpenAiBackend, complete};
use switchboard_testkit::LlamaServer;
use switchboard_tools::Message;
use switchboard_wire::ChatRequest;

#[tokio::test]
async fn back_to_back_requests_on_a_server_that_closes_kept_connections_all_succeed() {
    let Some(server) = LlamaServer::shared() else {
        return;
    };
    let backend =
        OpenAiBackend::new(BackendConfig::new(format!("{}/v1", server.base_url()))).unwrap();
    let mut failures = Vec::new();
    for round in 0..80 {
        let mut request = ChatRequest::new("smollm2", vec![Message::user("Say OK.")]);
        request.max_tokens = Some(1);
        // Mostly streamed, as the gateway always asks; every fourth whole.
        request.stream = round % 4 != 3;
        if let Err(error) = complete(&backend, request).await {
            failures.push(format!("request {round}: {error}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 80 failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
