//! An `[[mcp_server]]` entry as a plain value, its checks, and its conversion into what the
//! MCP client takes: credentials (`${VAR}` in `env` and `headers`) are read from the
//! gateway's environment when the server is started, never written in the file.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use switchboard_mcp_client::{Transport, UpstreamConfig};

/// Longest call deadline a server may be given, in seconds: an hour.
const MAX_CALL_TIMEOUT_SECS: f64 = 3600.0;

/// One upstream MCP server whose tools the gateway serves and runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// 1 to 64 of `[A-Za-z0-9_-]`: the prefix of its tools' names (`{name}_{tool}`).
    pub name: String,
    /// A program and its arguments, spawned by the gateway and spoken to over stdio.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A Streamable HTTP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// The child's environment, beside `PATH` and `HOME`; `${VAR}` reads the gateway's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Sent with every HTTP request; `${VAR}` reads the gateway's environment.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The upstream's own tool names (or `*` globs) that may be used; all when absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// One call's deadline, in seconds.
    #[serde(default)]
    pub call_timeout_secs: Option<f64>,
    /// The most bytes of text one result may bring; past it the head and tail are kept.
    #[serde(default)]
    pub max_result_bytes: Option<usize>,
    /// Calls running on it at once, from every request and `/mcp` client together; the
    /// rest wait their turn (within the call's deadline).
    #[serde(default = "default_max_concurrent_calls")]
    pub max_concurrent_calls: usize,
    /// The most tools its listing may hold, every page together; past it the server is
    /// `down`.
    #[serde(default)]
    pub max_tools: Option<usize>,
    /// The most bytes its listing may take, every page together; past it the server is
    /// `down`.
    #[serde(default)]
    pub max_list_bytes: Option<usize>,
}

/// Enough for a model's parallel calls, few enough that one request's thousand calls do not
/// become a thousand requests to the server.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 8;

fn default_max_concurrent_calls() -> usize {
    DEFAULT_MAX_CONCURRENT_CALLS
}

/// Whether a server name can prefix tool names a model API accepts.
pub fn valid_server_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_'))
}

/// Every problem of the `[[mcp_server]]` entries, each starting with its key path.
pub fn check_servers(servers: &[McpServerConfig]) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, server) in servers.iter().enumerate() {
        let place = format!("mcp_server[{index}] (\"{}\")", server.name);
        if !valid_server_name(&server.name) {
            problems.push(format!(
                "{place}.name: use 1 to 64 letters, digits, '-' or '_' (it prefixes tool names)"
            ));
        }
        if servers[..index]
            .iter()
            .any(|other| other.name == server.name)
        {
            problems.push(format!(
                "{place}.name: an MCP server with this name already exists"
            ));
        }
        // `{server}_{tool}` of `up` and `two_op` is `up_two_op`, as of `up_two` and `op`:
        // such names are refused here rather than resolved by file order where tools meet.
        for other in servers {
            if server
                .name
                .strip_prefix(other.name.as_str())
                .is_some_and(|rest| rest.starts_with('_'))
            {
                problems.push(format!(
                    "{place}.name: it begins with the MCP server name \"{}\" and `_`, so the two servers' tool names (`{{server}}_{{tool}}`) could meet; rename one",
                    other.name
                ));
            }
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) | (None, None) => problems.push(format!(
                "{place}: give `command` (a program spoken to over stdio) or `url` (Streamable HTTP), not both"
            )),
            (Some(command), None) if command.first().is_none_or(|program| program.trim().is_empty()) => {
                problems.push(format!("{place}.command: name a program to run"));
            }
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                problems.push(format!(
                    "{place}.url: \"{url}\" must start with http:// or https://"
                ));
            }
            _ => {}
        }
        if server.command.is_some() && !server.headers.is_empty() {
            problems.push(format!(
                "{place}.headers: only an HTTP server (`url`) takes headers"
            ));
        }
        if server.url.is_some() && !server.env.is_empty() {
            problems.push(format!(
                "{place}.env: only a spawned server (`command`) takes an environment"
            ));
        }
        if let Some(patterns) = &server.tools
            && patterns.iter().any(|pattern| pattern.is_empty())
        {
            problems.push(format!("{place}.tools: an entry is empty"));
        }
        if let Some(seconds) = server.call_timeout_secs
            && !(seconds.is_finite() && seconds > 0.0 && seconds <= MAX_CALL_TIMEOUT_SECS)
        {
            problems.push(format!(
                "{place}.call_timeout_secs must be more than 0 and at most {MAX_CALL_TIMEOUT_SECS}"
            ));
        }
        if server.max_result_bytes == Some(0) {
            problems.push(format!("{place}.max_result_bytes must be at least 1"));
        }
        if !(1..=1024).contains(&server.max_concurrent_calls) {
            problems.push(format!(
                "{place}.max_concurrent_calls must be from 1 to 1024"
            ));
        }
        if server.max_tools == Some(0) {
            problems.push(format!("{place}.max_tools must be at least 1"));
        }
        if server.max_list_bytes == Some(0) {
            problems.push(format!("{place}.max_list_bytes must be at least 1"));
        }
    }
    problems
}

impl McpServerConfig {
    /// What the MCP client takes, with `${VAR}` read through `env`. `Err` names the key
    /// and the variable that is not set.
    pub fn upstream(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<UpstreamConfig, String> {
        let expand_all = |field: &str, values: &BTreeMap<String, String>| {
            values
                .iter()
                .map(|(key, value)| {
                    expand(value, env)
                        .map(|value| (key.clone(), value))
                        .map_err(|variable| {
                            format!("{field}.{key}: the environment variable {variable} is not set")
                        })
                })
                .collect::<Result<BTreeMap<_, _>, _>>()
        };
        let transport = match (&self.command, &self.url) {
            (Some(command), _) => Transport::Stdio {
                command: command.clone(),
                env: expand_all("env", &self.env)?,
            },
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: expand_all("headers", &self.headers)?,
            },
            (None, None) => return Err("give `command` or `url`".to_owned()),
        };
        let mut config = UpstreamConfig::new(&self.name, transport);
        config.tools.clone_from(&self.tools);
        if let Some(seconds) = self.call_timeout_secs
            && let Ok(timeout) = Duration::try_from_secs_f64(seconds)
        {
            config.call_timeout = timeout;
        }
        if let Some(bytes) = self.max_result_bytes {
            config.max_result_bytes = bytes;
        }
        if let Some(tools) = self.max_tools {
            config.max_tools = tools;
        }
        if let Some(bytes) = self.max_list_bytes {
            config.max_list_bytes = bytes;
        }
        Ok(config)
    }
}

/// `text` with each `${NAME}` replaced by the variable's value; the name of the first one
/// that is not set, as the error.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + length];
        out.push_str(&rest[..start]);
        out.push_str(&env(name).ok_or_else(|| name.to_owned())?);
        rest = &rest[start + 3 + length..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_bounds_are_checked_and_reach_the_client() {
        let entry = |extra: serde_json::Value| -> McpServerConfig {
            let mut entry = serde_json::json!({"name": "up", "command": ["x"]});
            entry
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value(entry).unwrap()
        };
        let server = entry(serde_json::json!({"max_tools": 0, "max_list_bytes": 0}));
        assert_eq!(
            check_servers(std::slice::from_ref(&server)),
            [
                "mcp_server[0] (\"up\").max_tools must be at least 1",
                "mcp_server[0] (\"up\").max_list_bytes must be at least 1",
            ]
        );
        let server = entry(serde_json::json!({"max_tools": 5, "max_list_bytes": 9}));
        let config = server.upstream(&|_| None).unwrap();
        assert_eq!((config.max_tools, config.max_list_bytes), (5, 9));
        let server = entry(serde_json::json!({}));
        let config = server.upstream(&|_| None).unwrap();
        assert_eq!(
            (config.max_tools, config.max_list_bytes),
            (
                switchboard_mcp_client::DEFAULT_MAX_TOOLS,
                switchboard_mcp_client::DEFAULT_MAX_LIST_BYTES
            )
        );
    }

    #[test]
    fn variables_are_read_from_the_environment_and_a_missing_one_is_named() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("plain", &env).unwrap(), "plain");
        assert_eq!(expand("${TOKEN}-${TOKEN}", &env).unwrap(), "s3cret-s3cret");
        assert_eq!(expand("a ${NOPE} b", &env).unwrap_err(), "NOPE");
        assert_eq!(expand("open ${ brace", &env).unwrap(), "open ${ brace");
    }
}
