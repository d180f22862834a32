//! Every API's answer from one path ([`answer`]): the pipeline's outputs in, and out either
//! SSE bytes through the front-end's [`Renderer`] or one body through its [`WholeBody`],
//! the same outputs folded. An error before anything was sent is an ordinary error response
//! in the API's own shape; after that it is the API's error event and the stream ends. The
//! request's log line is written however the answer ends, a client that left included.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use futures::stream;
use tokio::sync::mpsc::error::TryRecvError;

use super::log::{RequestLog, Tally};
use crate::api::error::ApiError;
use switchboard_pipeline::{Answer, Output, Outputs, PipelineError, Started, collect_with};

/// How often a stream that is waiting on the gateway's tools says it is alive (every API's
/// renderer that can say so without breaking its clients: [`Renderer::keepalive`]).
pub const TOOL_KEEPALIVE: Duration = Duration::from_secs(1);

/// How one API writes a streamed answer.
pub trait Renderer: Send + 'static {
    /// Work before the first output is rendered, for a head that announces what is still
    /// being fetched (Messages' prompt count); nothing by default.
    fn before_start(&mut self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
    /// Headers the response carries besides the stream's own, known once the head is
    /// rendered.
    fn headers(&self, _headers: &mut HeaderMap) {}
    /// The stream's content type: server-sent events unless the API streams otherwise
    /// (newline-delimited JSON, one JSON array).
    fn content_type(&self) -> &'static str {
        "text/event-stream"
    }
    /// SSE text for one output; empty when it completes nothing yet.
    fn output(&mut self, output: Output) -> String;
    /// Work that must be done before the end of a complete answer is sent (keeping the
    /// answer, so a client that reads the end can rely on it); nothing by default.
    fn before_end(&mut self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
    /// The end of a complete answer.
    fn end(&mut self) -> String;
    /// An error after the stream began.
    fn error(&mut self, error: &ApiError) -> String;
    /// Sent when the answer has been silent this long, to keep the connection and the
    /// client's idle timer alive; `None` (the default) sends nothing.
    fn keepalive(&mut self) -> Option<(Duration, String)> {
        None
    }
}

/// How one API writes a whole answer: the outputs a stream is rendered from, folded.
pub trait WholeBody: Send {
    /// Sees each output in order, for a body that depends on their order as well as on the
    /// answer they add up to; nothing by default.
    fn take(&mut self, _output: &Output) {}
    /// The response for the complete answer.
    fn respond(self, answer: Answer) -> impl Future<Output = Response> + Send;
}

/// How the client asked for the answer.
pub enum Delivery<R, W> {
    Streamed(R),
    Whole(W),
}

/// Answers the request with `started`'s outputs, as the client asked; `error_response`
/// writes an error in the API's shape.
pub async fn answer<R: Renderer, W: WholeBody>(
    started: Started,
    delivery: Delivery<R, W>,
    error_response: fn(ApiError) -> Response,
    log: RequestLog,
) -> Response {
    let mut whole = match delivery {
        Delivery::Streamed(renderer) => {
            return stream(started, renderer, error_response, log).await;
        }
        Delivery::Whole(whole) => whole,
    };
    log.answering(&started, false);
    let mut response = match collect_with(started.outputs, |output| whole.take(output)).await {
        Ok(answer) => {
            log.finish(&started.label, StatusCode::OK, Tally::of(&answer), false);
            whole.respond(answer).await
        }
        Err(error) => log.fail(&started.label, error.into(), error_response),
    };
    super::front_end::upstream_headers(&mut response, &started.upstreams);
    response
}

/// Streams the answer. `error_response` renders an error that came before the first byte.
async fn stream(
    started: Started,
    mut renderer: impl Renderer,
    error_response: impl FnOnce(ApiError) -> Response,
    log: RequestLog,
) -> Response {
    log.answering(&started, true);
    let Started {
        label: route,
        mut outputs,
        upstreams,
        ..
    } = started;
    // Outputs that put nothing on the wire yet (problems held for the finish, events this
    // client did not ask for) do not commit the answer: an error after them is still an
    // ordinary error response.
    let mut tally = Tally::default();
    let mut started = false;
    let first = loop {
        // Once the answer has begun but put nothing on the wire yet (a part held for the
        // finish, a gateway tool run the client does not see), a silence past the renderer's
        // keep-alive commits the answer with it: a long tool run before the first visible
        // byte must not leave the client, or a proxy, without even the headers.
        let keepalive = if started { renderer.keepalive() } else { None };
        let next = match keepalive {
            Some((wait, text)) => match tokio::time::timeout(wait, outputs.recv()).await {
                Ok(next) => next,
                Err(_) => break Some(text),
            },
            None => outputs.recv().await,
        };
        match next {
            Some(Err(error)) => {
                let mut response = error_response(error.into());
                log.finish(&route, response.status(), tally, true);
                super::front_end::upstream_headers(&mut response, &upstreams);
                return response;
            }
            Some(Ok(output)) => {
                if !started {
                    started = true;
                    renderer.before_start().await;
                }
                tally.add(&output);
                let text = renderer.output(output);
                if !text.is_empty() {
                    break Some(text);
                }
            }
            None => break None,
        }
    };
    let mut response_headers = HeaderMap::new();
    renderer.headers(&mut response_headers);
    let content_type = renderer.content_type();
    let state = Streaming {
        first: first.is_none().then_some(None),
        pending: first,
        outputs,
        renderer,
        tally,
        log: Some((log, route)),
    };
    let body = stream::unfold(state, |mut state| async move {
        let bytes = state.next_bytes().await?;
        Some((Ok::<_, std::convert::Infallible>(bytes), state))
    });
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.extend(response_headers);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    super::front_end::upstream_headers(&mut response, &upstreams);
    response
}

struct Streaming<R> {
    /// `Some(None)` when the answer ended before the response was sent.
    first: Option<Option<Result<Output, PipelineError>>>,
    /// Text rendered before the response was sent, to send first.
    pending: Option<String>,
    outputs: Outputs,
    renderer: R,
    tally: Tally,
    /// Taken when the line is written.
    log: Option<(RequestLog, String)>,
}

impl<R: Renderer> Streaming<R> {
    /// The next piece of the body; `None` once the stream is over.
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            self.log.as_ref()?;
            if let Some(text) = self.pending.take() {
                return Some(Bytes::from(text));
            }
            let output = match self.first.take() {
                Some(output) => output,
                // An output already waiting needs no keep-alive timer: a busy stream arms
                // none.
                None => match self.outputs.try_recv() {
                    Ok(output) => Some(output),
                    Err(TryRecvError::Disconnected) => None,
                    Err(TryRecvError::Empty) => match self.renderer.keepalive() {
                        None => self.outputs.recv().await,
                        Some((wait, text)) => {
                            match tokio::time::timeout(wait, self.outputs.recv()).await {
                                Ok(output) => output,
                                Err(_) => return Some(Bytes::from(text)),
                            }
                        }
                    },
                },
            };
            let text = match output {
                None => {
                    self.renderer.before_end().await;
                    self.finish(StatusCode::OK);
                    self.renderer.end()
                }
                Some(Err(error)) => {
                    let error = ApiError::from(error);
                    self.finish(error.status);
                    self.renderer.error(&error)
                }
                Some(Ok(output)) => {
                    self.tally.add(&output);
                    self.renderer.output(output)
                }
            };
            if !text.is_empty() {
                return Some(Bytes::from(text));
            }
        }
    }

    fn finish(&mut self, status: StatusCode) {
        if let Some((log, route)) = self.log.take() {
            log.finish(&route, status, std::mem::take(&mut self.tally), true);
        }
    }
}

impl<R> Drop for Streaming<R> {
    /// A stream dropped before its end: the client went away.
    fn drop(&mut self) {
        if let Some((log, route)) = self.log.take() {
            log.client_closed(&route, std::mem::take(&mut self.tally));
        }
    }
}
