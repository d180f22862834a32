//! What makes a front-end one: its entry in the table of served APIs ([`FrontEnd`]), and
//! what every front-end's handlers share around the pipeline: the request's id, the span
//! layer of the routes a model answers, the headers that name the route and replica that
//! answered.

use axum::Router;
use axum::response::Response;

use crate::api::error::ApiError;
use crate::state::AppState;

/// One served API: its routes, the paths it owns, and how it writes an error.
#[derive(Debug)]
pub struct FrontEnd {
    pub routes: fn(&AppState) -> Router<AppState>,
    /// Whether a path is its own: the errors answered before any endpoint runs (401, 429)
    /// take its shape there.
    pub owns: fn(&str) -> bool,
    pub error: fn(ApiError) -> Response,
}

/// Spans for the routes a model or a character's tool answers, while spans are exported;
/// otherwise not even the middleware is in the way.
pub(super) fn traced(router: Router<AppState>) -> Router<AppState> {
    router.route_layer(tower::util::option_layer(
        crate::traces::enabled().then(|| axum::middleware::from_fn(crate::traces::request)),
    ))
}

/// The id the request-id middleware gave this request.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// `x-switchboard-route`: the route that answered (a fallback's, when it did), once one
/// has; and `x-switchboard-upstream`, its replica, where the operator asked for it.
pub(crate) fn upstream_headers(
    response: &mut axum::response::Response,
    upstreams: &switchboard_upstream::UpstreamRecord,
) {
    let Some((route, upstream)) = upstreams.answered() else {
        return;
    };
    let headers = response.headers_mut();
    let upstream = upstreams.show_upstream.then_some(upstream);
    for (name, value) in [
        ("x-switchboard-route", Some(route)),
        ("x-switchboard-upstream", upstream),
    ] {
        if let Some(Ok(value)) = value.map(axum::http::HeaderValue::from_str) {
            headers.insert(name, value);
        }
    }
}
