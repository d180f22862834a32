//! `mcp_allowed_urls`: the URLs a request may name an MCP server by. A pattern is a URL whose
//! parts may hold `*`, and it is matched part by part against the URL as parsed (the way the
//! client that connects reads it), never as one string: a `*` that crossed `/`, `?`, `@` or
//! `:` would let `http://*.allowed.test/*` reach `http://127.0.0.1:8080/x.allowed.test/mcp`.
//!
//! - scheme: exactly;
//! - host: by labels, `*` within one label (`*.allowed.test` is `a.allowed.test`, not
//!   `a.b.allowed.test` nor `127.0.0.1:1/x.allowed.test`); a host without `*` exactly, as
//!   the URL parser spells it (`127.1` is `127.0.0.1`);
//! - port: a number, or `*` for any; absent, the scheme's own (80, 443);
//! - path: `*` within one segment, `**` across segments; absent, `/` alone.
//!
//! A URL with a user name or password is refused (its credentials belong in headers), and so
//! is one whose host resolves to a loopback, private, link-local or otherwise internal
//! address, unless the pattern that allows it names its host without `*`: a name anyone can
//! point at `127.0.0.1` must not open the gateway's own network. The addresses checked are
//! the ones connected to ([`Allowed::resolved`]): the name is not looked up a second time,
//! where it could answer otherwise (DNS rebinding).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use url::Url;

/// One `mcp_allowed_urls` entry, parsed.
#[derive(Debug, Clone)]
pub struct UrlPattern {
    scheme: String,
    host: HostPattern,
    /// `None`: any port.
    port: Option<u16>,
    path: GlobMatcher,
}

#[derive(Debug, Clone)]
enum HostPattern {
    /// Named without `*`: the operator chose this very host, internal or not.
    Literal(String),
    /// Labels as path segments (`.` read as `/`), so that `*` stays within one.
    Glob(GlobMatcher),
}

/// Why an `mcp_allowed_urls` entry is not a pattern.
#[derive(Debug, thiserror::Error)]
pub enum UrlPatternError {
    #[error("start it with http:// or https://")]
    Scheme,
    #[error("leave out the user name and password: a request's credentials go in its headers")]
    Userinfo,
    #[error("name a host")]
    Host,
    #[error("an IPv6 host is matched exactly; leave out `*`")]
    Ipv6Glob,
    #[error("`**` may stand only in the path; a host's `*` matches within one label")]
    HostDoubleStar,
    #[error("the port must be a number or `*`")]
    Port,
    #[error("patterns match scheme, host, port and path; leave out `?` and `#`")]
    QueryOrFragment,
    #[error("the host is not one a URL can name: {0}")]
    BadHost(url::ParseError),
    #[error(transparent)]
    Glob(#[from] globset::Error),
}

/// Why a request's URL is refused.
#[derive(Debug, thiserror::Error)]
pub enum UrlRefused {
    #[error("the MCP server URL is not a URL: {0}")]
    Unparsable(url::ParseError),
    #[error(
        "the MCP server URL may not carry a user name or password (user:password@); send credentials as headers or `authorization`"
    )]
    Userinfo,
    #[error(
        "the MCP server URL {0} is not one this gateway runs: name one of its MCP servers, or ask its operator to allow the URL (mcp_allowed_urls)"
    )]
    NotAllowed(String),
    #[error(
        "the MCP server URL {url}: its host {why}; the gateway connects to such addresses only where its operator names the host itself in mcp_allowed_urls"
    )]
    Internal { url: String, why: String },
}

impl UrlPattern {
    pub fn parse(pattern: &str) -> Result<Self, UrlPatternError> {
        let (scheme, rest) = pattern.split_once("://").ok_or(UrlPatternError::Scheme)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(UrlPatternError::Scheme);
        }
        if rest.contains(['?', '#']) {
            return Err(UrlPatternError::QueryOrFragment);
        }
        let (authority, path) = rest
            .find('/')
            .map_or((rest, "/"), |slash| rest.split_at(slash));
        if authority.contains('@') {
            return Err(UrlPatternError::Userinfo);
        }
        let (host, port) = split_port(authority);
        let port = match port {
            None => Some(if scheme == "https" { 443 } else { 80 }),
            Some("*") => None,
            Some(port) => Some(port.parse().map_err(|_| UrlPatternError::Port)?),
        };
        if host.is_empty() {
            return Err(UrlPatternError::Host);
        }
        let host = if !host.contains('*') {
            // As the URL parser spells it, which is how the request's host is compared.
            let parsed =
                Url::parse(&format!("{scheme}://{host}/")).map_err(UrlPatternError::BadHost)?;
            HostPattern::Literal(parsed.host_str().ok_or(UrlPatternError::Host)?.to_owned())
        } else if host.starts_with('[') {
            return Err(UrlPatternError::Ipv6Glob);
        } else if host.contains("**") {
            return Err(UrlPatternError::HostDoubleStar);
        } else {
            HostPattern::Glob(segments(&host.to_ascii_lowercase().replace('.', "/"))?)
        };
        Ok(Self {
            scheme,
            host,
            port,
            path: segments(path)?,
        })
    }

    /// Whether `url` (parsed) is one this pattern allows, by its scheme, host, port and
    /// path.
    pub fn matches(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let host_matches = match &self.host {
            HostPattern::Literal(literal) => literal == host,
            HostPattern::Glob(glob) => glob.is_match(host.replace('.', "/")),
        };
        url.scheme() == self.scheme
            && host_matches
            && self
                .port
                .is_none_or(|port| url.port_or_known_default() == Some(port))
            && self.path.is_match(url.path())
    }

    /// Whether the pattern names its host itself, without `*`.
    fn names_host(&self) -> bool {
        matches!(self.host, HostPattern::Literal(_))
    }
}

/// `authority` split at the port's `:`, minding an IPv6 host's brackets.
fn split_port(authority: &str) -> (&str, Option<&str>) {
    let host_end = if authority.starts_with('[') {
        authority.find(']').map_or(authority.len(), |end| end + 1)
    } else {
        authority.find(':').unwrap_or(authority.len())
    };
    let (host, port) = authority.split_at(host_end);
    (host, port.strip_prefix(':'))
}

/// A glob whose `*` stays within one `/`-separated segment (`**` crosses them).
fn segments(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher())
}

/// A URL a request may name an MCP server by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Parsed and spelled anew, so the client reads exactly what the patterns matched.
    pub url: Url,
    /// The addresses its host was checked at, which the connection must go to; empty where
    /// the allowing pattern names the host itself (the operator chose it, and it is looked
    /// up as any configured server is).
    pub resolved: Vec<SocketAddr>,
}

/// The URL a request names, if `patterns` allow it: parsed, without credentials, matched
/// part by part, and its host's addresses checked unless the allowing pattern names the host
/// itself. `resolve_wait` bounds the name lookup.
pub async fn check(
    url: &str,
    patterns: &[String],
    resolve_wait: Duration,
) -> Result<Allowed, UrlRefused> {
    let parsed = Url::parse(url).map_err(UrlRefused::Unparsable)?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlRefused::Userinfo);
    }
    let allowing: Vec<UrlPattern> = patterns
        .iter()
        // Each was checked when the configuration was loaded.
        .filter_map(|pattern| UrlPattern::parse(pattern).ok())
        .filter(|pattern| pattern.matches(&parsed))
        .collect();
    if allowing.is_empty() {
        return Err(UrlRefused::NotAllowed(url.to_owned()));
    }
    if allowing.iter().any(UrlPattern::names_host) {
        return Ok(Allowed {
            url: parsed,
            resolved: Vec::new(),
        });
    }
    let internal = |why: String| UrlRefused::Internal {
        url: url.to_owned(),
        why,
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(UrlRefused::NotAllowed(url.to_owned()));
    };
    // `[::1]` as the URL spells it; the resolver takes the address without brackets.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses = tokio::time::timeout(resolve_wait, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| internal("did not resolve in time".to_owned()))?
        .map_err(|_| internal("does not resolve".to_owned()))?
        .collect::<Vec<_>>();
    for address in &addresses {
        if let Some(kind) = internal_kind(address.ip()) {
            return Err(internal(format!("resolves to a {kind} address")));
        }
    }
    Ok(Allowed {
        url: parsed,
        resolved: addresses,
    })
}

/// What kind of address `ip` is when it is not a public one.
fn internal_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => internal_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(ip) => internal_v4(ip),
            None => internal_v6(ip),
        },
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() || (first == 100 && (64..128).contains(&second)) {
        // 100.64.0.0/10 is carrier-grade NAT: as internal as 10/8.
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || first == 0 {
        Some("non-unicast")
    } else {
        None
    }
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if ip.is_unspecified() || ip.is_multicast() {
        Some("non-unicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, url: &str) -> bool {
        UrlPattern::parse(pattern)
            .unwrap()
            .matches(&Url::parse(url).unwrap())
    }

    #[test]
    fn each_part_is_matched_on_its_own() {
        assert!(allows(
            "http://*.allowed.test/*",
            "http://a.allowed.test/mcp"
        ));
        assert!(!allows(
            "http://*.allowed.test/*",
            "http://127.0.0.1:9/x.allowed.test/mcp"
        ));
        assert!(!allows(
            "http://*.allowed.test/*",
            "http://a.b.allowed.test/mcp"
        ));
        assert!(!allows(
            "http://*.allowed.test/*",
            "http://a.allowed.test/mcp/x"
        ));
        assert!(allows(
            "http://*.allowed.test/**",
            "http://a.allowed.test/mcp/x"
        ));
        assert!(!allows(
            "http://*.allowed.test/*",
            "https://a.allowed.test/mcp"
        ));
        assert!(!allows(
            "http://*.allowed.test/*",
            "http://a.allowed.test:81/mcp"
        ));
        assert!(allows(
            "http://tools.allowed.test:*/*",
            "http://tools.allowed.test:81/mcp"
        ));
        assert!(!allows(
            "http://tools.allowed.test:*/*",
            "http://tools.allowed.test:x@127.0.0.1:9/mcp"
        ));
        assert!(allows("http://127.0.0.1:*/*", "http://127.1:9/mcp"));
        assert!(allows("http://[::1]:*/mcp", "http://[::1]:9/mcp"));
        assert!(allows(
            "HTTPS://Tools.Example.com",
            "https://tools.example.com"
        ));
    }

    #[test]
    fn bad_patterns_say_why() {
        for pattern in [
            "ftp://x/*",
            "http://u:p@x/*",
            "http://x:port/*",
            "http://x/*?q",
            "http://**.x/*",
            "http:///mcp",
            "http://[*::1]/mcp",
        ] {
            assert!(UrlPattern::parse(pattern).is_err(), "{pattern}");
        }
    }

    #[tokio::test]
    async fn credentials_and_internal_addresses_are_refused() {
        let wait = Duration::from_secs(5);
        let literal = ["http://127.0.0.1:*/*".to_owned()];
        assert!(
            check("http://127.0.0.1:9/mcp", &literal, wait)
                .await
                .is_ok()
        );
        assert!(matches!(
            check("http://a:b@127.0.0.1:9/mcp", &literal, wait).await,
            Err(UrlRefused::Userinfo)
        ));
        let wild = [
            "http://*.0.0.1:*/*".to_owned(),
            "http://local*:*/*".to_owned(),
        ];
        for url in ["http://127.0.0.1:9/mcp", "http://localhost:9/mcp"] {
            assert!(
                matches!(
                    check(url, &wild, wait).await,
                    Err(UrlRefused::Internal { .. })
                ),
                "{url}"
            );
        }
        // What was checked is what is connected to: the addresses travel with the URL.
        let public = ["http://*.*.*.*:*/*".to_owned()];
        let allowed = check("http://93.184.216.34:9/mcp", &public, wait)
            .await
            .unwrap();
        assert_eq!(allowed.resolved, [([93, 184, 216, 34], 9).into()]);
        let named = check("http://127.0.0.1:9/mcp", &literal, wait)
            .await
            .unwrap();
        assert!(named.resolved.is_empty(), "{named:?}");
        assert_eq!(
            internal_kind("169.254.169.254".parse().unwrap()),
            Some("link-local")
        );
        assert_eq!(
            internal_kind("::ffff:10.0.0.1".parse().unwrap()),
            Some("private")
        );
        assert_eq!(internal_kind("fd00::1".parse().unwrap()), Some("private"));
        assert_eq!(internal_kind("93.184.216.34".parse().unwrap()), None);
    }
}
