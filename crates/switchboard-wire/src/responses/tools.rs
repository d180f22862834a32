//! The Responses API's tools as plain function tools every backend understands, and the
//! way back from a model's call to the item the client expects:
//!
//! - `function`: as it is;
//! - `custom` (free-form input, e.g. Codex's `apply_patch` with a Lark grammar): a function
//!   with one string parameter `input`, the format's definition in its description; its
//!   calls come back as `custom_tool_call` with that text as `input`;
//! - `namespace` (a named group of functions): flattened to `NAMESPACE__NAME` (tools of the
//!   default namespace `functions` keep their own name); calls come back with `namespace`;
//! - client-executed `tool_search` and `local_shell`: functions whose calls come back as
//!   `tool_search_call` and `local_shell_call`;
//! - the hosted `tool_search` (no `execution`, or `"server"`): taken out into
//!   [`OfferedTools::search`] for the server side to run over the tools marked
//!   `defer_loading` (functions, a namespace's functions, `mcp` servers), which
//!   [`OfferedTools::deferred`] and [`OfferedTools::deferred_servers`] name; a
//!   `tool_search_output` of the conversation loads what it lists
//!   ([`OfferedTools::load_all`]);
//! - `mcp` servers: taken out into [`OfferedTools::mcp`], for the server side to run;
//! - other hosted tools (`web_search`, `file_search`, …), which nothing here can run: left
//!   out, and named in [`OfferedTools::dropped`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_tools::{FunctionDefinition, ToolDefinition, ToolKind};

use super::items::Execution;
use crate::ConvertError;
use crate::anthropic::tool_search::SearchKind;
use crate::mcp::{AllowedTools, McpServerRequest, McpTool};
use crate::path::{PathStyle, typed};

/// The namespace whose tools a model calls by their bare name (OpenAI's own default).
pub const DEFAULT_NAMESPACE: &str = "functions";

/// What a model-facing function stands for in the client's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallKind {
    Function {
        name: String,
        namespace: Option<String>,
    },
    Custom {
        name: String,
        namespace: Option<String>,
    },
    ToolSearch,
    LocalShell,
}

/// The request's tools as offered to the model.
#[derive(Debug, Clone, Default)]
pub struct OfferedTools {
    /// Plain function tools, in the order the client listed them.
    pub definitions: Vec<ToolDefinition>,
    /// Where each definition came from in the request (`tools[2].tools[0]`), same order.
    pub sources: Vec<String>,
    /// What each model-facing name stands for.
    pub kinds: HashMap<String, CallKind>,
    /// Hosted tools left out, by type, without repeats.
    pub dropped: Vec<String>,
    /// MCP servers (`{"type": "mcp"}`) for the server side to run.
    pub mcp: Vec<McpServerRequest>,
    /// `tool_choice: {"type": "mcp", …}`: the server (by label), and the tool of it, that
    /// the model must call; only the server side knows the tool's model-facing name.
    pub mcp_choice: Option<McpChoice>,
    /// The hosted `tool_search`, for the server side to run.
    pub search: Option<SearchKind>,
    /// Function and custom tools marked `defer_loading` (model-facing names), which a
    /// hosted search offers once it finds them; none that a `tool_search_output` of the
    /// conversation loaded.
    pub deferred: Vec<String>,
    /// What a search's output shows of each deferred tool, by model-facing name.
    pub loadable: HashMap<String, Loadable>,
    /// What the model is told of the deferred tools before it searches: each deferred
    /// function's name and description, a namespace's or an MCP server's own.
    pub shown: Vec<(String, Option<String>)>,
    /// Labels of the `mcp` servers marked `defer_loading`.
    pub deferred_servers: Vec<String>,
    /// MCP tools a `tool_search_output` of the conversation loaded: (server label, tool).
    pub loaded_mcp: Vec<(String, String)>,
    /// Names a `tool_search_output` of the conversation loaded (model-facing).
    loaded: Vec<String>,
    /// Adding tools a search's output lists: loaded, not deferred, not new servers.
    loading: bool,
    /// Each namespace's description, by name, for a search's output.
    namespaces: HashMap<String, String>,
}

/// OpenAI's `{"type": "tool_search"}` tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(expecting = "a tool_search tool object")]
pub struct ToolSearchTool {
    #[serde(default)]
    pub execution: Option<Execution>,
    /// For a client-executed search: what the model reads of it.
    #[serde(default)]
    pub description: Option<String>,
    /// For a client-executed search: its input's schema.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// The gateway's own, for a hosted search: a regular expression (`"regex"`, input
    /// `{"pattern"}`) or words ranked by BM25 (`"bm25"`, input `{"query"}`, the default).
    #[serde(default)]
    pub mode: Option<SearchKind>,
}

/// A `function` or `custom` tool (also a namespace's member), read into its type by the
/// conversion, with every field OpenAI defines for them, so that a search's output can
/// show a deferred one as the client defined it. Not through serde's `flatten`, which
/// would copy the parameters' schema into a buffer and out again.
#[derive(Debug, Serialize, Deserialize)]
#[serde(expecting = "a function tool object")]
struct FunctionTool {
    #[serde(rename = "type")]
    kind: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Moved in as it is, not read through serde (which would build every object of it
    /// again).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
    /// A custom tool's input format (a grammar, or text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    defer_loading: Option<bool>,
}

/// A `namespace` tool: a named group of functions.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a namespace tool object")]
struct NamespaceTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    tools: Vec<Value>,
}

/// A deferred tool as a search's output shows it once found.
#[derive(Debug, Clone, PartialEq)]
pub enum Loadable {
    /// A function or custom tool as the client defined it, with the namespace it is in
    /// (its name and description).
    Tool {
        namespace: Option<(String, String)>,
        tool: Value,
    },
    /// A tool of a deferred `mcp` server.
    Mcp { server_label: String, tool: String },
}

/// One entry of a `tool_search_output`'s `tools`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum LoadedEntry {
    Tool(Value),
    Namespace {
        #[serde(rename = "type")]
        kind: &'static str,
        name: String,
        description: String,
        tools: Vec<Value>,
    },
    Mcp {
        #[serde(rename = "type")]
        kind: &'static str,
        server_label: String,
        allowed_tools: Vec<String>,
    },
}

/// The `tools` of a hosted search's `tool_search_output`: the tools `found` (model-facing
/// names, best first) as the client defined them, a namespace's members inside their
/// namespace and a server's tools inside their `mcp` entry, each group where its first
/// tool was found.
pub fn loaded_tools(found: &[String], loadable: &HashMap<String, Loadable>) -> Vec<Value> {
    let mut entries: Vec<LoadedEntry> = Vec::new();
    for name in found {
        match loadable.get(name) {
            None => {}
            Some(Loadable::Tool {
                namespace: None,
                tool,
            }) => entries.push(LoadedEntry::Tool(tool.clone())),
            Some(Loadable::Tool {
                namespace: Some((outer, description)),
                tool,
            }) => {
                let group = entries.iter_mut().find_map(|entry| match entry {
                    LoadedEntry::Namespace { name, tools, .. } if name == outer => Some(tools),
                    _ => None,
                });
                match group {
                    Some(tools) => tools.push(tool.clone()),
                    None => entries.push(LoadedEntry::Namespace {
                        kind: "namespace",
                        name: outer.clone(),
                        description: description.clone(),
                        tools: vec![tool.clone()],
                    }),
                }
            }
            Some(Loadable::Mcp { server_label, tool }) => {
                let group = entries.iter_mut().find_map(|entry| match entry {
                    LoadedEntry::Mcp {
                        server_label: label,
                        allowed_tools,
                        ..
                    } if label == server_label => Some(allowed_tools),
                    _ => None,
                });
                match group {
                    Some(tools) => tools.push(tool.clone()),
                    None => entries.push(LoadedEntry::Mcp {
                        kind: "mcp",
                        server_label: server_label.clone(),
                        allowed_tools: vec![tool.clone()],
                    }),
                }
            }
        }
    }
    entries
        .into_iter()
        .filter_map(|entry| serde_json::to_value(entry).ok())
        .collect()
}

/// A `tool_choice` that forces a call to an MCP server's tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpChoice {
    pub label: String,
    /// The server's own name for the tool; `None`: any tool of the server.
    pub name: Option<String>,
}

/// The name the model calls a tool by.
pub fn model_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if namespace != DEFAULT_NAMESPACE => format!("{namespace}__{name}"),
        _ => name.to_owned(),
    }
}

impl OfferedTools {
    /// Adds a list of tools found at `path` (`tools`, `input[0].tools`). The tools are
    /// taken, so that their schemas move into the definitions instead of being copied.
    pub fn add_all(&mut self, tools: Vec<Value>, path: &str) -> Result<(), ConvertError> {
        for (index, tool) in tools.into_iter().enumerate() {
            self.add(tool, &format!("{path}[{index}]"), None)?;
        }
        Ok(())
    }

    /// Adds the tools a `tool_search_output` at `path` lists: offered from then on, deferred
    /// or not, and an `mcp` entry's `allowed_tools` loaded from the server the request
    /// names, not a server of its own.
    pub fn load_all(&mut self, tools: Vec<Value>, path: &str) -> Result<(), ConvertError> {
        self.loading = true;
        let added = self.add_all(tools, path);
        self.loading = false;
        added
    }

    /// Settles deferral once every tool and the conversation's loaded ones are in: tools
    /// wait for a search only when the request offers the hosted search (without it,
    /// `defer_loading` is a hint for a client's own search, ignored here); a tool the
    /// conversation loaded waits no more.
    pub fn settle_deferred(&mut self) {
        if self.search.is_none() {
            self.deferred.clear();
            self.deferred_servers.clear();
            self.shown.clear();
            return;
        }
        let loaded = std::mem::take(&mut self.loaded);
        self.deferred.retain(|name| !loaded.contains(name));
    }

    /// What the model-facing `name` stands for; unknown names are plain functions.
    pub fn kind(&self, name: &str) -> CallKind {
        self.kinds.get(name).cloned().unwrap_or(CallKind::Function {
            name: name.to_owned(),
            namespace: None,
        })
    }

    /// Keeps only the tools `allowed` names (model-facing), for `allowed_tools`.
    pub fn restrict(&mut self, allowed: &[String]) {
        let keep: Vec<bool> = self
            .definitions
            .iter()
            .map(|definition| allowed.iter().any(|name| name == definition.name()))
            .collect();
        let mut flags = keep.iter();
        self.definitions.retain(|_| *flags.next().unwrap_or(&false));
        let mut flags = keep.iter();
        self.sources.retain(|_| *flags.next().unwrap_or(&false));
        self.kinds.retain(|name, _| allowed.contains(name));
    }

    fn add(
        &mut self,
        tool: Value,
        path: &str,
        namespace: Option<&str>,
    ) -> Result<(), ConvertError> {
        // Its `type` may come after its other fields: read first, then the fields its kind
        // has, into their type.
        let kind = tool
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| ConvertError::invalid(format!("{path}.type"), "each tool needs a type"))?
            .to_owned();
        let definition_kind = matches!(kind.as_str(), "function" | "custom");
        let mut shown = (None, None);
        let mut deferred = None;
        let result = match kind.as_str() {
            "function" | "custom" => {
                // The schema moves into the definition as it is: read through serde, every
                // object of it would be built again.
                let mut tool = tool;
                let parameters = tool
                    .as_object_mut()
                    .and_then(|object| object.remove("parameters"))
                    .filter(|parameters| !parameters.is_null());
                let mut tool: FunctionTool = typed(tool, path, PathStyle::Brackets)?;
                tool.parameters = parameters;
                if tool.name.is_empty() {
                    return Err(ConvertError::invalid(
                        format!("{path}.name"),
                        "a name is required",
                    ));
                }
                let description = tool.description.take().filter(|text| !text.is_empty());
                // A deferred tool's own definition, as a search's output shows it once found.
                if tool.defer_loading == Some(true) && !self.loading {
                    tool.description.clone_from(&description);
                    deferred = serde_json::to_value(&tool).ok();
                }
                shown = (Some(tool.name.clone()), description.clone());
                let model_facing = model_name(namespace, &tool.name);
                let namespace = namespace.map(str::to_owned);
                if kind == "function" {
                    let parameters = tool
                        .parameters
                        .take()
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
                    let definition = function(model_facing, description, parameters, tool.strict);
                    let kind = CallKind::Function {
                        name: tool.name,
                        namespace,
                    };
                    self.offer(definition, path, kind)
                } else {
                    let definition = function(
                        model_facing,
                        Some(custom_description(
                            description.as_deref(),
                            tool.format.as_ref(),
                        )),
                        json!({"type": "object", "properties": {"input": {"type": "string",
                            "description": "The tool's input, as raw text (not JSON)."}},
                            "required": ["input"], "additionalProperties": false}),
                        None,
                    );
                    let kind = CallKind::Custom {
                        name: tool.name,
                        namespace,
                    };
                    self.offer(definition, path, kind)
                }
            }
            "namespace" if namespace.is_none() => {
                let NamespaceTool {
                    name: outer,
                    description,
                    tools,
                } = typed(tool, path, PathStyle::Brackets)?;
                if outer.is_empty() {
                    return Err(ConvertError::invalid(
                        format!("{path}.name"),
                        "a name is required",
                    ));
                }
                let description = description.filter(|text| !text.is_empty());
                let deferred_before = self.deferred.len();
                self.namespaces
                    .insert(outer.clone(), description.clone().unwrap_or_default());
                for (index, inner) in tools.into_iter().enumerate() {
                    self.add(inner, &format!("{path}.tools[{index}]"), Some(&outer))?;
                }
                // A namespace with deferred functions is shown by its own name and
                // description only.
                if self.deferred.len() > deferred_before {
                    self.shown.push((outer, description));
                }
                Ok(())
            }
            "namespace" => Err(ConvertError::invalid(
                format!("{path}.type"),
                "namespaces do not nest",
            )),
            "tool_search" => {
                let search: ToolSearchTool = typed(tool, path, PathStyle::Brackets)?;
                if search.execution == Some(Execution::Client) {
                    let parameters = search.parameters.unwrap_or_else(|| {
                        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
                    });
                    let definition = function(
                        "tool_search".to_owned(),
                        Some(
                            search
                                .description
                                .unwrap_or_else(|| "Searches for more tools.".to_owned()),
                        ),
                        parameters,
                        None,
                    );
                    return self.offer(definition, path, CallKind::ToolSearch);
                }
                if self.search.is_some() {
                    return Err(ConvertError::invalid(
                        path,
                        "a request may offer one hosted tool_search tool",
                    ));
                }
                self.search = Some(search.mode.unwrap_or(SearchKind::Bm25));
                Ok(())
            }
            "local_shell" => {
                let definition = function(
                    "local_shell".to_owned(),
                    Some("Runs a command on the user's machine and returns its output.".to_owned()),
                    json!({"type": "object", "properties": {
                        "command": {"type": "array", "items": {"type": "string"}, "description": "The program and its arguments."},
                        "working_directory": {"type": "string"},
                        "timeout_ms": {"type": "integer"},
                        "env": {"type": "object", "additionalProperties": {"type": "string"}}},
                        "required": ["command"]}),
                    None,
                );
                self.offer(definition, path, CallKind::LocalShell)
            }
            "mcp" => {
                let tool: McpTool = typed(tool, path, PathStyle::Brackets)?;
                if self.loading {
                    // A search's output names the server's tools it loaded.
                    let label = tool.server_label.unwrap_or_default();
                    if let Some(AllowedTools::Names(names)) = tool.allowed_tools {
                        self.loaded_mcp
                            .extend(names.into_iter().map(|name| (label.clone(), name)));
                    }
                    return Ok(());
                }
                let deferred = tool.defer_loading == Some(true);
                let server = McpServerRequest::from_openai(tool, path)?;
                if deferred {
                    self.deferred_servers.push(server.label.clone());
                    self.shown
                        .push((server.label.clone(), server.description.clone()));
                }
                self.mcp.push(server);
                Ok(())
            }
            hosted => {
                if !self.dropped.iter().any(|dropped| dropped == hosted) {
                    self.dropped.push(hosted.to_owned());
                }
                Ok(())
            }
        };
        result?;
        // A function or custom tool just offered: deferred, or loaded by a search's output.
        if let (true, Some(own)) = (definition_kind, &shown.0) {
            let name = model_name(namespace, own);
            if let Some(tool) = deferred {
                let outer = namespace.map(|outer| {
                    let about = self.namespaces.get(outer).cloned().unwrap_or_default();
                    (outer.to_owned(), about)
                });
                if outer.is_none() {
                    self.shown.push((name.clone(), shown.1));
                }
                self.loadable.insert(
                    name.clone(),
                    Loadable::Tool {
                        namespace: outer,
                        tool,
                    },
                );
                self.deferred.push(name);
            } else if self.loading {
                self.loaded.push(name);
            }
        }
        Ok(())
    }

    fn offer(
        &mut self,
        definition: ToolDefinition,
        path: &str,
        kind: CallKind,
    ) -> Result<(), ConvertError> {
        let name = definition.name().to_owned();
        if let Some(position) = self
            .definitions
            .iter()
            .position(|known| known.name() == name)
        {
            // The same tool offered twice (e.g. found again by a tool search) is one tool.
            if self.definitions[position] == definition && self.kinds.get(&name) == Some(&kind) {
                return Ok(());
            }
            return Err(ConvertError::invalid(
                format!("{path}.name"),
                format!(
                    "\"{name}\" is already offered by {}; tool names must be unique",
                    self.sources[position]
                ),
            ));
        }
        self.definitions.push(definition);
        self.sources.push(path.to_owned());
        self.kinds.insert(name, kind);
        Ok(())
    }
}

fn function(
    name: String,
    description: Option<String>,
    parameters: Value,
    strict: Option<bool>,
) -> ToolDefinition {
    ToolDefinition {
        kind: ToolKind::Function,
        function: FunctionDefinition {
            name,
            description,
            parameters: Some(parameters),
            strict,
            output_schema: None,
        },
    }
}

/// A custom tool's description for the model: its own, and the grammar its input follows.
fn custom_description(description: Option<&str>, format: Option<&Value>) -> String {
    let mut text = description
        .unwrap_or("A tool that takes free-form text.")
        .to_owned();
    text.push_str("\n\nPut the tool's whole input, as raw text, in the `input` argument.");
    if let Some(format) = format
        && format.get("type").and_then(Value::as_str) == Some("grammar")
    {
        let syntax = format
            .get("syntax")
            .and_then(Value::as_str)
            .unwrap_or("lark");
        let definition = format
            .get("definition")
            .and_then(Value::as_str)
            .unwrap_or_default();
        text.push_str(&format!(
            " The input must follow this {syntax} grammar:\n{definition}"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_tool_becomes_a_function_an_mcp_server_or_is_dropped() {
        let tools = json!([
            {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
            {"type": "custom", "name": "apply_patch", "description": "Edit files.", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
            {"type": "namespace", "name": "agents", "description": "", "tools": [{"type": "function", "name": "spawn"}]},
            {"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]},
            {"type": "tool_search", "execution": "client", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
            {"type": "local_shell"},
            {"type": "web_search"},
            {"type": "mcp", "server_label": "docs"},
            {"type": "web_search"}
        ]);
        let mut offered = OfferedTools::default();
        offered
            .add_all(tools.as_array().unwrap().clone(), "tools")
            .unwrap();
        let names: Vec<&str> = offered
            .definitions
            .iter()
            .map(ToolDefinition::name)
            .collect();
        assert_eq!(
            names,
            [
                "exec_command",
                "apply_patch",
                "agents__spawn",
                "exec",
                "tool_search",
                "local_shell"
            ]
        );
        assert_eq!(offered.dropped, ["web_search"]);
        assert_eq!(offered.mcp.len(), 1);
        assert_eq!(offered.mcp[0].label, "docs");
        assert_eq!(offered.mcp[0].path, "tools[7]");
        assert_eq!(offered.sources[2], "tools[2].tools[0]");
        assert_eq!(
            offered.kind("agents__spawn"),
            CallKind::Function {
                name: "spawn".into(),
                namespace: Some("agents".into())
            }
        );
        assert_eq!(
            offered.kind("exec"),
            CallKind::Custom {
                name: "exec".into(),
                namespace: Some("functions".into())
            }
        );
        let patch = &offered.definitions[1].function;
        assert!(
            patch
                .description
                .as_deref()
                .unwrap()
                .contains("lark grammar:\nstart: x")
        );
        assert_eq!(
            patch.parameters.as_ref().unwrap()["required"],
            json!(["input"])
        );
    }

    #[test]
    fn a_hosted_search_defers_functions_namespaces_and_servers() {
        let deferred = |name: &str| {
            json!({"type": "function", "name": name, "description": format!("About {name}"),
                "defer_loading": true, "parameters": {"type": "object"}})
        };
        let tools = vec![
            json!({"type": "tool_search", "mode": "regex"}),
            json!({"type": "function", "name": "now"}),
            deferred("weather"),
            json!({"type": "namespace", "name": "crm", "description": "Customers",
                "tools": [deferred("find"), {"type": "function", "name": "count"}]}),
            json!({"type": "mcp", "server_label": "docs", "server_description": "The docs",
                "defer_loading": true}),
        ];
        let mut offered = OfferedTools::default();
        offered.add_all(tools, "tools").unwrap();
        offered.settle_deferred();
        assert_eq!(offered.search, Some(SearchKind::Regex));
        assert_eq!(offered.deferred, ["weather", "crm__find"]);
        assert_eq!(offered.deferred_servers, ["docs"]);
        assert_eq!(
            offered.shown,
            [
                ("weather".to_owned(), Some("About weather".to_owned())),
                ("crm".to_owned(), Some("Customers".to_owned())),
                ("docs".to_owned(), Some("The docs".to_owned())),
            ]
        );
        // Every function is still known (and checked); the search decides what is offered.
        assert_eq!(offered.definitions.len(), 4);
        let mut loadable = offered.loadable.clone();
        loadable.insert(
            "docs_read".into(),
            Loadable::Mcp {
                server_label: "docs".into(),
                tool: "read".into(),
            },
        );
        let found = ["crm__find", "docs_read", "weather"].map(str::to_owned);
        let loaded = loaded_tools(&found, &loadable);
        assert_eq!(loaded[0]["type"], "namespace");
        assert_eq!(loaded[0]["name"], "crm");
        assert_eq!(loaded[0]["description"], "Customers");
        assert_eq!(loaded[0]["tools"][0]["name"], "find");
        assert_eq!(
            loaded[1],
            json!({"type": "mcp", "server_label": "docs", "allowed_tools": ["read"]})
        );
        assert_eq!(loaded[2], deferred("weather"));

        // A search's output in the conversation loads what it lists.
        let mut again = OfferedTools::default();
        again
            .add_all(
                vec![
                    json!({"type": "tool_search"}),
                    deferred("weather"),
                    json!({"type": "mcp", "server_label": "docs", "defer_loading": true}),
                ],
                "tools",
            )
            .unwrap();
        again.load_all(loaded, "input[1].tools").unwrap();
        again.settle_deferred();
        assert_eq!(again.search, Some(SearchKind::Bm25));
        assert!(again.deferred.is_empty(), "{:?}", again.deferred);
        assert_eq!(again.loaded_mcp, [("docs".to_owned(), "read".to_owned())]);
        assert_eq!(again.mcp.len(), 1);
    }

    #[test]
    fn without_a_hosted_search_nothing_waits() {
        let mut offered = OfferedTools::default();
        offered
            .add_all(
                vec![
                    json!({"type": "tool_search", "execution": "client"}),
                    json!({"type": "function", "name": "f", "defer_loading": true}),
                ],
                "tools",
            )
            .unwrap();
        offered.settle_deferred();
        assert!(offered.search.is_none() && offered.deferred.is_empty());
        let error = OfferedTools::default()
            .add_all(
                vec![json!({"type": "function", "name": "f", "defer_loading": "yes"})],
                "tools",
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tools[0].defer_loading: invalid type: string \"yes\", expected a boolean"
        );
        let error = OfferedTools::default()
            .add_all(
                vec![json!({"type": "tool_search", "mode": "fuzzy"})],
                "tools",
            )
            .unwrap_err();
        assert!(error.to_string().starts_with("tools[0].mode"), "{error}");
    }

    #[test]
    fn mistakes_name_their_place() {
        let mut offered = OfferedTools::default();
        let error = offered
            .add_all(
                vec![json!({"type": "namespace", "name": "n", "tools": [{"type": "function"}]})],
                "tools",
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tools[0].tools[0].name: missing field `name`"
        );
        let twice = [
            json!({"type": "function", "name": "f"}),
            json!({"type": "custom", "name": "f"}),
        ];
        let error = OfferedTools::default()
            .add_all(twice.to_vec(), "tools")
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("tools[1].name: \"f\" is already offered by tools[0]"),
            "{error}"
        );
    }
}
