//! The HTTP client under rmcp's Streamable HTTP transport: reqwest, plus one correction.
//!
//! rmcp reopens a session when the server answers its id with a 404, as the specification
//! asks. The reference servers (and others on the TypeScript SDK's examples) answer an id
//! they do not know, after a restart, with a 400 whose JSON-RPC error has no `id`
//! (-32000 "Bad Request: No valid session ID provided"). That error cannot be matched to
//! the request, so the call would wait out its whole deadline. Here such an answer to a
//! request in a session is reported to rmcp as the expired session it is, so rmcp reopens
//! the session and retries the request once, as for a 404.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

#[derive(Debug, Clone)]
pub(crate) struct SessionAwareClient(pub reqwest::Client);

impl SessionAwareClient {
    pub fn new() -> Result<Self, String> {
        reqwest::Client::builder()
            // Redirects would replay the configured headers (credentials) to wherever they
            // point; an upstream's URL is configured, so it is not followed elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(Self)
            .map_err(|error| format!("the HTTP client could not be built: {error}"))
    }
}

/// An id-less error about the session, in answer to a request made in one.
fn lost_session(
    message: &ClientJsonRpcMessage,
    session_id: Option<&Arc<str>>,
    response: &StreamableHttpPostResponse,
) -> bool {
    let StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _) = response else {
        return false;
    };
    session_id.is_some()
        && matches!(message, ClientJsonRpcMessage::Request(_))
        && error.id.is_none()
        && error.error.message.to_ascii_lowercase().contains("session")
}

impl StreamableHttpClient for SessionAwareClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let sent = message.clone();
        let response = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id.clone(),
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        if lost_session(&sent, session_id.as_ref(), &response) {
            return Err(StreamableHttpError::SessionExpired);
        }
        Ok(response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
