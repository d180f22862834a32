//! `MCP_SERVERS`: the upstream MCP servers a character may use, and which of their tools.
//! Plain data: the names are checked against the names the gateway's configuration defines
//! (when the caller has one), and the gateway does the rest.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value as Json;

use crate::rejection::{Problem, json_type, kind};

const EXPORT: &str = "MCP_SERVERS";

/// The longest MCP server name.
const MAX_SERVER_NAME: usize = 64;

/// One server a character may use, from one entry of its `MCP_SERVERS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerUse {
    /// The `name` of an `[[mcp_server]]` of the gateway's configuration.
    pub server: String,
    /// The tools of the server the character may use, as names where `*` stands for any run
    /// of characters; `None`: all of them.
    pub tools: Option<Vec<String>>,
}

impl McpServerUse {
    /// Whether the character may use the server's tool named `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|patterns| patterns.iter().any(|pattern| glob_matches(pattern, tool)))
    }
}

/// Whether `pattern` (where `*` stands for any run of characters, the empty one included)
/// matches the whole of `text`; every other character stands for itself.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // The last `*` seen and the text position it was tried at, to try one more character.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Whether `name` can name an MCP server: 1 to 64 characters of `A-Z`, `a-z`, `0-9`, `_`
/// and `-` (the rule for `[[mcp_server]].name`).
pub(crate) fn is_server_name(name: &str) -> bool {
    (1..=MAX_SERVER_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The entries of an `MCP_SERVERS` array (already JSON), every problem at once. `configured`:
/// the server names the configuration defines, when the caller knows them.
pub(crate) fn check(
    json: &Json,
    configured: Option<&[String]>,
) -> Result<Vec<McpServerUse>, Vec<Problem>> {
    let mut problems = Vec::new();
    let Json::Array(entries) = json else {
        problems.push(not_array(json_type(json)));
        return Err(problems);
    };
    let mut uses = Vec::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let path = format!("{EXPORT}/{index}");
        let Some(Entry {
            name_path,
            server,
            tools,
        }) = check_entry(&path, entry, &mut problems)
        else {
            continue;
        };
        let Some(server) = server else {
            continue;
        };
        if let Some(first) = seen.get(&server) {
            problems.push(invalid(
                &name_path,
                &format!("\"{server}\" is already listed at {first}; list each server once"),
            ));
            continue;
        }
        seen.insert(server.clone(), name_path.clone());
        if let Some(configured) = configured
            && !configured.contains(&server)
        {
            let names = if configured.is_empty() {
                "none".to_owned()
            } else {
                configured.join(", ")
            };
            problems.push(Problem::at_export(
                kind::UNKNOWN_MCP_SERVER,
                name_path,
                &format!("no MCP server named \"{server}\" is configured (configured: {names})"),
            ));
            continue;
        }
        if let Some(tools) = tools {
            uses.push(McpServerUse { server, tools });
        }
    }
    if problems.is_empty() {
        Ok(uses)
    } else {
        Err(problems)
    }
}

/// The problem of an `MCP_SERVERS` that is not an array; `found` is the type it has.
pub(crate) fn not_array(found: &str) -> Problem {
    invalid(
        EXPORT,
        &format!(
            "expected an array of MCP server names or {{ server, tools }} objects, got {found}"
        ),
    )
}

/// One entry of `MCP_SERVERS`, as far as it is valid.
struct Entry {
    /// The path of its server name: the entry's, or its `server` key's.
    name_path: String,
    /// The server name, when valid.
    server: Option<String>,
    /// The tools (`Some(None)`: all), when valid.
    tools: Option<Option<Vec<String>>>,
}

/// One entry; `None` when it is neither a string nor an object.
fn check_entry(path: &str, entry: &Json, problems: &mut Vec<Problem>) -> Option<Entry> {
    match entry {
        Json::String(name) => {
            let server = check_server_name(path, name, problems);
            Some(Entry {
                name_path: path.to_owned(),
                server,
                tools: Some(None),
            })
        }
        Json::Object(fields) => {
            let name_path = format!("{path}/server");
            for key in fields
                .keys()
                .filter(|key| *key != "server" && *key != "tools")
            {
                problems.push(invalid(
                    &format!("{path}/{key}"),
                    "unknown key; an entry has only server and tools",
                ));
            }
            let server = match fields.get("server") {
                Some(Json::String(name)) => check_server_name(&name_path, name, problems),
                Some(other) => {
                    problems.push(invalid(
                        &name_path,
                        &format!("expected a string, got {}", json_type(other)),
                    ));
                    None
                }
                None => {
                    problems.push(invalid(&name_path, "missing; a server name is required"));
                    None
                }
            };
            let tools = match fields.get("tools") {
                None => Some(None),
                Some(tools) => check_tools(&format!("{path}/tools"), tools, problems).map(Some),
            };
            Some(Entry {
                name_path,
                server,
                tools,
            })
        }
        other => {
            problems.push(invalid(
                path,
                &format!(
                    "expected a server name or a {{ server, tools }} object, got {}",
                    json_type(other)
                ),
            ));
            None
        }
    }
}

fn check_server_name(path: &str, name: &str, problems: &mut Vec<Problem>) -> Option<String> {
    if name.is_empty() {
        problems.push(invalid(path, "must not be empty"));
        return None;
    }
    if !is_server_name(name) {
        problems.push(invalid(
            path,
            &format!(
                "\"{name}\" is not an MCP server name; names are 1 to {MAX_SERVER_NAME} characters of A-Z, a-z, 0-9, _ and -"
            ),
        ));
        return None;
    }
    Some(name.to_owned())
}

fn check_tools(path: &str, tools: &Json, problems: &mut Vec<Problem>) -> Option<Vec<String>> {
    let Json::Array(entries) = tools else {
        problems.push(invalid(
            path,
            &format!("expected an array of tool names, got {}", json_type(tools)),
        ));
        return None;
    };
    if entries.is_empty() {
        problems.push(invalid(
            path,
            "is empty; leave tools out to allow all of the server's tools",
        ));
        return None;
    }
    let before = problems.len();
    let mut names = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        match entry {
            Json::String(name) if !name.is_empty() => names.push(name.clone()),
            Json::String(_) => {
                problems.push(invalid(&format!("{path}/{index}"), "must not be empty"))
            }
            other => problems.push(invalid(
                &format!("{path}/{index}"),
                &format!("expected a string, got {}", json_type(other)),
            )),
        }
    }
    (problems.len() == before).then_some(names)
}

fn invalid(path: &str, detail: &str) -> Problem {
    Problem::at_export(kind::INVALID_MCP_SERVERS, path, detail)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The problems `json` has, as `kind: message`.
    fn problems(json: Json, configured: Option<&[String]>) -> Vec<String> {
        check(&json, configured)
            .expect_err("expected problems")
            .into_iter()
            .map(|problem| format!("{}: {}", problem.kind, problem.message))
            .collect()
    }

    fn uses(json: Json) -> Vec<McpServerUse> {
        check(&json, None).expect("expected no problem")
    }

    fn patterns(tools: &[&str]) -> McpServerUse {
        McpServerUse {
            server: "search".to_owned(),
            tools: Some(tools.iter().map(|tool| (*tool).to_owned()).collect()),
        }
    }

    #[test]
    fn names_and_objects_become_server_uses_in_order() {
        assert_eq!(
            uses(json!([
                "fs",
                { "server": "search", "tools": ["search_web", "search_*"] },
                { "server": "Mem_0-1" }
            ])),
            [
                McpServerUse {
                    server: "fs".to_owned(),
                    tools: None
                },
                patterns(&["search_web", "search_*"]),
                McpServerUse {
                    server: "Mem_0-1".to_owned(),
                    tools: None
                },
            ]
        );
        assert_eq!(uses(json!([])), []);
    }

    #[test]
    fn something_other_than_an_array_is_refused() {
        assert_eq!(
            problems(json!({ "server": "fs" }), None),
            [
                "invalid_mcp_servers: MCP_SERVERS: expected an array of MCP server names or { server, tools } objects, got object"
            ]
        );
    }

    #[test]
    fn every_wrong_entry_is_named_with_its_path_at_once() {
        assert_eq!(
            problems(
                json!([
                    42,
                    "",
                    "my server",
                    "x".repeat(65),
                    { "server": "fs", "tool": ["a"] },
                    { "tools": ["a"] },
                    { "server": 7 },
                    { "server": "search", "tools": "search_web" },
                    { "server": "memory", "tools": ["recall", 3, ""] },
                    { "server": "web", "tools": [] },
                    null,
                ]),
                None
            ),
            [
                "invalid_mcp_servers: MCP_SERVERS/0: expected a server name or a { server, tools } object, got number",
                "invalid_mcp_servers: MCP_SERVERS/1: must not be empty",
                "invalid_mcp_servers: MCP_SERVERS/2: \"my server\" is not an MCP server name; names are 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
                &format!(
                    "invalid_mcp_servers: MCP_SERVERS/3: \"{}\" is not an MCP server name; names are 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
                    "x".repeat(65)
                ),
                "invalid_mcp_servers: MCP_SERVERS/4/tool: unknown key; an entry has only server and tools",
                "invalid_mcp_servers: MCP_SERVERS/5/server: missing; a server name is required",
                "invalid_mcp_servers: MCP_SERVERS/6/server: expected a string, got number",
                "invalid_mcp_servers: MCP_SERVERS/7/tools: expected an array of tool names, got string",
                "invalid_mcp_servers: MCP_SERVERS/8/tools/1: expected a string, got number",
                "invalid_mcp_servers: MCP_SERVERS/8/tools/2: must not be empty",
                "invalid_mcp_servers: MCP_SERVERS/9/tools: is empty; leave tools out to allow all of the server's tools",
                "invalid_mcp_servers: MCP_SERVERS/10: expected a server name or a { server, tools } object, got null",
            ]
        );
    }

    #[test]
    fn a_server_listed_twice_is_refused_naming_the_first_entry() {
        assert_eq!(
            problems(json!(["fs", { "server": "fs", "tools": ["read"] }]), None),
            [
                "invalid_mcp_servers: MCP_SERVERS/1/server: \"fs\" is already listed at MCP_SERVERS/0; list each server once"
            ]
        );
    }

    #[test]
    fn a_server_the_configuration_does_not_define_is_refused_naming_those_it_does() {
        let configured = ["fs".to_owned(), "memory".to_owned()];
        assert_eq!(
            problems(
                json!(["fs", { "server": "search" }, "web"]),
                Some(&configured)
            ),
            [
                "unknown_mcp_server: MCP_SERVERS/1/server: no MCP server named \"search\" is configured (configured: fs, memory)",
                "unknown_mcp_server: MCP_SERVERS/2: no MCP server named \"web\" is configured (configured: fs, memory)",
            ]
        );
        assert_eq!(
            problems(json!(["fs"]), Some(&[])),
            [
                "unknown_mcp_server: MCP_SERVERS/0: no MCP server named \"fs\" is configured (configured: none)"
            ]
        );
        assert_eq!(
            check(&json!(["fs", "memory"]), Some(&configured))
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn without_a_configuration_any_valid_name_is_taken() {
        assert_eq!(
            uses(json!(["anything-at-all"]))[0].server,
            "anything-at-all"
        );
    }

    #[test]
    fn allows_every_tool_without_a_list_and_matches_globs_otherwise() {
        let all = McpServerUse {
            server: "fs".to_owned(),
            tools: None,
        };
        assert!(all.allows("read_file"));
        assert!(all.allows(""));

        let some = patterns(&["search_web", "search_*", "*_image", "get*page*"]);
        for allowed in [
            "search_web",
            "search_",
            "search_news",
            "make_image",
            "_image",
            "getpage",
            "get_the_page_now",
        ] {
            assert!(some.allows(allowed), "{allowed}");
        }
        for refused in ["search", "Search_web", "image", "get_pag", "fetch"] {
            assert!(!some.allows(refused), "{refused}");
        }
        assert!(!patterns(&["search_web"]).allows("search_web2"));
        assert!(patterns(&["*"]).allows(""));
        assert!(patterns(&["a*b*c"]).allows("aXbYbZc"));
        assert!(!patterns(&["a*b*c"]).allows("aXbYbZ"));
        assert!(patterns(&["é*"]).allows("été"));
    }
}
