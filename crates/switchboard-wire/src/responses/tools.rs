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
//! - `mcp` servers: taken out into [`OfferedTools::mcp`], for the server side to run;
//! - other hosted tools (`web_search`, `file_search`, …), which nothing here can run: left
//!   out, and named in [`OfferedTools::dropped`].

use std::collections::HashMap;

use serde_json::{Value, json};
use switchboard_tools::{FunctionDefinition, ToolDefinition, ToolKind};

use crate::ConvertError;
use crate::mcp::McpServerRequest;
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
        mut tool: Value,
        path: &str,
        namespace: Option<&str>,
    ) -> Result<(), ConvertError> {
        let kind = tool
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| ConvertError::invalid(format!("{path}.type"), "each tool needs a type"))?
            .to_owned();
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| ConvertError::invalid(format!("{path}.name"), "a name is required"));
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned);
        let mut take = |field: &str| tool.get_mut(field).map(Value::take);
        match kind.as_str() {
            "function" => {
                let name = name?;
                let strict = take("strict").and_then(|strict| strict.as_bool());
                let parameters = match take("parameters") {
                    None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                    Some(parameters) => parameters,
                };
                let definition = function(
                    model_name(namespace, &name),
                    description,
                    parameters,
                    strict,
                );
                let kind = CallKind::Function {
                    name,
                    namespace: namespace.map(str::to_owned),
                };
                self.offer(definition, path, kind)
            }
            "custom" => {
                let name = name?;
                let definition = function(
                    model_name(namespace, &name),
                    Some(custom_description(
                        description.as_deref(),
                        take("format").as_ref(),
                    )),
                    json!({"type": "object", "properties": {"input": {"type": "string",
                        "description": "The tool's input, as raw text (not JSON)."}},
                        "required": ["input"], "additionalProperties": false}),
                    None,
                );
                let kind = CallKind::Custom {
                    name,
                    namespace: namespace.map(str::to_owned),
                };
                self.offer(definition, path, kind)
            }
            "namespace" if namespace.is_none() => {
                let outer = name?;
                let Some(Value::Array(tools)) = take("tools") else {
                    return Err(ConvertError::invalid(
                        format!("{path}.tools"),
                        "a namespace needs its list of tools",
                    ));
                };
                for (index, inner) in tools.into_iter().enumerate() {
                    self.add(inner, &format!("{path}.tools[{index}]"), Some(&outer))?;
                }
                Ok(())
            }
            "namespace" => Err(ConvertError::invalid(
                format!("{path}.type"),
                "namespaces do not nest",
            )),
            "tool_search" if tool.get("execution").and_then(Value::as_str) == Some("client") => {
                let parameters = tool.get_mut("parameters").map(Value::take).unwrap_or_else(|| {
                    json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
                });
                let definition = function(
                    "tool_search".to_owned(),
                    Some(description.unwrap_or_else(|| "Searches for more tools.".to_owned())),
                    parameters,
                    None,
                );
                self.offer(definition, path, CallKind::ToolSearch)
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
                let tool = typed(tool, path, PathStyle::Brackets)?;
                self.mcp.push(McpServerRequest::from_openai(tool, path)?);
                Ok(())
            }
            hosted => {
                if !self.dropped.iter().any(|dropped| dropped == hosted) {
                    self.dropped.push(hosted.to_owned());
                }
                Ok(())
            }
        }
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
            "tools[0].tools[0].name: a name is required"
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
