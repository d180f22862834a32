//! A Messages request's tools and `tool_choice`: custom tools compiled under the `api`
//! profile, Anthropic's tool search tool kept for the gateway to run, Anthropic's other
//! tools set aside (they cannot run here), the MCP connector's toolsets, and a choice that
//! must name an offered tool.

use serde_json::{Value, json};
use switchboard_tools::{Toolset, quote, quote_value, truncate_message};
use switchboard_wire::anthropic::tool_search::{SearchKind, search_kind};
use switchboard_wire::anthropic::{AnthropicTool, AnthropicToolChoice};
use switchboard_wire::mcp::McpToolset;
use switchboard_wire::path::PathStyle;

use super::blocks::needed;
use super::request::{ChoiceKind, Tool, ToolChoice};
use crate::api::fields::{Invalid, Sent, invalid};
use switchboard_pipeline::compile_converted;

/// Characters of the list of server tools a problem names (the names are the client's).
const MAX_NAMES_CHARS: usize = 200;

/// The request's tools, sorted out.
#[derive(Debug, Default)]
pub(super) struct Tools {
    pub(super) compiled: Toolset,
    pub(super) custom: Vec<AnthropicTool>,
    pub(super) deferred: Vec<String>,
    pub(super) dropped: Vec<String>,
    /// The MCP connector's toolsets, each with its position in `tools`.
    pub(super) toolsets: Vec<(usize, McpToolset)>,
    /// The tool search tool, by its name, which the gateway runs over the deferred tools.
    pub(super) search: Option<(String, SearchKind)>,
}

pub(super) fn check_tools(list: Vec<Tool>, problems: &mut Vec<Invalid>) -> Tools {
    let mut tools = Tools::default();
    // The position in `tools` of each custom tool, in the order they are compiled.
    let mut positions = Vec::new();
    let before = problems.len();
    for (index, tool) in list.into_iter().enumerate() {
        let at = format!("tools.{index}");
        if matches!(&tool.kind, Sent::Given(kind) if kind == "mcp_toolset") {
            let toolset = McpToolset {
                mcp_server_name: tool.mcp_server_name,
                default_config: tool.default_config,
                configs: tool.configs,
                tools: tool.tools,
            };
            tools.toolsets.push((index, toolset));
            continue;
        }
        let Some(name) = tool.name else {
            problems.push(invalid(format!("{at}.name"), "each tool needs a name"));
            continue;
        };
        match tool.kind {
            Sent::Absent => {}
            Sent::Given(kind) if kind == "custom" => {}
            Sent::Given(kind) if search_kind(&kind).is_some() => {
                if tools.search.is_some() {
                    problems.push(invalid(
                        format!("{at}.type"),
                        "a request may offer one tool search tool",
                    ));
                }
                tools.search = search_kind(&kind).map(|kind| (name, kind));
                continue;
            }
            Sent::Given(_) => {
                tools.dropped.push(name);
                continue;
            }
            Sent::Wrong(kind) => {
                problems.push(invalid(
                    format!("{at}.type"),
                    format!("expected a string, got {}", quote_value(&kind)),
                ));
                continue;
            }
        }
        let Some(input_schema) = tool.input_schema.filter(Value::is_object) else {
            problems.push(invalid(
                format!("{at}.input_schema"),
                "a custom tool needs its input_schema, a JSON Schema object",
            ));
            continue;
        };
        if tool.defer_loading == Some(true) {
            // Anthropic caches the prompt up to a marked tool; a deferred one is not in it.
            if tool.extra.contains_key("cache_control") {
                problems.push(invalid(
                    format!("{at}.cache_control"),
                    "a tool with defer_loading cannot have cache_control",
                ));
            }
            tools.deferred.push(name.clone());
        }
        positions.push(index);
        tools.custom.push(AnthropicTool {
            name,
            description: tool.description,
            input_schema,
            extra: tool.extra,
        });
    }
    // Every tool deferred, custom or an MCP toolset's, and nothing to find them with.
    if tools.search.is_none()
        && !(tools.custom.is_empty() && tools.toolsets.is_empty())
        && tools.deferred.len() == tools.custom.len()
        && tools
            .toolsets
            .iter()
            .all(|(_, toolset)| toolset.defers_all())
    {
        problems.push(invalid(
            "tools",
            "every tool has defer_loading: offer a tool search tool (tool_search_tool_regex_20251119 or tool_search_tool_bm25_20251119) or at least one tool without it",
        ));
    }
    if problems.len() > before || tools.custom.is_empty() {
        return tools;
    }
    // What the compiled tools are made of, which keys them in the cache.
    let made_of: Vec<_> = tools
        .custom
        .iter()
        .map(|tool| (&tool.name, &tool.description, &tool.input_schema))
        .collect();
    // In OpenAI's function shape, built only for a list not compiled before.
    let functions = || {
        Value::Array(
            made_of
                .iter()
                .map(|(name, description, schema)| {
                    let mut function = json!({"name": name, "parameters": schema});
                    if let Some(description) = description {
                        function["description"] = json!(description);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect(),
        )
    };
    match compile_converted("anthropic", &made_of, functions) {
        Ok(compiled) => tools.compiled = compiled,
        Err(found) => {
            for problem in found.0 {
                problems.push(invalid(
                    tool_path(&problem.path, &positions),
                    problem.message,
                ));
            }
        }
    }
    tools
}

/// A problem's pointer into the compiled function list as a path into `tools`:
/// `/1/function/parameters/type` → `tools.3.input_schema.type`.
fn tool_path(pointer: &str, positions: &[usize]) -> String {
    let rest = pointer.strip_prefix('/').unwrap_or(pointer);
    let (compiled, below) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(index) = compiled
        .parse::<usize>()
        .ok()
        .and_then(|compiled| positions.get(compiled).copied())
    else {
        return "tools".to_owned();
    };
    let at = PathStyle::Dots.item("tools", index);
    // The function's fields are the tool's own, but its parameters are `input_schema`.
    let below = below.strip_prefix("function").unwrap_or(below);
    match below.strip_prefix("/parameters") {
        Some(schema) => PathStyle::Dots.pointer(&format!("{at}.input_schema"), schema),
        None => PathStyle::Dots.pointer(&at, below),
    }
}

pub(super) fn check_tool_choice(
    choice: Option<ToolChoice>,
    tools: &Tools,
    problems: &mut Vec<Invalid>,
) -> Option<AnthropicToolChoice> {
    let choice = choice?;
    let disable_parallel_tool_use = choice.disable_parallel_tool_use;
    let mut custom = tools.custom.iter().map(|tool| &tool.name);
    let tools_broken = problems
        .iter()
        .any(|problem| problem.param.starts_with("tools"));
    match choice.kind {
        Sent::Given(ChoiceKind::Auto) => Some(AnthropicToolChoice::Auto {
            disable_parallel_tool_use,
        }),
        Sent::Given(ChoiceKind::None) => Some(AnthropicToolChoice::None),
        Sent::Given(ChoiceKind::Any) => {
            if custom.next().is_none() && !tools_broken {
                let message = if tools.dropped.is_empty() {
                    "\"any\" needs at least one tool in tools".to_owned()
                } else {
                    format!(
                        "\"any\" would force a server tool ({}), which cannot run on this gateway",
                        truncate_message(tools.dropped.join(", "), MAX_NAMES_CHARS)
                    )
                };
                problems.push(invalid("tool_choice.type", message));
            }
            Some(AnthropicToolChoice::Any {
                disable_parallel_tool_use,
            })
        }
        Sent::Given(ChoiceKind::Tool) => {
            let name = needed(
                choice.name,
                "tool_choice",
                "name",
                "name the tool the model must use",
                problems,
            )?;
            if tools.dropped.contains(&name) {
                problems.push(invalid(
                    "tool_choice.name",
                    format!(
                        "{} is a server tool, which cannot run on this gateway",
                        quote(&name)
                    ),
                ));
            } else if !custom.any(|tool| *tool == name) && !tools_broken {
                problems.push(invalid(
                    "tool_choice.name",
                    format!("{} is not one of the request's tools", quote(&name)),
                ));
            }
            Some(AnthropicToolChoice::Tool {
                name,
                disable_parallel_tool_use,
            })
        }
        other => {
            problems.push(invalid(
                "tool_choice.type",
                format!(
                    "must be \"auto\", \"any\", \"tool\" or \"none\", got {}",
                    other.quoted()
                ),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tool_path;

    #[test]
    fn a_compiled_pointer_names_the_tool_by_its_place_in_tools() {
        let positions = [0, 3];
        assert_eq!(
            tool_path("/1/function/parameters/properties/a~1b/type", &positions),
            "tools.3.input_schema.properties.a/b.type"
        );
        assert_eq!(
            tool_path("/1/function/parameters", &positions),
            "tools.3.input_schema"
        );
        assert_eq!(tool_path("/0/function/name", &positions), "tools.0.name");
        assert_eq!(tool_path("/7/function/name", &positions), "tools");
        assert_eq!(tool_path("", &positions), "tools");
    }
}
