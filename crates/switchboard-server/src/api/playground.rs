//! The browser playground at `GET /`: plain JavaScript modules and CSS embedded in the
//! binary (no build step, nothing fetched from elsewhere), served with a Content-Security-
//! Policy that allows only this origin. The page talks to the gateway through the public
//! APIs only (`/v1/characters`, `/v1/models`, `/v1/chat/completions`), so it costs nothing
//! while nobody has it open.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::api::error::ApiError;

/// Everything the page loads from this origin, and nothing else: scripts, styles, images
/// and connections only to the gateway itself; no inline code, no framing.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The assets under `/playground/`: name, content type, bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../assets/index.html"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/style.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/api.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/dom.js"),
    ),
    (
        "chat.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/chat.js"),
    ),
    (
        "schema-form.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/schema-form.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../assets/favicon.svg"),
    ),
];

/// The playground's page and assets.
pub const FRONT_END: super::front_end::FrontEnd = super::front_end::FrontEnd {
    routes: |_| {
        Router::new()
            .route("/", get(index))
            .route("/playground/{name}", get(file))
    },
    owns: |path| path == "/" || path.starts_with("/playground/"),
    error: IntoResponse::into_response,
};

/// `GET /`: the page, to a browser (or a client that names no type); Ollama's API clients
/// are told what Ollama tells them there.
pub async fn index(headers: HeaderMap) -> Response {
    if super::ollama::wants_ollama(&headers) {
        return super::ollama::RUNNING.into_response();
    }
    asset("index.html")
}

/// `GET /playground/{name}`: one of its assets.
pub async fn file(Path(name): Path<String>) -> Response {
    asset(&name)
}

fn asset(name: &str) -> Response {
    let Some((_, content_type, body)) = ASSETS.iter().find(|(known, _, _)| *known == name) else {
        let error =
            ApiError::invalid_request(format!("the playground has no file named \"{name}\""), None)
                .with_code("not_found");
        return ApiError {
            status: StatusCode::NOT_FOUND,
            ..error
        }
        .into_response();
    };
    let mut response = (*body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // Revalidated each time, so a new binary's page is never mixed with an old one's.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
