//! The APIs the gateway serves, one front-end per folder. Each parses its own request
//! format into the pipeline's [`GatewayRequest`](crate::pipeline::GatewayRequest), and
//! renders the pipeline's outputs and errors in its own format, whole or streamed. What
//! every front-end needs the same way lives beside them: reading the body, the SSE driver,
//! the request log.

mod body;
pub mod caller;
pub mod characters;
pub mod chat;
mod error_shape;
mod fields;
pub mod gate;
pub(crate) mod log;
pub mod messages;
pub mod ops;
pub mod playground;
pub mod responses;
mod sse;

/// The id the request-id middleware gave this request.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// `x-switchboard-route`: the route that answered (a fallback's, when it did), once one
/// has; and `x-switchboard-upstream`, its replica, where the operator asked for it.
pub(crate) fn upstream_headers(
    response: &mut axum::response::Response,
    trail: &crate::upstream::Trail,
) {
    let Some((route, upstream)) = trail.answered() else {
        return;
    };
    let headers = response.headers_mut();
    let upstream = trail.show_upstream.then_some(upstream);
    for (name, value) in [
        ("x-switchboard-route", Some(route)),
        ("x-switchboard-upstream", upstream),
    ] {
        if let Some(Ok(value)) = value.map(axum::http::HeaderValue::from_str) {
            headers.insert(name, value);
        }
    }
}
