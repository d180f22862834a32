//! The clients against scripted HTTP servers on loopback that replay each provider's bytes
//! exactly, in chosen chunkings: same events and answer whatever the chunking, equal to
//! the non-streaming answer, and typed errors for every failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use switchboard_providers::{
    AnthropicBackend, Backend, BackendConfig, BackendError, ConnectionFailure, OllamaBackend,
    OpenAiBackend, TimeoutPhase, complete,
};
use switchboard_testkit::{Chunking, Reply, ScriptedServer};
use switchboard_tools::{Message, ToolCall, ToolDefinition};
use switchboard_wire::{ChatRequest, ChatResponse, FinishReason, StreamEvent, ToolChoice};

fn fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../switchboard-wire/tests/fixtures");
    std::fs::read(dir.join(name)).unwrap()
}

/// A JSON body with an error status, exactly as given.
fn status(status: u16, body: &str) -> Reply {
    Reply {
        status,
        ..Reply::ok("application/json", body, Chunking::Whole)
    }
}

async fn serve(replies: Vec<Reply>) -> ScriptedServer {
    ScriptedServer::start(replies).await
}

fn config(server: &ScriptedServer) -> BackendConfig {
    let mut config = BackendConfig::new(&server.base).with_api_key("test-key");
    config.extra_headers.push(("x-extra".into(), "yes".into()));
    config
}

fn request(stream: bool) -> ChatRequest {
    let mut request = ChatRequest::new(
        "test-model",
        vec![
            Message::system("Be brief."),
            Message::user("Weather?"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "call.old:1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Oslo"}"#.into(),
                }],
            ),
            Message::tool("call.old:1", "rain"),
        ],
    );
    request.tools = vec![ToolDefinition::function(
        "get_weather",
        "Weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )]
    .into();
    request.stream = stream;
    request
}

async fn events(
    backend: &dyn Backend,
    request: ChatRequest,
) -> Result<Vec<StreamEvent>, BackendError> {
    let mut stream = backend.chat(request).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

/// Generated ids differ between calls; compare everything else.
fn without_generated_ids(mut events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    for event in &mut events {
        if let StreamEvent::ToolCallStart { id, .. } = event
            && id.len() == 29
            && id.starts_with("call_")
        {
            *id = "generated".into();
        }
    }
    events
}

/// An answer with generated ids replaced and arguments in one JSON spelling, so answers
/// decoded independently can be compared.
fn normalise(response: &ChatResponse) -> ChatResponse {
    let mut response = response.clone();
    for call in &mut response.tool_calls {
        if call.id.len() == 29 && call.id.starts_with("call_") {
            call.id = "generated".into();
        }
        call.arguments = serde_json::from_str::<Value>(&call.arguments)
            .unwrap()
            .to_string();
    }
    response
}

/// The stream in three chunkings and the non-streaming body all give one answer.
async fn same_answer_every_way(
    make: impl Fn(BackendConfig) -> Box<dyn Backend>,
    stream_fixture: &str,
    content_type: &str,
    separator: &'static str,
    json_fixture: &str,
) -> ChatResponse {
    let body = fixture(stream_fixture);
    let mut first: Option<Vec<StreamEvent>> = None;
    for chunking in [
        Chunking::Bytes,
        Chunking::PerEvent(separator),
        Chunking::Whole,
    ] {
        let server = serve(vec![Reply::ok(content_type, body.clone(), chunking)]).await;
        let got = without_generated_ids(
            events(make(config(&server)).as_ref(), request(true))
                .await
                .unwrap(),
        );
        match &first {
            None => first = Some(got),
            Some(first) => assert_eq!(&got, first, "{chunking:?}"),
        }
    }
    let streamed = switchboard_wire::collect(first.as_ref().unwrap()).unwrap();
    let server = serve(vec![Reply::ok(
        "application/json",
        fixture(json_fixture),
        Chunking::Whole,
    )])
    .await;
    let backend = make(config(&server));
    let whole = complete(backend.as_ref(), request(false)).await.unwrap();
    assert_eq!(normalise(&whole), normalise(&streamed));
    assert_ne!(
        server.requests()[0].body["stream"],
        json!(true),
        "the non-streaming call asks for a JSON body"
    );
    streamed
}

#[tokio::test]
async fn openai_streams_in_any_chunking_equal_the_json_answer() {
    let make = |config| Box::new(OpenAiBackend::new(config).unwrap()) as Box<dyn Backend>;
    let answer = same_answer_every_way(
        make,
        "openai_parallel.sse",
        "text/event-stream",
        "\n\n",
        "openai_parallel.json",
    )
    .await;
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[1].arguments, "{}");
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn anthropic_streams_in_any_chunking_equal_the_json_answer() {
    let make = |config| Box::new(AnthropicBackend::new(config).unwrap()) as Box<dyn Backend>;
    let answer = same_answer_every_way(
        make,
        "anthropic_tools.sse",
        "text/event-stream",
        "\n\n",
        "anthropic_tools.json",
    )
    .await;
    assert_eq!(answer.tool_calls[0].name, "search");
    assert_eq!(answer.usage.unwrap().total_tokens, 97);
}

#[tokio::test]
async fn ollama_streams_in_any_chunking_equal_the_json_answer() {
    let make = |config| Box::new(OllamaBackend::new(config).unwrap()) as Box<dyn Backend>;
    let answer = same_answer_every_way(
        make,
        "ollama_tools.ndjson",
        "application/x-ndjson",
        "\n",
        "ollama_tools.json",
    )
    .await;
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn requests_carry_each_formats_headers_and_body() {
    let openai = serve(vec![Reply::ok(
        "text/event-stream",
        fixture("openai_parallel.sse"),
        Chunking::Whole,
    )])
    .await;
    events(&OpenAiBackend::new(config(&openai)).unwrap(), request(true))
        .await
        .unwrap();
    let sent = &openai.requests()[0];
    assert!(
        sent.head.starts_with("post /chat/completions "),
        "{}",
        sent.head
    );
    assert!(
        sent.head.contains("authorization: bearer test-key") && sent.head.contains("x-extra: yes")
    );
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        sent.body["messages"][2]["tool_calls"][0]["id"],
        "call.old:1"
    );

    let anthropic = serve(vec![Reply::ok(
        "text/event-stream",
        fixture("anthropic_tools.sse"),
        Chunking::Whole,
    )])
    .await;
    events(
        &AnthropicBackend::new(config(&anthropic)).unwrap(),
        request(true),
    )
    .await
    .unwrap();
    let sent = &anthropic.requests()[0];
    assert!(sent.head.starts_with("post /v1/messages "), "{}", sent.head);
    assert!(
        sent.head.contains("x-api-key: test-key")
            && sent.head.contains("anthropic-version: 2023-06-01")
    );
    assert_eq!(sent.body["system"][0]["text"], "Be brief.");
    let tool_use_id = sent.body["messages"][1]["content"][0]["id"]
        .as_str()
        .unwrap();
    assert_eq!(tool_use_id, "call_old_1");
    assert_eq!(
        sent.body["messages"][2]["content"][0]["tool_use_id"],
        tool_use_id
    );

    let ollama = serve(vec![Reply::ok(
        "application/x-ndjson",
        fixture("ollama_tools.ndjson"),
        Chunking::Whole,
    )])
    .await;
    events(&OllamaBackend::new(config(&ollama)).unwrap(), request(true))
        .await
        .unwrap();
    let sent = &ollama.requests()[0];
    assert!(sent.head.starts_with("post /api/chat "), "{}", sent.head);
    assert_eq!(
        sent.body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Oslo"})
    );
}

#[tokio::test]
async fn http_429_is_one_answer_with_its_status_message_and_wait() {
    // The client makes no retries of its own: whoever holds it (the gateway's replica pool)
    // retries, and reads how long the backend asked to be left alone.
    let mut limited = status(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#,
    );
    limited.headers.push(("retry-after".into(), "7".into()));
    let server = serve(vec![limited, openai_answer()]).await;
    let error = complete(&OpenAiBackend::new(config(&server)).unwrap(), request(true))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, BackendError::Http { status: 429, message, retry_after: Some(wait) }
            if message == "Rate limit reached" && *wait == Duration::from_secs(7)),
        "{error:?}"
    );
    assert_eq!(error.http_status(), 429);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_header_hook_runs_for_every_request_sent_a_reopened_one_included() {
    // The second request finds its pooled connection closed and goes again on a new one.
    let server = serve(vec![
        openai_answer().then_close_when_reused(),
        openai_answer(),
    ])
    .await;
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let mut config = config(&server);
    config.request_headers = Some(Arc::new(move |headers: &mut reqwest::header::HeaderMap| {
        let attempt = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        headers.insert("x-attempt", attempt.into());
    }));
    assert!(format!("{config:?}").contains("request_headers: Some(\"<hook>\")"));
    let backend = OpenAiBackend::new(config).unwrap();
    complete(&backend, request(true)).await.unwrap();
    complete(&backend, request(true)).await.unwrap();
    let heads: Vec<String> = server
        .requests()
        .into_iter()
        .map(|sent| sent.head)
        .collect();
    assert_eq!(heads.len(), 3);
    for (attempt, head) in heads.iter().enumerate() {
        assert!(
            head.contains(&format!("x-attempt: {}", attempt + 1)) && head.contains("x-extra: yes"),
            "{head}"
        );
    }
}

#[tokio::test]
async fn http_400_carries_the_providers_message_and_is_not_retried() {
    let server = serve(vec![status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.input_schema: Field required"}}"#,
    )])
    .await;
    let error = complete(
        &AnthropicBackend::new(config(&server)).unwrap(),
        request(true),
    )
    .await
    .unwrap_err();
    match &error {
        BackendError::Http {
            status: 400,
            message,
            ..
        } => assert_eq!(message, "tools.0.input_schema: Field required"),
        other => panic!("{other:?}"),
    }
    assert_eq!(error.http_status(), 400);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_mid_call_is_an_error_with_its_offset() {
    let body = fixture("openai_parallel.sse");
    let text = std::str::from_utf8(&body).unwrap();
    let cut = text.find("Zürich").unwrap() + 3;
    let server = serve(vec![Reply::ok(
        "text/event-stream",
        body[..cut].to_vec(),
        Chunking::PerEvent("\n\n"),
    )])
    .await;
    let error = complete(&OpenAiBackend::new(config(&server)).unwrap(), request(true))
        .await
        .unwrap_err();
    assert!(
        matches!(error, BackendError::StreamCut { offset, .. } if offset == cut),
        "{error}"
    );
    assert_eq!(error.http_status(), 502);

    // The connection dropping mid-body is a cut too, and the events before it still arrive.
    let mut dropped = Reply::ok(
        "text/event-stream",
        body[..cut].to_vec(),
        Chunking::PerEvent("\n\n"),
    );
    dropped.drop_connection = true;
    let server = serve(vec![dropped]).await;
    let mut stream = OpenAiBackend::new(config(&server))
        .unwrap()
        .chat(request(true))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(event) = stream.next().await {
        got.push(event);
    }
    assert!(matches!(got.first(), Some(Ok(StreamEvent::TextDelta(_)))));
    assert!(
        matches!(got.last(), Some(Err(BackendError::StreamCut { .. }))),
        "{got:?}"
    );
}

#[tokio::test]
async fn an_unreachable_backend_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = complete(
        &OpenAiBackend::new(BackendConfig::new(base)).unwrap(),
        request(true),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            error,
            BackendError::Connect {
                failure: ConnectionFailure::Unreachable,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().starts_with("cannot reach backend"),
        "{error}"
    );
    assert_eq!(error.http_status(), 502);
}

fn openai_answer() -> Reply {
    Reply::ok(
        "text/event-stream",
        fixture("openai_parallel.sse"),
        Chunking::PerEvent("\n\n"),
    )
}

#[tokio::test]
async fn a_pooled_connection_closed_under_the_next_request_is_retried_on_a_new_one() {
    // The first answer keeps its connection and the server drops it when the second request
    // arrives on it, as llama.cpp's server does after a stream.
    let server = serve(vec![
        openai_answer().then_close_when_reused(),
        openai_answer(),
    ])
    .await;
    let backend = OpenAiBackend::new(config(&server)).unwrap();
    let first = complete(&backend, request(true)).await.unwrap();
    let second = complete(&backend, request(true)).await.unwrap();
    assert_eq!(normalise(&first), normalise(&second));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the request the server dropped, then its retry"
    );
    assert_eq!(requests[1].body, requests[2].body);
}

#[tokio::test]
async fn a_backend_that_closes_without_answering_is_retried_once_and_reported_as_up() {
    // The pooled connection is dropped under the request, and the new one too; the third
    // answer is there to show that no further attempt is made.
    let server = serve(vec![
        openai_answer().then_close_when_reused(),
        Reply::hang_up(),
        openai_answer(),
    ])
    .await;
    let backend = OpenAiBackend::new(config(&server)).unwrap();
    complete(&backend, request(true)).await.unwrap();
    let error = complete(&backend, request(true)).await.unwrap_err();
    assert!(
        matches!(
            error,
            BackendError::Connect {
                failure: ConnectionFailure::ClosedBeforeAnswer,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("closed the connection before answering")
            && message.contains("connection closed before message completed"),
        "{message}"
    );
    assert_eq!(error.http_status(), 502);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn the_content_type_decides_between_a_stream_and_a_whole_answer() {
    type Make = fn(BackendConfig) -> Box<dyn Backend>;
    let cases: [(Make, &str, &str, &str); 3] = [
        (
            |config| Box::new(OpenAiBackend::new(config).unwrap()),
            "openai_parallel.sse",
            "text/event-stream",
            "openai_parallel.json",
        ),
        (
            |config| Box::new(AnthropicBackend::new(config).unwrap()),
            "anthropic_tools.sse",
            "text/event-stream; charset=utf-8",
            "anthropic_tools.json",
        ),
        (
            |config| Box::new(OllamaBackend::new(config).unwrap()),
            "ollama_tools.ndjson",
            "application/x-ndjson",
            "ollama_tools.json",
        ),
    ];
    for (make, stream_fixture, stream_type, json_fixture) in cases {
        // A server that ignores `stream: true`, then one that streams unasked.
        let server = serve(vec![
            Reply::ok(
                "application/json; charset=utf-8",
                fixture(json_fixture),
                Chunking::Bytes,
            ),
            Reply::ok(stream_type, fixture(stream_fixture), Chunking::Bytes),
        ])
        .await;
        let backend = make(config(&server));
        let whole_for_stream = complete(backend.as_ref(), request(true)).await.unwrap();
        let stream_for_whole = complete(backend.as_ref(), request(false)).await.unwrap();
        assert!(!whole_for_stream.tool_calls.is_empty(), "{json_fixture}");
        assert_eq!(
            normalise(&whole_for_stream),
            normalise(&stream_for_whole),
            "{json_fixture}"
        );
    }
}

#[tokio::test]
async fn a_whole_answer_past_the_limit_is_refused_by_name() {
    let server = serve(vec![Reply::ok(
        "application/json",
        fixture("openai_parallel.json"),
        Chunking::Bytes,
    )])
    .await;
    let mut config = config(&server);
    config.max_body_bytes = 100;
    let error = complete(&OpenAiBackend::new(config).unwrap(), request(false))
        .await
        .unwrap_err();
    assert!(matches!(error, BackendError::Decode(_)), "{error:?}");
    assert!(
        error.to_string().contains("longer than the 100 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn a_silent_stream_times_out_with_its_phase() {
    let mut stalled = Reply::ok(
        "text/event-stream",
        fixture("openai_parallel.sse"),
        Chunking::PerEvent("\n\n"),
    );
    // After the first event the rest never comes: the gate is never opened.
    stalled.gate = Some((1, Arc::new(tokio::sync::Notify::new())));
    let server = serve(vec![stalled]).await;
    let mut config = config(&server);
    config.idle_timeout = Duration::from_millis(200);
    let error = complete(&OpenAiBackend::new(config).unwrap(), request(true))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            BackendError::Timeout {
                phase: TimeoutPhase::Idle
            }
        ),
        "{error}"
    );
    assert_eq!(error.http_status(), 504);
}

#[tokio::test]
async fn ollama_refuses_required_tool_choice_before_sending() {
    let server = serve(vec![]).await;
    let mut wanted = request(true);
    wanted.tool_choice = Some(ToolChoice::Required);
    let error = complete(&OllamaBackend::new(config(&server)).unwrap(), wanted)
        .await
        .unwrap_err();
    assert!(matches!(error, BackendError::Unsupported(_)), "{error}");
    assert!(error.to_string().contains("tool_choice"), "{error}");
    assert_eq!(error.http_status(), 400);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_error_inside_the_stream_is_reported() {
    let body = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let server = serve(vec![Reply::ok(
        "text/event-stream",
        body.to_vec(),
        Chunking::Whole,
    )])
    .await;
    let error = complete(
        &AnthropicBackend::new(config(&server)).unwrap(),
        request(true),
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().contains("overloaded_error: Overloaded"),
        "{error}"
    );
}
