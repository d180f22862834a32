//! The HTTP client under rmcp's Streamable HTTP transport: reqwest, plus one correction.
//!
//! rmcp reopens a session when the server answers its id with a 404, as the specification
//! asks. The reference servers (and others on the TypeScript SDK's examples) answer an id
//! they do not know, after a restart, with a 400 whose JSON-RPC error has no `id`
//! (-32000 "Bad Request: No valid session ID provided"). That error cannot be matched to
//! the request, so the call would wait out its whole deadline. Here such an answer to a
//! request in a session is reported to rmcp as the expired session it is, so rmcp reopens
//! the session and retries the request once, as for a 404.
//!
//! And every failed answer is named here, with the server's credentials cut out of it,
//! before rmcp logs it or a call or the health page shows it: rmcp's errors say a body
//! could not be parsed, with the body's head (which may quote the `Authorization` sent),
//! and calls that meet them read only `Transport closed`.
//!
//! A tool listing that rmcp could not read for nesting too deep (one tool's schema past 127
//! levels) is asked for once more and read here, its too-deep tools left out with a warning
//! (see `deep`), so one tool costs that tool and not the server its listing. rmcp reads the
//! body inside its own client, so it cannot be cut before rmcp sees it; a listing is safe to
//! ask for twice. A listing sent as an event stream is not covered and still fails.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use switchboard_wire::secrets::Secrets;

use crate::deep::{self, MAX_NESTING};
use crate::fault::Fault;

/// How rmcp's text about a body it could not parse begins.
const UNPARSED: &str = "could not parse JSON response as ServerJsonRpcMessage: ";
/// rmcp's session header.
const SESSION_HEADER: &str = "Mcp-Session-Id";

#[derive(Debug, Clone)]
pub(crate) struct SessionAwareClient {
    http: reqwest::Client,
    /// Why the last answer could not be used; cleared by a good one.
    fault: Arc<Fault>,
    secrets: Secrets,
    /// The server's name, for the warnings.
    server: Arc<str>,
}

impl SessionAwareClient {
    /// `resolved`: the addresses the URL's host was checked at, which every connection then
    /// goes to (see `UpstreamConfig::resolved`); empty, the host is looked up as usual.
    pub fn new(
        server: &str,
        url: &str,
        resolved: &[SocketAddr],
        fault: Arc<Fault>,
        secrets: Secrets,
    ) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            // Redirects would replay the configured headers (credentials) to wherever they
            // point; an upstream's URL is configured, so it is not followed elsewhere.
            .redirect(reqwest::redirect::Policy::none());
        if !resolved.is_empty()
            && let Some(host) = reqwest::Url::parse(url)
                .ok()
                .and_then(|url| url.domain().map(str::to_owned))
        {
            // The port comes from the URL; reqwest ignores the addresses' own.
            builder = builder.resolve_to_addrs(&host, resolved);
        }
        builder
            .build()
            .map(|http| Self {
                http,
                fault,
                secrets,
                server: server.into(),
            })
            .map_err(|error| format!("the HTTP client could not be built: {error}"))
    }

    /// An answer that came and could not be used, named plainly with the server's
    /// credentials cut, and kept for the call that meets it; other errors (a connection
    /// lost, an expired session) pass as they are, to be recovered from.
    fn named(
        &self,
        error: StreamableHttpError<reqwest::Error>,
    ) -> StreamableHttpError<reqwest::Error> {
        match error {
            StreamableHttpError::UnexpectedServerResponse(text) => {
                let why = self.secrets.text(&unusable_answer(&text));
                self.fault.seen(why.clone());
                StreamableHttpError::UnexpectedServerResponse(Cow::Owned(why))
            }
            StreamableHttpError::ResponseBodyTooLarge { max_size } => {
                self.fault.seen(format!(
                    "it sent a message past the bound of {max_size} bytes"
                ));
                StreamableHttpError::ResponseBodyTooLarge { max_size }
            }
            other => other,
        }
    }

    /// `message`, a tool listing whose answer nested too deep for rmcp, sent again and its
    /// answer read here without the tools that nest too deep; `None` when the answer is not
    /// such a listing (the caller fails as before).
    async fn listing_without_deep_tools(
        &self,
        uri: &str,
        message: &ClientJsonRpcMessage,
        session_id: Option<&Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_body: usize,
    ) -> Option<StreamableHttpPostResponse> {
        let mut request = self
            .http
            .post(uri)
            .header(http::header::ACCEPT, "text/event-stream, application/json")
            .json(message);
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header(SESSION_HEADER, session_id.as_ref());
        }
        let mut response = request.send().await.ok()?;
        let json = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|kind| {
                kind.as_bytes()
                    .to_ascii_lowercase()
                    .starts_with(b"application/json")
            });
        if !response.status().is_success() || !json {
            return None;
        }
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.ok()? {
            if body.len() + chunk.len() > max_body {
                return None;
            }
            body.extend_from_slice(&chunk);
        }
        let (kept, dropped) = deep::drop_deep_tools(&body, MAX_NESTING)?;
        let parsed = serde_json::from_slice::<ServerJsonRpcMessage>(&kept).ok()?;
        for tool in &dropped {
            tool.warn(&self.server);
        }
        Some(StreamableHttpPostResponse::Json(parsed, session))
    }
}

/// A tool listing (`tools/list`), which may be asked for again.
fn is_listing(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::ListToolsRequest(_)))
}

/// rmcp's text about an answer that nests past what serde_json reads.
fn nested_too_deep(text: &str) -> bool {
    text.strip_prefix(UNPARSED)
        .is_some_and(|error| error.starts_with("recursion limit exceeded"))
}

/// What rmcp's text about an answer it could not use means: JSON that does not parse (at
/// which byte), nests too deep, or is not a JSON-RPC message; other texts (`HTTP 401:
/// <the body's head>`) as they are.
fn unusable_answer(text: &str) -> String {
    let Some(error) = text.strip_prefix(UNPARSED) else {
        return format!("it answered {text}");
    };
    // serde_json's text: `<what> at line <L> column <C>`, then rmcp's `: <the body's head>`.
    let (what, column) = match error.split_once(" at line ") {
        Some((what, place)) => {
            let column = place
                .split_once(" column ")
                .map(|(_, rest)| {
                    rest.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap_or("")
                })
                .unwrap_or("");
            (what, column)
        }
        None => (error, ""),
    };
    if what == "recursion limit exceeded" {
        return "it answered with a message nested past the 127 levels that can be read".to_owned();
    }
    // serde's own words for JSON of the wrong shape; anything else is JSON's syntax.
    let shape = [
        "data did not match",
        "missing field",
        "unknown field",
        "unknown variant",
        "invalid type",
        "invalid value",
        "invalid length",
    ];
    if shape.iter().any(|prefix| what.starts_with(prefix)) {
        format!("it answered with JSON that is not a JSON-RPC message ({what})")
    } else {
        format!("it answered with invalid JSON at byte {column} ({what})")
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
        let again = is_listing(&sent).then(|| (auth_header.clone(), custom_headers.clone()));
        let response = match self
            .http
            .post_message_with_response_limits(
                uri.clone(),
                message,
                session_id.clone(),
                auth_header,
                custom_headers,
                limits,
            )
            .await
        {
            Err(StreamableHttpError::UnexpectedServerResponse(text))
                if again.is_some() && nested_too_deep(&text) =>
            {
                let (auth_header, custom_headers) = again.unwrap_or_default();
                self.listing_without_deep_tools(
                    &uri,
                    &sent,
                    session_id.as_ref(),
                    auth_header,
                    custom_headers,
                    limits.max_json_response_size,
                )
                .await
                .ok_or_else(|| self.named(StreamableHttpError::UnexpectedServerResponse(text)))?
            }
            other => other.map_err(|error| self.named(error))?,
        };
        if lost_session(&sent, session_id.as_ref(), &response) {
            return Err(StreamableHttpError::SessionExpired);
        }
        self.fault.clear();
        Ok(response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.http
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
        self.http
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
        self.http
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
