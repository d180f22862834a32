//! A route's pool as a plain backend (what `switchboard chat` talks through): the one
//! retry loop of the project, against a scripted backend speaking real HTTP on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use switchboard_providers::{Backend, BackendError};
use switchboard_testkit::{Chunking, OpenAiScript, Reply, ScriptedServer};
use switchboard_tools::Message;
use switchboard_upstream::{ClientHooks, PoolBackend, Route, RouteConfig};
use switchboard_wire::{ChatRequest, Format, StreamEvent};

fn backend(server: &ScriptedServer, retries: u32) -> PoolBackend {
    let mut config = RouteConfig::new("local", Format::OpenAi, server.base.clone(), "m".into(), "");
    config.retries = retries;
    let timeout = Duration::from_secs(30);
    let route = Route::from_config(&config, timeout, &|_| None, &ClientHooks::default()).unwrap();
    PoolBackend {
        pool: Arc::clone(&route.pool),
        timeout,
    }
}

fn status(status: u16, body: &str, retry_after: Option<&str>) -> Reply {
    let mut reply = Reply {
        status,
        ..Reply::ok("application/json", body, Chunking::Whole)
    };
    if let Some(seconds) = retry_after {
        reply.headers.push(("retry-after".into(), seconds.into()));
    }
    reply
}

fn words() -> Reply {
    OpenAiScript::new()
        .text("Hello.")
        .finish("stop", 3, 2)
        .reply()
}

async fn text(backend: &PoolBackend) -> Result<String, BackendError> {
    let request = ChatRequest::new("m", vec![Message::user("hi")]);
    let mut events = backend.chat(request).await?;
    let mut text = String::new();
    while let Some(event) = events.next().await {
        if let StreamEvent::TextDelta(delta) = event? {
            text.push_str(&delta);
        }
    }
    Ok(text)
}

#[tokio::test]
async fn a_busy_backend_is_asked_again_after_the_wait_it_named() {
    let busy = status(429, r#"{"error":{"message":"slow down"}}"#, Some("0"));
    let server = ScriptedServer::start(vec![busy, words()]).await;
    assert_eq!(text(&backend(&server, 2)).await.unwrap(), "Hello.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retries_end_at_their_bound_with_the_backends_own_error() {
    let failing = || {
        status(
            503,
            r#"{"error":{"message":"loading the model"}}"#,
            Some("0"),
        )
    };
    let server = ScriptedServer::start(vec![failing(), failing(), failing(), words()]).await;
    let error = text(&backend(&server, 1)).await.unwrap_err();
    assert!(
        matches!(&error, BackendError::Http { status: 503, message, .. } if message == "loading the model"),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 2, "one try and one retry");
}

#[tokio::test]
async fn a_request_the_backend_refuses_is_not_asked_again() {
    let refused = status(400, r#"{"error":{"message":"bad tools"}}"#, None);
    let server = ScriptedServer::start(vec![refused, words()]).await;
    let error = text(&backend(&server, 2)).await.unwrap_err();
    assert_eq!(error.http_status(), 400, "{error:?}");
    assert_eq!(server.requests().len(), 1);
}
