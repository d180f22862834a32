//! MCP servers a request names for the server side to run while the model works: OpenAI's
//! `{"type": "mcp", …}` tool (Responses, and Chat Completions by the same fields) and
//! Anthropic's MCP connector (`mcp_servers` with `mcp_toolset` tools, every beta shape).
//! Both become one [`McpServerRequest`]; which servers may actually run is the gateway's
//! decision, not this crate's.

use serde_json::{Map, Value};

use crate::ConvertError;

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
    /// Only tools annotated `readOnlyHint` (OpenAI's `allowed_tools.read_only`).
    pub read_only: bool,
    pub approval: Approval,
    /// Headers for a server the request itself names (`headers`, `authorization`,
    /// Anthropic's `authorization_token`). Secret: never logged or echoed.
    pub headers: Vec<(String, String)>,
    /// Where the request named it (`tools[2]`, `mcp_servers[0]`), for errors.
    pub path: String,
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

/// A set of a server's tools: by name, or the read-only ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolFilter {
    pub tool_names: Vec<String>,
    pub read_only: bool,
}

impl ToolFilter {
    fn matches(&self, tool: &str, read_only: bool) -> bool {
        self.tool_names.iter().any(|name| name == tool) || (self.read_only && read_only)
    }

    fn parse(value: &Value, path: &str) -> Result<Self, ConvertError> {
        let object = value
            .as_object()
            .ok_or_else(|| ConvertError::invalid(path, "must be an object"))?;
        Ok(Self {
            tool_names: match object.get("tool_names") {
                None | Some(Value::Null) => Vec::new(),
                Some(names) => names_list(names, &format!("{path}.tool_names"))?,
            },
            read_only: object
                .get("read_only")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
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
    pub fn from_openai(tool: &Value, path: &str) -> Result<Self, ConvertError> {
        let object = tool
            .as_object()
            .ok_or_else(|| ConvertError::invalid(path, "must be an object"))?;
        let text = |field: &str| object.get(field).and_then(Value::as_str).map(str::to_owned);
        let label = text("server_label")
            .filter(|label| !label.is_empty())
            .ok_or_else(|| {
                ConvertError::invalid(
                    format!("{path}.server_label"),
                    "an mcp tool needs a server_label",
                )
            })?;
        let url = text("server_url");
        if url.is_none() && object.contains_key("connector_id") {
            return Err(ConvertError::invalid(
                format!("{path}.connector_id"),
                "connectors are OpenAI's own; name a server by server_label or server_url",
            ));
        }
        let (allowed_tools, read_only) = match object.get("allowed_tools") {
            None | Some(Value::Null) => (None, false),
            Some(list @ Value::Array(_)) => (
                Some(names_list(list, &format!("{path}.allowed_tools"))?),
                false,
            ),
            Some(filter @ Value::Object(_)) => {
                let filter = ToolFilter::parse(filter, &format!("{path}.allowed_tools"))?;
                let names = filter.tool_names;
                ((!names.is_empty()).then_some(names), filter.read_only)
            }
            Some(_) => {
                return Err(ConvertError::invalid(
                    format!("{path}.allowed_tools"),
                    "must be a list of tool names or {tool_names, read_only}",
                ));
            }
        };
        let approval = match object.get("require_approval") {
            None | Some(Value::Null) => Approval::Always,
            Some(Value::String(mode)) if mode == "always" => Approval::Always,
            Some(Value::String(mode)) if mode == "never" => Approval::Never,
            Some(Value::Object(filters)) => {
                let filter = |field: &str| match filters.get(field) {
                    None | Some(Value::Null) => Ok(ToolFilter::default()),
                    Some(value) => {
                        ToolFilter::parse(value, &format!("{path}.require_approval.{field}"))
                    }
                };
                Approval::Filter {
                    always: filter("always")?,
                    never: filter("never")?,
                }
            }
            Some(_) => {
                return Err(ConvertError::invalid(
                    format!("{path}.require_approval"),
                    "must be \"always\", \"never\" or {always, never}",
                ));
            }
        };
        let mut headers = match object.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(headers)) => string_map(headers, &format!("{path}.headers"))?,
            Some(_) => {
                return Err(ConvertError::invalid(
                    format!("{path}.headers"),
                    "must be an object of strings",
                ));
            }
        };
        if let Some(token) = text("authorization") {
            headers.push(("authorization".into(), bearer(&token)));
        }
        Ok(Self {
            label,
            url,
            description: text("server_description"),
            allowed_tools,
            excluded_tools: Vec::new(),
            read_only,
            approval,
            headers,
            path: path.to_owned(),
        })
    }

    /// Anthropic's MCP connector: the `mcp_servers` entries, each with the `mcp_toolset`
    /// tool that names it (the 2025-11-20 and 2026-09-15 betas) or its own
    /// `tool_configuration` (the 2025-04-04 beta). The connector runs tools without asking.
    pub fn from_anthropic(
        servers: &[Value],
        toolsets: &[(usize, Value)],
    ) -> Result<Vec<Self>, ConvertError> {
        let mut found = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let path = format!("mcp_servers[{index}]");
            let object = server
                .as_object()
                .ok_or_else(|| ConvertError::invalid(&path, "must be an object"))?;
            let text = |field: &str| object.get(field).and_then(Value::as_str).map(str::to_owned);
            let label = text("name")
                .filter(|name| !name.is_empty())
                .ok_or_else(|| {
                    ConvertError::invalid(format!("{path}.name"), "each MCP server needs a name")
                })?;
            if found.iter().any(|known: &Self| known.label == label) {
                return Err(ConvertError::invalid(
                    format!("{path}.name"),
                    format!("\"{label}\" names two MCP servers"),
                ));
            }
            let url = text("url").ok_or_else(|| {
                ConvertError::invalid(format!("{path}.url"), "each MCP server needs a url")
            })?;
            let mut request = Self {
                label,
                url: Some(url),
                description: None,
                allowed_tools: None,
                excluded_tools: Vec::new(),
                read_only: false,
                approval: Approval::Never,
                headers: text("authorization_token")
                    .map(|token| vec![("authorization".to_owned(), bearer(&token))])
                    .unwrap_or_default(),
                path: path.clone(),
            };
            // 2025-04-04: the server carries its own tool configuration.
            if let Some(configuration) = object.get("tool_configuration") {
                if configuration.get("enabled").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                if let Some(allowed) = configuration.get("allowed_tools")
                    && !allowed.is_null()
                {
                    request.allowed_tools = Some(names_list(
                        allowed,
                        &format!("{path}.tool_configuration.allowed_tools"),
                    )?);
                }
            }
            found.push(request);
        }
        let mut configured = vec![false; found.len()];
        for (index, toolset) in toolsets {
            let path = format!("tools[{index}]");
            let name = toolset
                .get("mcp_server_name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
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
            let (allowed, excluded) = toolset_tools(toolset, &path)?;
            found[position].allowed_tools = allowed;
            found[position].excluded_tools = excluded;
        }
        // Since 2025-11-20 a server's tools are offered only through its toolset.
        if toolsets.is_empty() {
            return Ok(found);
        }
        Ok(found
            .into_iter()
            .zip(configured)
            .filter_map(|(server, configured)| configured.then_some(server))
            .collect())
    }
}

/// A toolset's tools: `default_config.enabled` for every tool, `configs.NAME.enabled` for
/// one; the 2026-09-15 beta's pinned `tools` list names them outright. The tools allowed
/// (`None`: all) and those excluded.
type Allowed = (Option<Vec<String>>, Vec<String>);

fn toolset_tools(toolset: &Value, path: &str) -> Result<Allowed, ConvertError> {
    if let Some(pinned) = toolset.get("tools").filter(|tools| !tools.is_null()) {
        let list = pinned.as_array().ok_or_else(|| {
            ConvertError::invalid(format!("{path}.tools"), "must be a list of tools")
        })?;
        let mut names = Vec::new();
        for (index, tool) in list.iter().enumerate() {
            let name = tool
                .as_str()
                .or_else(|| tool.get("name").and_then(Value::as_str))
                .ok_or_else(|| {
                    ConvertError::invalid(format!("{path}.tools[{index}]"), "names a tool")
                })?;
            names.push(name.to_owned());
        }
        return Ok((Some(names), Vec::new()));
    }
    let enabled_by_default = toolset
        .pointer("/default_config/enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let configs = toolset.get("configs").and_then(Value::as_object);
    let named = |enabled: bool| -> Vec<String> {
        configs
            .into_iter()
            .flatten()
            .filter(|(_, config)| {
                config
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .unwrap_or(true)
                    == enabled
            })
            .map(|(name, _)| name.clone())
            .collect()
    };
    if enabled_by_default {
        return Ok((None, named(false)));
    }
    Ok((Some(named(true)), Vec::new()))
}

fn bearer(token: &str) -> String {
    if token.to_ascii_lowercase().starts_with("bearer ") {
        token.to_owned()
    } else {
        format!("Bearer {token}")
    }
}

fn names_list(value: &Value, path: &str) -> Result<Vec<String>, ConvertError> {
    value
        .as_array()
        .and_then(|names| {
            names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| ConvertError::invalid(path, "must be a list of tool names"))
}

fn string_map(map: &Map<String, Value>, path: &str) -> Result<Vec<(String, String)>, ConvertError> {
    map.iter()
        .map(|(name, value)| {
            value
                .as_str()
                .map(|value| (name.to_ascii_lowercase(), value.to_owned()))
                .ok_or_else(|| ConvertError::invalid(format!("{path}.{name}"), "must be a string"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_openai_mcp_tool_with_filters() {
        let tool = json!({"type": "mcp", "server_label": "fs", "server_url": "http://h/mcp",
            "allowed_tools": {"tool_names": ["read"], "read_only": false},
            "require_approval": {"never": {"tool_names": ["read"]}},
            "authorization": "secret"});
        let server = McpServerRequest::from_openai(&tool, "tools[0]").unwrap();
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
            McpServerRequest::from_openai(&json!({"type": "mcp"}), "tools[1]").unwrap_err(),
            ConvertError::invalid("tools[1].server_label", "an mcp tool needs a server_label")
        );
        let default = McpServerRequest::from_openai(&json!({"server_label": "x"}), "t").unwrap();
        assert!(default.approval.required("anything", true));
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
        let found = McpServerRequest::from_anthropic(&servers, &toolsets).unwrap();
        assert_eq!(found.len(), 1, "a server without a toolset offers nothing");
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["echo".to_owned()][..])
        );
        assert!(!found[0].approval.required("echo", false));
        let older = [json!({"type": "url", "url": "http://h/a", "name": "a",
            "tool_configuration": {"enabled": true, "allowed_tools": ["x"]}})];
        let found = McpServerRequest::from_anthropic(&older, &[]).unwrap();
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["x".to_owned()][..])
        );
        let pinned = [(
            0,
            json!({"type": "mcp_toolset", "mcp_server_name": "a", "tools": [{"name": "y"}]}),
        )];
        let found = McpServerRequest::from_anthropic(&older[..1], &pinned).unwrap();
        assert_eq!(
            found[0].allowed_tools.as_deref(),
            Some(&["y".to_owned()][..])
        );
        let unknown = [(0, json!({"type": "mcp_toolset", "mcp_server_name": "z"}))];
        assert!(McpServerRequest::from_anthropic(&servers, &unknown).is_err());
    }
}
