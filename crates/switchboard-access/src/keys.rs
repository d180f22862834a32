//! Client keys: the `[[key]]` entries of `switchboard.toml`, the keyring built from them,
//! and finding which key a request presents. Only SHA-256 digests are kept: a key read from
//! the environment is hashed at start-up and the key itself is dropped, so no log line,
//! metric or error can contain it. Presented keys are hashed and compared with every digest
//! in constant time.

use std::sync::{Arc, OnceLock};

use globset::{Glob, GlobSet, GlobSetBuilder};
use http::HeaderMap;
use rand::TryRngCore;
use rand::rngs::OsRng;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::limits::Limits;

/// What a new key starts with, so it is recognisable in a leak scan.
pub const KEY_PREFIX: &str = "sk-sb-";
/// Random letters and digits after the prefix (238 bits).
const KEY_RANDOM_CHARS: usize = 40;
const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// One `[[key]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    /// What logs and metrics call the key; letters, digits, `-`, `_` and `.`.
    pub name: String,
    /// The key's SHA-256, hex (`switchboard key new` prints it).
    #[serde(default)]
    pub sha256: Option<String>,
    /// An environment variable holding the key itself.
    #[serde(default)]
    pub key_env: Option<String>,
    /// Glob patterns over route names and `character/<name>`; all when absent.
    #[serde(default)]
    pub routes: Option<Vec<String>>,
    /// Glob patterns over the tool names `/mcp` serves (`fs_*`, `narrator_*`): the tools
    /// the key may list and call, on every MCP endpoint and inside requests; all when
    /// absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub requests_per_minute: Option<u64>,
    #[serde(default)]
    pub tokens_per_minute: Option<u64>,
    #[serde(default)]
    pub max_concurrent: Option<u32>,
}

/// Where a secret comes from: its digest in the file, or the secret in the environment
/// (`metrics_key = { sha256 = "…" }` or `{ key_env = "…" }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub key_env: Option<String>,
}

/// A configured key, ready to check requests against.
#[derive(Debug)]
pub struct Key {
    pub name: String,
    digest: [u8; 32],
    /// `None`: every route and character.
    routes: Option<GlobSet>,
    /// `None`: every tool.
    tools: Option<GlobSet>,
    pub limits: Limits,
    /// This key's place in the keyring (and in the in-process counters).
    pub slot: usize,
    /// Its metrics' handles, made on first use: looking a labelled metric up by name on
    /// every request would cost more than the rest of the key's checks.
    counters: OnceLock<KeyCounters>,
}

#[derive(Debug)]
struct KeyCounters {
    requests: metrics::Counter,
    tokens: metrics::Counter,
}

impl Key {
    /// Counts a request admitted under this key (`gateway_key_requests_total`).
    pub fn count_request(&self) {
        self.counters().requests.increment(1);
    }

    /// Counts the tokens of an answer under this key (`gateway_key_tokens_total`).
    pub fn count_tokens(&self, tokens: u64) {
        self.counters().tokens.increment(tokens);
    }

    fn counters(&self) -> &KeyCounters {
        self.counters.get_or_init(|| KeyCounters {
            requests: metrics::counter!("gateway_key_requests_total", "key" => self.name.clone()),
            tokens: metrics::counter!("gateway_key_tokens_total", "key" => self.name.clone()),
        })
    }

    /// Whether this key may use a model id (a route name or `character/<name>`).
    pub fn may_use(&self, id: &str) -> bool {
        self.routes
            .as_ref()
            .is_none_or(|routes| routes.is_match(id))
    }

    /// Whether this key may list and call a tool, by the name `/mcp` serves it under.
    pub fn may_use_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.is_match(name))
    }

    /// Whether some routes are out of this key's reach.
    pub fn is_restricted(&self) -> bool {
        self.routes.is_some()
    }
}

/// What a request presented.
#[derive(Debug)]
pub enum Presented<'a> {
    Nothing,
    Unknown,
    Key(&'a Arc<Key>),
}

/// The configured keys.
#[derive(Debug, Default)]
pub struct Keyring {
    keys: Vec<Arc<Key>>,
}

impl Keyring {
    /// Builds the keys; `env` reads `key_env` variables. The configuration has been checked
    /// (see [`check`]); what remains to fail is the environment, and keys that turn out to
    /// be the same secret. Every such problem is named.
    pub fn build(
        configs: &[KeyConfig],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Vec<String>> {
        let mut keys: Vec<Arc<Key>> = Vec::with_capacity(configs.len());
        // Each key's index among the entries (slots skip entries with problems).
        let mut entries = Vec::with_capacity(configs.len());
        let mut problems = Vec::new();
        for (index, config) in configs.iter().enumerate() {
            let place = format!("key[{index}] (\"{}\")", config.name);
            let digest = match resolve(
                &place,
                config.sha256.as_deref(),
                config.key_env.as_deref(),
                env,
            ) {
                Ok(digest) => digest,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            if let Some((other, entry)) = keys
                .iter()
                .zip(&entries)
                .find(|(key, _)| bool::from(key.digest.ct_eq(&digest)))
            {
                let field = if config.sha256.is_some() {
                    "sha256"
                } else {
                    "key_env"
                };
                problems.push(format!(
                    "{place}.{field}: the same key as key[{}] (\"{}\"); each key needs its own secret",
                    entry, other.name
                ));
                continue;
            }
            let (routes, tools) = match (
                config.routes.as_deref().map(glob_set).transpose(),
                config.tools.as_deref().map(glob_set).transpose(),
            ) {
                (Ok(routes), Ok(tools)) => (routes, tools),
                (routes, tools) => {
                    for (field, result) in [("routes", routes), ("tools", tools)] {
                        if let Err(error) = result {
                            problems.push(format!("{place}.{field}{error}"));
                        }
                    }
                    continue;
                }
            };
            keys.push(Arc::new(Key {
                name: config.name.clone(),
                digest,
                routes,
                tools,
                limits: Limits {
                    requests_per_minute: config.requests_per_minute,
                    tokens_per_minute: config.tokens_per_minute,
                    max_concurrent: config.max_concurrent,
                },
                slot: keys.len(),
                counters: OnceLock::new(),
            }));
            entries.push(index);
        }
        if problems.is_empty() {
            Ok(Self { keys })
        } else {
            Err(problems)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Every key, in slot order.
    pub fn all(&self) -> &[Arc<Key>] {
        &self.keys
    }

    /// The key the request's `Authorization: Bearer …`, `x-api-key` or `x-goog-api-key`
    /// (Google's) header carries (the first of them that names a key).
    pub fn identify(&self, headers: &HeaderMap) -> Presented<'_> {
        let candidates = presented(headers);
        if candidates.is_empty() {
            return Presented::Nothing;
        }
        for candidate in candidates {
            let digest = sha256(candidate);
            // Every digest is compared, whatever matched before, so the time taken does not
            // depend on which key (if any) is close.
            let mut found = None;
            for key in &self.keys {
                if bool::from(key.digest.ct_eq(&digest)) {
                    found = Some(key);
                }
            }
            if let Some(key) = found {
                return Presented::Key(key);
            }
        }
        Presented::Unknown
    }
}

/// A secret checked on its own (the `metrics_key`).
#[derive(Debug)]
pub struct Secret {
    digest: [u8; 32],
}

impl Secret {
    pub fn build(
        place: &str,
        config: &SecretConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let digest = resolve(
            place,
            config.sha256.as_deref(),
            config.key_env.as_deref(),
            env,
        )?;
        Ok(Self { digest })
    }

    /// Whether the request's credentials carry this secret.
    pub fn presented_in(&self, headers: &HeaderMap) -> bool {
        presented(headers)
            .into_iter()
            .any(|candidate| bool::from(self.digest.ct_eq(&sha256(candidate))))
    }
}

/// The credentials a request carries, in the order they are tried.
fn presented(headers: &HeaderMap) -> Vec<&[u8]> {
    let bearer = headers
        .get_all(http::header::AUTHORIZATION)
        .iter()
        .filter_map(|value| {
            let value = value.as_bytes();
            let (scheme, rest) = value.split_at_checked(7)?;
            scheme
                .eq_ignore_ascii_case(b"bearer ")
                .then(|| rest.trim_ascii())
        });
    let api_key = ["x-api-key", "x-goog-api-key"]
        .into_iter()
        .flat_map(|name| headers.get_all(name).iter())
        .map(|value| value.as_bytes().trim_ascii());
    bearer
        .chain(api_key)
        .filter(|value| !value.is_empty())
        .collect()
}

fn sha256(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// The digest a `sha256` entry holds, or of the secret in `key_env`.
fn resolve(
    place: &str,
    sha256_hex: Option<&str>,
    key_env: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<[u8; 32], String> {
    match (sha256_hex, key_env) {
        (Some(hex_digest), None) => {
            parse_digest(hex_digest).map_err(|error| format!("{place}.sha256: {error}"))
        }
        (None, Some(variable)) => {
            let secret = env(variable).ok_or_else(|| {
                format!(
                    "{place}.key_env: the environment variable {variable} is not set or is empty"
                )
            })?;
            Ok(sha256(secret.trim().as_bytes()))
        }
        _ => Err(format!("{place}: give exactly one of sha256 and key_env")),
    }
}

fn parse_digest(text: &str) -> Result<[u8; 32], String> {
    let mut digest = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut digest)
        .map_err(|_| "expected 64 hexadecimal digits (a SHA-256 digest)".to_owned())?;
    Ok(digest)
}

fn glob_set(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for (index, pattern) in patterns.iter().enumerate() {
        builder.add(Glob::new(pattern).map_err(|error| format!("[{index}]: {error}"))?);
    }
    builder.build().map_err(|error| error.to_string())
}

/// Whether `name` can name a key (it appears in logs, metric labels and Redis keys).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// Problems with the `[[key]]` entries and `metrics_key`, each naming its place.
pub fn check(keys: &[KeyConfig], metrics_key: Option<&SecretConfig>) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        let place = format!("key[{index}] (\"{}\")", key.name);
        if !valid_name(&key.name) {
            problems.push(format!(
                "{place}.name: use 1 to 64 letters, digits, '-', '_' or '.'"
            ));
        }
        if keys[..index].iter().any(|other| other.name == key.name) {
            problems.push(format!("{place}.name: a key with this name already exists"));
        }
        problems.extend(check_secret(
            &place,
            key.sha256.as_deref(),
            key.key_env.as_deref(),
        ));
        for (field, patterns, every) in [
            ("routes", &key.routes, "route"),
            ("tools", &key.tools, "tool"),
        ] {
            match patterns {
                Some(patterns) if patterns.is_empty() => problems.push(format!(
                    "{place}.{field} is empty, so the key could use nothing; leave it out to allow every {every}"
                )),
                Some(patterns) => {
                    if let Err(error) = glob_set(patterns) {
                        problems.push(format!("{place}.{field}{error}"));
                    }
                }
                None => {}
            }
        }
        for (field, value) in [
            ("requests_per_minute", key.requests_per_minute),
            ("tokens_per_minute", key.tokens_per_minute),
            ("max_concurrent", key.max_concurrent.map(u64::from)),
        ] {
            if value == Some(0) {
                problems.push(format!(
                    "{place}.{field} must be at least 1; leave it out for no limit"
                ));
            }
        }
    }
    if let Some(secret) = metrics_key {
        problems.extend(check_secret(
            "metrics_key",
            secret.sha256.as_deref(),
            secret.key_env.as_deref(),
        ));
    }
    problems
}

fn check_secret(place: &str, sha256_hex: Option<&str>, key_env: Option<&str>) -> Option<String> {
    match (sha256_hex, key_env) {
        (Some(_), Some(_)) | (None, None) => {
            Some(format!("{place}: give exactly one of sha256 and key_env"))
        }
        (Some(text), None) => parse_digest(text)
            .err()
            .map(|error| format!("{place}.sha256: {error}")),
        (None, Some(variable)) if variable.trim().is_empty() => {
            Some(format!("{place}.key_env: name an environment variable"))
        }
        (None, Some(_)) => None,
    }
}

/// Why a new key could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NewKeyError {
    #[error("\"{0}\" cannot name a key: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

/// A fresh key, `sk-sb-` and 40 letters and digits from the operating system's random
/// source, and the `[[key]]` block that admits it (holding only its digest).
pub fn new_key(name: &str) -> Result<(String, String), NewKeyError> {
    if !valid_name(name) {
        return Err(NewKeyError::BadName(name.to_owned()));
    }
    let mut key = String::with_capacity(KEY_PREFIX.len() + KEY_RANDOM_CHARS);
    key.push_str(KEY_PREFIX);
    let mut bytes = [0u8; 64];
    while key.len() < KEY_PREFIX.len() + KEY_RANDOM_CHARS {
        OsRng
            .try_fill_bytes(&mut bytes)
            .map_err(|error| NewKeyError::Random(error.to_string()))?;
        // 248 is the largest multiple of 62 below 256: rejecting the bytes above it keeps
        // every character equally likely. rand's own distributions want an RNG that
        // cannot fail; this one can, and says so.
        for byte in bytes.iter().filter(|byte| **byte < 248) {
            if key.len() == KEY_PREFIX.len() + KEY_RANDOM_CHARS {
                break;
            }
            key.push(char::from(ALPHABET[usize::from(*byte % 62)]));
        }
    }
    let block = format!(
        "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\n# routes = [\"*\"]\n# requests_per_minute = 60\n# tokens_per_minute = 100000\n# max_concurrent = 4\n",
        hex::encode(sha256(key.as_bytes()))
    );
    Ok((key, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn keyring(entries: &[(&str, &str)]) -> Keyring {
        let configs: Vec<KeyConfig> = entries
            .iter()
            .map(|(name, key)| KeyConfig {
                name: (*name).into(),
                sha256: Some(hex::encode(sha256(key.as_bytes()))),
                key_env: None,
                routes: None,
                tools: None,
                requests_per_minute: None,
                tokens_per_minute: None,
                max_concurrent: None,
            })
            .collect();
        Keyring::build(&configs, &|_| None).unwrap()
    }

    fn named(presented: Presented<'_>) -> Option<String> {
        match presented {
            Presented::Key(key) => Some(key.name.clone()),
            _ => None,
        }
    }

    #[test]
    fn bearer_and_x_api_key_both_identify_and_near_misses_do_not() {
        let ring = keyring(&[("ci", "sk-sb-aaaa"), ("ops", "sk-sb-bbbb")]);
        let name = |pairs: &[(&str, &str)]| named(ring.identify(&headers(pairs)));
        assert_eq!(
            name(&[("authorization", "Bearer sk-sb-aaaa")]).as_deref(),
            Some("ci")
        );
        assert_eq!(
            name(&[("authorization", "bearer  sk-sb-bbbb ")]).as_deref(),
            Some("ops")
        );
        assert_eq!(name(&[("x-api-key", "sk-sb-bbbb")]).as_deref(), Some("ops"));
        // A proxy's own bearer token does not hide the key in x-api-key.
        assert_eq!(
            name(&[
                ("authorization", "Bearer something-else"),
                ("x-api-key", "sk-sb-aaaa")
            ])
            .as_deref(),
            Some("ci")
        );
        // Right length, wrong bytes; a prefix.
        for pairs in [
            [("authorization", "Bearer sk-sb-aaab")],
            [("authorization", "Bearer sk-sb-aaa")],
        ] {
            assert!(
                matches!(ring.identify(&headers(&pairs)), Presented::Unknown),
                "{pairs:?}"
            );
        }
        // Another scheme presents no key at all (and is told how to send one).
        let basic = [("authorization", "Basic sk-sb-aaaa")];
        assert!(matches!(
            ring.identify(&headers(&basic)),
            Presented::Nothing
        ));
        assert!(matches!(ring.identify(&headers(&[])), Presented::Nothing));
        assert!(matches!(
            ring.identify(&headers(&[("x-api-key", "")])),
            Presented::Nothing
        ));
    }

    #[test]
    fn keys_from_the_environment_are_hashed_and_missing_variables_named() {
        let config = KeyConfig {
            name: "env".into(),
            sha256: None,
            key_env: Some("GATEWAY_KEY".into()),
            routes: Some(vec!["qwen".into(), "character/*".into()]),
            tools: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            max_concurrent: None,
        };
        let ring = Keyring::build(std::slice::from_ref(&config), &|name| {
            (name == "GATEWAY_KEY").then(|| "sk-sb-from-env".to_owned())
        })
        .unwrap();
        let Presented::Key(key) = ring.identify(&headers(&[("x-api-key", "sk-sb-from-env")]))
        else {
            panic!("the key from the environment is not recognised");
        };
        assert!(key.may_use("qwen") && key.may_use("character/narrator"));
        assert!(!key.may_use("qwen-large") && !key.may_use("other"));
        let error = Keyring::build(&[config], &|_| None).unwrap_err();
        assert_eq!(
            error,
            [
                "key[0] (\"env\").key_env: the environment variable GATEWAY_KEY is not set or is empty"
            ]
        );
    }

    #[test]
    fn the_same_secret_twice_is_refused() {
        let digest = hex::encode(sha256(b"sk-sb-same"));
        let entry = |name: &str| KeyConfig {
            name: name.into(),
            sha256: Some(digest.clone()),
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            max_concurrent: None,
        };
        let error = Keyring::build(&[entry("a"), entry("b")], &|_| None).unwrap_err();
        assert_eq!(
            error,
            [
                "key[1] (\"b\").sha256: the same key as key[0] (\"a\"); each key needs its own secret"
            ]
        );
    }

    #[test]
    fn new_keys_have_the_documented_form_and_their_block_admits_them() {
        let (key, block) = new_key("ci-runner").unwrap();
        let random = key.strip_prefix(KEY_PREFIX).unwrap();
        assert_eq!(random.len(), 40);
        assert!(
            random.bytes().all(|byte| byte.is_ascii_alphanumeric()),
            "{key}"
        );
        let (other, _) = new_key("ci-runner").unwrap();
        assert_ne!(key, other);
        assert!(!block.contains(&key), "the block holds no secret");
        let config: toml::Value = toml::from_str(&block).unwrap();
        let entry = &config["key"][0];
        assert_eq!(entry["name"].as_str(), Some("ci-runner"));
        let ring = Keyring::build(
            &[KeyConfig {
                name: "ci-runner".into(),
                sha256: entry["sha256"].as_str().map(str::to_owned),
                key_env: None,
                routes: None,
                tools: None,
                requests_per_minute: None,
                tokens_per_minute: None,
                max_concurrent: None,
            }],
            &|_| None,
        )
        .unwrap();
        let bearer = format!("Bearer {key}");
        assert_eq!(
            named(ring.identify(&headers(&[("authorization", &bearer)]))).as_deref(),
            Some("ci-runner")
        );
        assert!(matches!(new_key("no spaces"), Err(NewKeyError::BadName(_))));
    }

    #[test]
    fn configuration_mistakes_are_named() {
        let entry = |name: &str| KeyConfig {
            name: name.into(),
            sha256: None,
            key_env: None,
            routes: None,
            tools: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            max_concurrent: None,
        };
        let both = KeyConfig {
            sha256: Some("ab".into()),
            key_env: Some("X".into()),
            ..entry("both")
        };
        let short = KeyConfig {
            sha256: Some("abcd".into()),
            routes: Some(Vec::new()),
            requests_per_minute: Some(0),
            ..entry("short")
        };
        let globs = KeyConfig {
            key_env: Some("K".into()),
            routes: Some(vec!["ok".into(), "bad[".into()]),
            ..entry("bad name")
        };
        let problems = check(
            &[both, short, globs, entry("short")],
            Some(&SecretConfig {
                sha256: None,
                key_env: None,
            }),
        )
        .join("\n");
        for expected in [
            "key[0] (\"both\"): give exactly one of sha256 and key_env",
            "key[1] (\"short\").sha256: expected 64 hexadecimal digits",
            "key[1] (\"short\").routes is empty",
            "key[1] (\"short\").requests_per_minute must be at least 1",
            "key[2] (\"bad name\").name: use 1 to 64 letters",
            "key[2] (\"bad name\").routes[1]:",
            "key[3] (\"short\").name: a key with this name already exists",
            "metrics_key: give exactly one of sha256 and key_env",
        ] {
            assert!(problems.contains(expected), "{expected}\nin:\n{problems}");
        }
    }
}
