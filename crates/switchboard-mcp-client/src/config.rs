//! What the gateway says about one upstream MCP server: how to reach it, which of its tools
//! may be used, and the bounds every call runs under. A plain struct: the server's own
//! configuration file is converted into this, so no file format lives here.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use switchboard_wire::secrets::Secrets;

/// The default bound on the text of one tool result (64 KiB): past it a model's context fills
/// with one tool's output (a listing, a log) and the conversation suffers for it.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024;
/// The default bound on one message from the server (16 MiB, rmcp's own line bound): a
/// bigger one ends the connection rather than being buffered.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The default bound on the tools one listing may hold, every page together (before the
/// allow-list: listing them is what costs): a server listing 100,000 tools would otherwise
/// send them with every model request on its routes.
pub const DEFAULT_MAX_TOOLS: usize = 1000;
/// The default bound on one listing's bytes, every page together (each tool as JSON).
pub const DEFAULT_MAX_LIST_BYTES: usize = 4 * 1024 * 1024;
/// The most pages one listing may take: a server whose `nextCursor` never ends would
/// otherwise be listed until its deadline, gathering tools all the while.
pub const MAX_LIST_PAGES: usize = 100;
/// The default deadline of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default deadline of connecting: spawning or reaching the server and its handshake.
/// Past rmcp's own 10 s wait for `server/discover`, so an older server that never answers
/// it still gets its `initialize`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// The name the gateway knows it by; in logs and in every error's text.
    pub name: String,
    pub transport: Transport,
    /// The tools that may be listed and called, by the upstream's own names: each entry is a
    /// name or a glob where `*` stands for any run of characters. `None` allows all.
    pub tools: Option<Vec<String>>,
    /// The deadline of one call, from the moment it is made (waiting for a connection
    /// included).
    pub call_timeout: Duration,
    /// The deadline of connecting (spawn or reach, and the handshake).
    pub connect_timeout: Duration,
    /// The bound on the text of one result; past it its head and tail are kept with a note.
    /// Images and audio past it are replaced by a note too.
    pub max_result_bytes: usize,
    /// The bound on one message (one line over stdio, one body or event over HTTP).
    pub max_message_bytes: usize,
    /// The bound on the tools one listing holds, every page together.
    pub max_tools: usize,
    /// The bound on one listing's bytes, every page together.
    pub max_list_bytes: usize,
    /// Where an HTTP server's host name was found when the gateway checked it (a URL a
    /// request names): every connection goes to these addresses and the name is not looked
    /// up again, so a name that answers the check with a public address and the connection
    /// with an internal one (DNS rebinding) reaches nothing it was not checked for. Empty:
    /// the name is looked up for each connection, as for the servers the operator names.
    pub resolved: Vec<SocketAddr>,
}

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout. Its environment is exactly `env`
    /// plus the gateway's `PATH` and `HOME`: the gateway's own secrets stay out of it.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint. `headers` go with every request; they usually hold
    /// credentials, so they are never logged nor put in an error.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl UpstreamConfig {
    /// A configuration with the default bounds and every tool allowed.
    pub fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            tools: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            resolved: Vec::new(),
        }
    }

    /// What is cut out of every text from the server: every header value (and, of a
    /// `Scheme credential` value such as `Bearer …`, the credential alone, which a server
    /// may quote without its scheme) and every `env` value.
    pub(crate) fn secrets(&self) -> Secrets {
        let values: Vec<String> = match &self.transport {
            Transport::Stdio { env, .. } => env.values().cloned().collect(),
            Transport::Http { headers, .. } => headers
                .values()
                .flat_map(|value| {
                    let credential = value
                        .split_once(' ')
                        .map(|(_, credential)| credential.trim().to_owned());
                    std::iter::once(value.clone()).chain(credential)
                })
                .collect(),
        };
        Secrets::new(values)
    }

    /// Whether the allow-list lets tool `name` be listed and called.
    pub fn allows(&self, name: &str) -> bool {
        match &self.tools {
            None => true,
            Some(patterns) => patterns.iter().any(|pattern| glob_matches(pattern, name)),
        }
    }
}

/// `*` matches any run of characters (none included); everything else matches itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return name.is_empty();
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*` at all: the whole name must be the pattern.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn a_star_stands_for_any_run_of_characters() {
        assert!(glob_matches("echo", "echo"));
        assert!(!glob_matches("echo", "echo2"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("read_*", "read_text_file"));
        assert!(!glob_matches("read_*", "write_file"));
        assert!(glob_matches("*_file", "read_text_file"));
        assert!(glob_matches("r*t*e", "read_text_file"));
        assert!(!glob_matches("a*a", "a"));
        assert!(glob_matches("a*a", "aa"));
        assert!(glob_matches("*list*", "list_directory"));
    }
}
