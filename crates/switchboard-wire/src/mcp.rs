//! MCP servers a request names for the server side to run while the model works: OpenAI's
//! `{"type": "mcp", …}` tool (Responses, and Chat Completions by the same fields) and
//! Anthropic's MCP connector (`mcp_servers` with `mcp_toolset` tools, every beta shape).
//! Each is read into its own typed shape where it stands in the body ([`OpenAiTool`],
//! [`AnthropicMcpServer`] through [`Read`], which keeps a wrong field's path; an
//! [`McpToolset`]'s fields are read in place by the Messages body), and both vendors'
//! become one [`McpServerRequest`]; which servers may actually run is the gateway's
//! decision, not this crate's.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::ConvertError;
use crate::path::{PathStyle, Read};

/// One MCP server a request names, with what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerRequest {
    /// The name the request calls it by (`server_label`, Anthropic's `name`).
    pub label: String,
    pub url: Option<String>,
    pub description: Option<String>,
    /// Tools offered from it; `None`: all of them.
    pub allowed_tools: Option<Vec<String>>,
    /// Tools never offered from it (an Anthropic toolset's disabled ones).
    pub excluded_tools: Vec<String>,
    /// Tools offered only once a tool search finds them (`defer_loading`).
    pub deferred: Deferred,
    /// Only tools annotated `readOnlyHint` (OpenAI's `allowed_tools.read_only`).
    pub read_only: bool,
    pub approval: Approval,
    /// Headers for a server the request itself names (`headers`, `authorization`,
    /// Anthropic's `authorization_token`). Secret: never logged or echoed.
    pub headers: Vec<(String, String)>,
    /// Where the request named it (`tools[2]`, `mcp_servers.0`), for errors.
    pub path: String,
}

/// Which of a server's tools are deferred: not offered to the model until a tool search
/// finds them (an Anthropic toolset's `default_config.defer_loading`, overridden per tool
/// by `configs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Deferred {
    /// Every tool not in `except` is deferred.
    pub by_default: bool,
    /// Tools deferred when `by_default` is not, or offered at once when it is.
    pub except: Vec<String>,
}

impl Deferred {
    /// Whether `tool` waits for a search.
    pub fn defers(&self, tool: &str) -> bool {
        self.by_default != self.except.iter().any(|name| name == tool)
    }

    /// Whether any tool may be deferred.
    pub fn any(&self) -> bool {
        self.by_default || !self.except.is_empty()
    }

    /// Offers `tool` at once (a search of an earlier turn found it).
    pub fn load(&mut self, tool: &str) {
        if self.by_default {
            if !self.except.iter().any(|name| name == tool) {
                self.except.push(tool.to_owned());
            }
        } else {
            self.except.retain(|name| name != tool);
        }
    }
}

/// Which of a server's calls wait for the client's approval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Approval {
    /// OpenAI's default.
    #[default]
    Always,
    Never,
    /// OpenAI's `{always: {tool_names, read_only}, never: {…}}`: a named or read-only tool in
    /// `never` runs at once, one in `always` waits; a tool in neither waits.
    Filter {
        always: ToolFilter,
        never: ToolFilter,
    },
}

/// A set of a server's tools: by name, or the read-only ones (OpenAI's
/// `{tool_names, read_only}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(expecting = "an object such as {\"tool_names\": [\"read\"]}")]
pub struct ToolFilter {
    #[serde(default, deserialize_with = "null_as_default")]
    pub tool_names: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub read_only: bool,
}

impl ToolFilter {
    fn matches(&self, tool: &str, read_only: bool) -> bool {
        self.tool_names.iter().any(|name| name == tool) || (self.read_only && read_only)
    }
}

/// OpenAI's `{"type": "mcp"}` tool as a request sends it. Fields that must be there to
/// make sense are optional here, so that their absence is named with why.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(expecting = "an mcp tool object")]
pub struct McpTool {
    #[serde(default)]
    pub server_label: Option<String>,
    #[serde(default)]
    pub server_url: Option<String>,
    /// OpenAI's own connectors: refused, named.
    #[serde(default)]
    pub connector_id: Option<String>,
    #[serde(default)]
    pub server_description: Option<String>,
    #[serde(default)]
    pub allowed_tools: Option<AllowedTools>,
    #[serde(default)]
    pub require_approval: Option<RequireApproval>,
    /// Secret.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Secret: a bearer token.
    #[serde(default)]
    pub authorization: Option<String>,
    /// The server's tools wait for a tool search to find them (Responses' hosted
    /// `tool_search`); read by the Responses front-end, which defers them.
    #[serde(default)]
    pub defer_loading: Option<bool>,
}

/// An entry of an OpenAI `tools` list (Chat Completions, Responses) as a body reads it:
/// an `{"type": "mcp"}` server, read into its type where it stands, or any other tool,
/// kept as sent for the API's own checks.
#[derive(Debug)]
pub enum OpenAiTool {
    Mcp(Read<McpTool>),
    Other(Value),
}

impl<'de> Deserialize<'de> for OpenAiTool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Its `type` may come after its other fields: the entry is read whole first.
        let tool = Value::deserialize(deserializer)?;
        Ok(if tool.get("type").and_then(Value::as_str) == Some("mcp") {
            Self::Mcp(Read::from(tool))
        } else {
            Self::Other(tool)
        })
    }
}

/// `allowed_tools`: the names, or a filter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "must be a list of tool names or {tool_names, read_only}"
)]
pub enum AllowedTools {
    Names(Vec<String>),
    Filter(ToolFilter),
}

/// `require_approval`: for every call, or by filters.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "must be \"always\", \"never\" or {always, never}"
)]
pub enum RequireApproval {
    Mode(ApprovalMode),
    Filters {
        #[serde(default, deserialize_with = "null_as_default")]
        always: ToolFilter,
        #[serde(default, deserialize_with = "null_as_default")]
        never: ToolFilter,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    Always,
    Never,
}

/// One of Anthropic's `mcp_servers` as a request sends it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(expecting = "an MCP server object such as {\"type\": \"url\", \"url\": …, \"name\": …}")]
pub struct AnthropicMcpServer {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// Secret: a bearer token.
    #[serde(default)]
    pub authorization_token: Option<String>,
    /// The 2025-04-04 beta's own tool configuration.
    #[serde(default)]
    pub tool_configuration: Option<ToolConfiguration>,
}

/// A 2025-04-04 server's `tool_configuration`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolConfiguration {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
}

/// An `mcp_toolset` tool (the 2025-11-20 and 2026-09-15 betas): which server's tools it
/// offers, which of them, and which wait for a tool search. The Messages body reads these
/// fields in place, among those of every kind of tool.
#[derive(Debug, Clone, Default)]
pub struct McpToolset {
    pub mcp_server_name: Option<String>,
    /// For every tool not in `configs`.
    pub default_config: Option<ToolConfig>,
    /// By tool name.
    pub configs: Option<BTreeMap<String, ToolConfig>>,
    /// The 2026-09-15 beta's pinned list: the tools offered, outright (configured alike).
    pub tools: Option<Vec<PinnedTool>>,
}

/// `{"enabled": …, "defer_loading": …}`; absent means enabled and offered at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ToolConfig {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub defer_loading: Option<bool>,
}

/// A pinned tool: its name, or an object naming it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, expecting = "names a tool")]
pub enum PinnedTool {
    Name(String),
    Named { name: String },
}

impl PinnedTool {
    fn name(self) -> String {
        match self {
            PinnedTool::Name(name) | PinnedTool::Named { name } => name,
        }
    }
}

/// A field where `null` means what absence does.
fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Approval {
    /// Whether a call to `tool` waits for approval.
    pub fn required(&self, tool: &str, read_only: bool) -> bool {
        match self {
            Approval::Always => true,
            Approval::Never => false,
            Approval::Filter { always, never } => {
                always.matches(tool, read_only) || !never.matches(tool, read_only)
            }
        }
    }
}

impl McpServerRequest {
    /// Whether `tool` (annotated read-only or not) is offered.
    pub fn allows(&self, tool: &str, read_only: bool) -> bool {
        (!self.read_only || read_only)
            && !self.excluded_tools.iter().any(|name| name == tool)
            && self
                .allowed_tools
                .as_ref()
                .is_none_or(|allowed| allowed.iter().any(|name| name == tool))
    }

    /// An OpenAI `{"type": "mcp"}` tool at `path`.
    pub fn from_openai(tool: McpTool, path: &str) -> Result<Self, ConvertError> {
        let McpTool {
            server_label,
            server_url,
            connector_id,
            server_description,
            allowed_tools,
            require_approval,
            headers,
            authorization,
            defer_loading: _,
        } = tool;
        let label = server_label
            .filter(|label| !label.is_empty())
            .ok_or_else(|| {
                ConvertError::invalid(
                    format!("{path}.server_label"),
                    "an mcp tool needs a server_label",
                )
            })?;
        if server_url.is_none() && connector_id.is_some() {
            return Err(ConvertError::invalid(
                format!("{path}.connector_id"),
                "connectors are OpenAI's own; name a server by server_label or server_url",
            ));
        }
        let (allowed_tools, read_only) = match allowed_tools {
            None => (None, false),
            Some(AllowedTools::Names(names)) => (Some(names), false),
            Some(AllowedTools::Filter(filter)) => {
                let names = filter.tool_names;
                ((!names.is_empty()).then_some(names), filter.read_only)
            }
        };
        let approval = match require_approval {
            None | Some(RequireApproval::Mode(ApprovalMode::Always)) => Approval::Always,
            Some(RequireApproval::Mode(ApprovalMode::Never)) => Approval::Never,
            Some(RequireApproval::Filters { always, never }) => Approval::Filter { always, never },
        };
        let mut headers: Vec<(String, String)> = headers
            .into_iter()
            .flatten()
            .map(|(name, value)| (name.to_ascii_lowercase(), value))
            .collect();
        if let Some(token) = authorization {
            headers.push(("authorization".into(), bearer(&token)));
        }
        Ok(Self {
            label,
            url: server_url,
            description: server_description,
            allowed_tools,
            excluded_tools: Vec::new(),
            deferred: Deferred::default(),
            read_only,
            approval,
            headers,
            path: path.to_owned(),
        })
    }

    /// Anthropic's MCP connector: the `mcp_servers` entries, each with the `mcp_toolset`
    /// tool that names it (the 2025-11-20 and 2026-09-15 betas, each with its position in
    /// `tools`) or its own `tool_configuration` (the 2025-04-04 beta); places are written
    /// in `style`. The connector runs tools without asking.
    pub fn from_anthropic(
        servers: Vec<AnthropicMcpServer>,
        toolsets: Vec<(usize, McpToolset)>,
        style: PathStyle,
    ) -> Result<Vec<Self>, ConvertError> {
        let mut found = Vec::new();
        for (index, server) in servers.into_iter().enumerate() {
            let path = style.item("mcp_servers", index);
            let label = server.name.filter(|name| !name.is_empty()).ok_or_else(|| {
                ConvertError::invalid(format!("{path}.name"), "each MCP server needs a name")
            })?;
            if found.iter().any(|known: &Self| known.label == label) {
                return Err(ConvertError::invalid(
                    format!("{path}.name"),
                    format!("\"{label}\" names two MCP servers"),
                ));
            }
            let url = server.url.ok_or_else(|| {
                ConvertError::invalid(format!("{path}.url"), "each MCP server needs a url")
            })?;
            let mut request = Self {
                label,
                url: Some(url),
                description: None,
                allowed_tools: None,
                excluded_tools: Vec::new(),
                deferred: Deferred::default(),
                read_only: false,
                approval: Approval::Never,
                headers: server
                    .authorization_token
                    .map(|token| vec![("authorization".to_owned(), bearer(&token))])
                    .unwrap_or_default(),
                path,
            };
            // 2025-04-04: the server carries its own tool configuration.
            if let Some(configuration) = server.tool_configuration {
                if configuration.enabled == Some(false) {
                    continue;
                }
                request.allowed_tools = configuration.allowed_tools;
            }
            found.push(request);
        }
        let mut configured = vec![false; found.len()];
        let offers_toolsets = !toolsets.is_empty();
        for (index, toolset) in toolsets {
            let path = style.item("tools", index);
            let name = toolset.mcp_server_name.as_deref().ok_or_else(|| {
                ConvertError::invalid(
                    format!("{path}.mcp_server_name"),
                    "an mcp_toolset names its server",
                )
            })?;
            let Some(position) = found.iter().position(|server| server.label == name) else {
                return Err(ConvertError::invalid(
                    format!("{path}.mcp_server_name"),
                    format!("\"{name}\" is not one of the request's mcp_servers"),
                ));
            };
            if std::mem::replace(&mut configured[position], true) {
                return Err(ConvertError::invalid(
                    format!("{path}.mcp_server_name"),
                    format!("\"{name}\" has two mcp_toolset tools"),
                ));
            }
            found[position].deferred = toolset.deferred();
            let (allowed, excluded) = toolset.offered();
            found[position].allowed_tools = allowed;
            found[position].excluded_tools = excluded;
        }
        // Since 2025-11-20 a server's tools are offered only through its toolset.
        if !offers_toolsets {
            return Ok(found);
        }
        Ok(found
            .into_iter()
            .zip(configured)
            .filter_map(|(server, configured)| configured.then_some(server))
            .collect())
    }
}

impl McpToolset {
    /// Whether every tool it offers is deferred (none of `configs` offers one at once).
    pub fn defers_all(&self) -> bool {
        let deferred = self.deferred();
        deferred.by_default && deferred.except.is_empty()
    }

    /// Which tools wait for a search: `default_config.defer_loading` for every tool,
    /// `configs.NAME.defer_loading` for one.
    fn deferred(&self) -> Deferred {
        let by_default = self
            .default_config
            .and_then(|config| config.defer_loading)
            .unwrap_or(false);
        let except = self
            .configs
            .iter()
            .flatten()
            .filter(|(_, config)| {
                config
                    .defer_loading
                    .is_some_and(|defer| defer != by_default)
            })
            .map(|(name, _)| name.clone())
            .collect();
        Deferred { by_default, except }
    }

    /// The tools allowed (`None`: all) and those excluded: `default_config.enabled` for
    /// every tool, `configs.NAME.enabled` for one, over the pinned `tools` when there are.
    fn offered(self) -> (Option<Vec<String>>, Vec<String>) {
        let enabled_by_default = self
            .default_config
            .and_then(|config| config.enabled)
            .unwrap_or(true);
        let configs = self.configs.unwrap_or_default();
        let enabled = |name: &String| {
            configs
                .get(name)
                .and_then(|config| config.enabled)
                .unwrap_or(enabled_by_default)
        };
        if let Some(pinned) = self.tools {
            let pinned = pinned.into_iter().map(PinnedTool::name);
            return (
                Some(pinned.filter(|name| enabled(name)).collect()),
                Vec::new(),
            );
        }
        let named = |wanted: bool| -> Vec<String> {
            configs
                .keys()
                .filter(|name| enabled(name) == wanted)
                .cloned()
                .collect()
        };
        if enabled_by_default {
            return (None, named(false));
        }
        (Some(named(true)), Vec::new())
    }
}

fn bearer(token: &str) -> String {
    if token.to_ascii_lowercase().starts_with("bearer ") {
        token.to_owned()
    } else {
        format!("Bearer {token}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::typed;

    fn openai(tool: Value, path: &str) -> Result<McpServerRequest, ConvertError> {
        McpServerRequest::from_openai(typed(tool, path, PathStyle::Brackets)?, path)
    }

    /// A toolset's fields, as the Messages body reads them in place.
    fn toolset(tool: &Value) -> McpToolset {
        fn field<T: serde::de::DeserializeOwned>(tool: &Value, name: &str) -> Option<T> {
            tool.get(name)
                .map(|value| serde_json::from_value(value.clone()).unwrap())
        }
        McpToolset {
            mcp_server_name: field(tool, "mcp_server_name"),
            default_config: field(tool, "default_config"),
            configs: field(tool, "configs"),
            tools: field(tool, "tools"),
        }
    }

    fn anthropic(
        servers: &[Value],
        toolsets: &[(usize, Value)],
    ) -> Result<Vec<McpServerRequest>, ConvertError> {
        let servers = servers
            .iter()
            .enumerate()
            .map(|(index, server)| {
                typed(
                    server.clone(),
                    &format!("mcp_servers.{index}"),
                    PathStyle::Dots,
                )
            })
            .collect::<Result<_, _>>()?;
        let toolsets = toolsets
            .iter()
            .map(|(index, tool)| (*index, toolset(tool)))
            .collect();
        McpServerRequest::from_anthropic(servers, toolsets, PathStyle::Dots)
    }

    #[test]
    fn an_openai_mcp_tool_with_filters() {
        let tool = json!({"type": "mcp", "server_label": "fs", "server_url": "http://h/mcp",
            "allowed_tools": {"tool_names": ["read"], "read_only": false},
            "require_approval": {"never": {"tool_names": ["read"]}},
            "authorization": "secret"});
        let server = openai(tool, "tools[0]").unwrap();
        assert_eq!(server.label, "fs");
        assert_eq!(
            server.allowed_tools.as_deref(),
            Some(&["read".to_owned()][..])
        );
        assert!(server.allows("read", false) && !server.allows("write", false));
        assert!(!server.approval.required("read", false));
        assert!(server.approval.required("write", false));
        assert_eq!(
            server.headers,
            [("authorization".into(), "Bearer secret".into())]
        );
        assert_eq!(
            openai(json!({"type": "mcp"}), "tools[1]").unwrap_err(),
            ConvertError::invalid("tools[1].server_label", "an mcp tool needs a server_label")
        );
        let default = openai(json!({"server_label": "x"}), "t").unwrap();
        assert!(default.approval.required("anything", true));
    }

    #[test]
    fn a_wrong_openai_field_is_named_by_its_path() {
        for (tool, path, words) in [
            (
                json!({"server_label": "x", "allowed_tools": 5}),
                "tools[2].allowed_tools",
                "must be a list of tool names or {tool_names, read_only}",
            ),
            (
                json!({"server_label": "x", "require_approval": "sometimes"}),
                "tools[2].require_approval",
                "must be \"always\", \"never\" or {always, never}",
            ),
            (
                json!({"server_label": "x", "headers": {"x-key": 5}}),
                "tools[2].headers.x-key",
                "invalid type: integer `5`, expected a string",
            ),
            (
                json!({"server_label": 7}),
                "tools[2].server_label",
                "invalid type: integer `7`, expected a string",
            ),
        ] {
            assert_eq!(
                openai(tool, "tools[2]").unwrap_err(),
                ConvertError::invalid(path, words)
            );
        }
    }

    #[test]
    fn anthropic_servers_and_their_toolsets() {
        let servers = [
            json!({"type": "url", "url": "http://h/a", "name": "a", "authorization_token": "t"}),
            json!({"type": "url", "url": "http://h/b", "name": "b"}),
        ];
        let toolsets = [(
            1,
            json!({"type": "mcp_toolset", "mcp_server_name": "a",
                "default_config": {"enabled": false}, "configs": {"echo": {"enabled": true}}}),
        )];
        let found = anthropic(&servers, &toolsets).unwrap();
        assert_eq!(found.len(), 1, "a server without a toolset offers nothing");
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["echo".to_owned()][..])
        );
        assert!(!found[0].approval.required("echo", false));
        let older = [json!({"type": "url", "url": "http://h/a", "name": "a",
            "tool_configuration": {"enabled": true, "allowed_tools": ["x"]}})];
        let found = anthropic(&older, &[]).unwrap();
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["x".to_owned()][..])
        );
        let pinned = [(
            0,
            json!({"type": "mcp_toolset", "mcp_server_name": "a", "tools": [{"name": "y"}, "z"]}),
        )];
        let found = anthropic(&older[..1], &pinned).unwrap();
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["y".to_owned(), "z".to_owned()][..])
        );
        let unknown = [(0, json!({"type": "mcp_toolset", "mcp_server_name": "z"}))];
        assert_eq!(
            anthropic(&servers, &unknown).unwrap_err(),
            ConvertError::invalid(
                "tools.0.mcp_server_name",
                "\"z\" is not one of the request's mcp_servers"
            )
        );
        assert_eq!(
            anthropic(&[json!({"name": "a", "url": ["x"]})], &[]).unwrap_err(),
            ConvertError::invalid(
                "mcp_servers.0.url",
                "invalid type: sequence, expected a string"
            )
        );
    }

    #[test]
    fn a_toolset_defers_by_default_and_each_config_overrides_it() {
        let servers = [json!({"type": "url", "url": "http://h/a", "name": "a"})];
        let deferred = |toolset: Value| anthropic(&servers, &[(0, toolset)]).unwrap().remove(0);
        let server = deferred(json!({"type": "mcp_toolset", "mcp_server_name": "a",
            "default_config": {"defer_loading": true},
            "configs": {"echo": {"defer_loading": false}, "add": {"enabled": false}}}));
        assert!(server.deferred.defers("sum") && !server.deferred.defers("echo"));
        assert!(!server.allows("add", false) && server.allows("sum", false));
        let server = deferred(json!({"type": "mcp_toolset", "mcp_server_name": "a",
            "configs": {"echo": {"defer_loading": true}}}));
        assert!(server.deferred.defers("echo") && !server.deferred.defers("sum"));
        assert!(!toolset(&json!({"configs": {"echo": {"defer_loading": true}}})).defers_all());
        assert!(
            !toolset(&json!({"default_config": {"defer_loading": true},
                "configs": {"echo": {"defer_loading": false}}}))
            .defers_all()
        );
        assert!(toolset(&json!({"default_config": {"defer_loading": true}})).defers_all());
        let mut loaded = server.deferred.clone();
        loaded.load("echo");
        assert!(!loaded.defers("echo"));
        let pinned = deferred(json!({"type": "mcp_toolset", "mcp_server_name": "a",
            "tools": ["y", "z"], "configs": {"z": {"enabled": false}}}));
        assert_eq!(pinned.allowed_tools.as_deref(), Some(&["y".to_owned()][..]));
    }
}
