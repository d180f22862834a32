//! Keeping a backend's credentials out of everything the gateway shows. A route's URL may
//! carry a user and password (sent as Basic auth, so operators use it), and backends quote
//! the credential they were sent in their error bodies (`invalid key Bearer sk-…`). So a
//! URL is shown without its userinfo ([`shown_url`]), and every error a backend client
//! returns has the backend's own credentials cut out of its text ([`Redactor`]) before any
//! caller, log line or span can see it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::{BackendConfig, BackendError};
use switchboard_wire::secrets::Secrets;
use switchboard_wire::{DecodeError, DecodeErrorKind};

/// The URL as it may be shown (headers, `/healthz`, metric labels, logs): without a user
/// or password. A URL without userinfo is returned exactly as written.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            // Both setters fail only for URLs that cannot have userinfo, which these have.
            let _ = parsed.set_password(None);
            let _ = parsed.set_username("");
            let mut shown = String::from(parsed);
            // The parser adds a root path; the operator's spelling had none.
            if !url.trim_end().ends_with('/') && parsed_root_only(&shown) {
                shown.pop();
            }
            shown
        }
        Ok(_) => url.to_owned(),
        // Not a URL the client could use either; still, never show what may be a password.
        Err(_) => match url.split_once("://") {
            Some((scheme, rest)) if rest.contains('@') => {
                let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                format!("{scheme}://{host}")
            }
            _ => url.to_owned(),
        },
    }
}

/// Whether the URL's path is just the root the parser added.
fn parsed_root_only(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(_, rest)| rest.find('/') == Some(rest.len() - 1))
}

/// Cuts one backend's credentials out of text: its API key, its URL's password (and user,
/// when the user alone is the credential), their Basic-auth encoding, and the values of its
/// extra headers.
#[derive(Default)]
pub(crate) struct Redactor {
    secrets: Secrets,
    /// The base URL as it may be shown, for errors that name where the request went.
    shown_base: String,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets)
            .field("shown_base", &self.shown_base)
            .finish()
    }
}

impl Redactor {
    pub(crate) fn new(config: &BackendConfig) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        if let Some(key) = &config.api_key {
            secrets.push(key.clone());
        }
        if let Ok(url) = reqwest::Url::parse(&config.base_url) {
            let user = decoded(url.username());
            match url.password().map(decoded) {
                Some(password) => {
                    secrets.push(STANDARD.encode(format!("{user}:{password}")));
                    secrets.push(password);
                    if let Some(raw) = url.password() {
                        secrets.push(raw.to_owned());
                    }
                }
                None if !user.is_empty() => {
                    secrets.push(STANDARD.encode(format!("{user}:")));
                    secrets.push(user);
                    secrets.push(url.username().to_owned());
                }
                None => {}
            }
        }
        secrets.extend(config.extra_headers.iter().map(|(_, value)| value.clone()));
        Self {
            secrets: Secrets::new(secrets),
            shown_base: shown_url(&config.base_url),
        }
    }

    /// The base URL as it may be shown.
    pub(crate) fn shown_base(&self) -> &str {
        &self.shown_base
    }

    /// `text` with every credential replaced.
    pub(crate) fn text(&self, text: &str) -> String {
        self.secrets.text(text)
    }

    /// The error with every text it carries from the backend, or about the backend's URL,
    /// cut of credentials.
    pub(crate) fn error(&self, error: BackendError) -> BackendError {
        match error {
            BackendError::Http {
                status,
                message,
                retry_after,
            } => BackendError::Http {
                status,
                message: self.text(&message),
                retry_after,
            },
            BackendError::Connect {
                url,
                failure,
                detail,
            } => BackendError::Connect {
                url: self.text(&shown_url(&url)),
                failure,
                detail: self.text(&detail),
            },
            BackendError::StreamCut { offset, detail } => BackendError::StreamCut {
                offset,
                detail: self.text(&detail),
            },
            BackendError::Decode(DecodeError { offset, kind }) => {
                let kind = match kind {
                    DecodeErrorKind::Backend(text) => DecodeErrorKind::Backend(self.text(&text)),
                    DecodeErrorKind::Protocol(text) => DecodeErrorKind::Protocol(self.text(&text)),
                    DecodeErrorKind::Json(text) => DecodeErrorKind::Json(self.text(&text)),
                    other => other,
                };
                BackendError::Decode(DecodeError { offset, kind })
            }
            other => other,
        }
    }
}

/// A percent-encoded URL part as the server receives it in the Basic-auth header.
fn decoded(part: &str) -> String {
    percent_encoding::percent_decode_str(part)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_userinfo_and_otherwise_as_written() {
        assert_eq!(
            shown_url("http://user:PASS@10.0.0.5:8000/v1"),
            "http://10.0.0.5:8000/v1"
        );
        assert_eq!(shown_url("https://TOKEN@host"), "https://host");
        assert_eq!(shown_url("https://host:8443/"), "https://host:8443/");
        assert_eq!(
            shown_url("http://127.0.0.1:8000/v1/"),
            "http://127.0.0.1:8000/v1/"
        );
        assert_eq!(shown_url("http://u:p@[bad"), "http://[bad");
    }

    #[test]
    fn credentials_are_cut_from_backend_text() {
        let mut config = BackendConfig::new("http://admin:s%40cret-pw@127.0.0.1:9/v1");
        config.api_key = Some("sk-backend-123456".into());
        config.extra_headers = vec![("x-team-token".into(), "team-token-789".into())];
        let redactor = Redactor::new(&config);
        let basic = STANDARD.encode("admin:s@cret-pw");
        let text = redactor.text(&format!(
            "bad key Bearer sk-backend-123456 from admin with s@cret-pw or s%40cret-pw, Basic {basic}, team-token-789"
        ));
        assert_eq!(
            text,
            "bad key Bearer [redacted] from admin with [redacted] or [redacted], Basic [redacted], [redacted]"
        );
        assert_eq!(redactor.shown_base(), "http://127.0.0.1:9/v1");
        let error = redactor.error(BackendError::Http {
            status: 400,
            message: "got sk-backend-123456".into(),
            retry_after: None,
        });
        assert_eq!(
            error.to_string(),
            "backend answered HTTP 400: got [redacted]"
        );
        let shown = format!("{config:?}");
        for secret in ["cret-pw", "sk-backend", "team-token-789"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
