//! Checking the exports of an evaluated character module: each required export present with
//! the right type, the tool list valid under the `character` profile, and the class able to
//! do what the file declares. Every problem is collected, each naming its export.

use std::time::Duration;

use rquickjs::{Constructor, Ctx, Object, Value};
use serde_json::Value as Json;
use switchboard_tools::{Profile, Toolset};

use crate::clock::Clock;
use crate::exception::{Failure, type_name};
use crate::mcp::{self, McpServerUse};
use crate::rejection::{Problem, json_type, kind};

/// The longest `TOOL_TIMEOUT_MS` a character may declare.
pub(crate) const MAX_TOOL_TIMEOUT_MS: u64 = 10_000;

const KNOWN_EXPORTS: &[&str] = &[
    "CHARACTER_NAME",
    "VOICE_SOURCE",
    "INSTRUCTIONS",
    "METADATA",
    "TOOLS",
    "TOOL_TIMEOUT_MS",
    "MCP_SERVERS",
    "PromptGenerator",
];

/// What a character file declares, in Rust terms; shared by every thread.
#[derive(Debug)]
pub(crate) struct Declaration {
    pub name: String,
    pub voice_source: Json,
    pub instructions: Json,
    pub metadata: Option<Json>,
    pub listed: bool,
    pub tools: Toolset,
    pub timeout: Duration,
    pub mcp_servers: Vec<McpServerUse>,
}

/// The declaration and the JavaScript values the engine keeps to start conversations.
pub(crate) struct Inspected<'js> {
    pub declaration: Declaration,
    pub class: Constructor<'js>,
    pub instructions: Value<'js>,
}

/// The name a file declares, even when other exports are wrong, so that duplicates are found.
pub(crate) fn declared_name(namespace: &Object<'_>) -> Option<String> {
    namespace
        .get::<_, Value>("CHARACTER_NAME")
        .ok()
        .and_then(|value| value.as_string().and_then(|name| name.to_string().ok()))
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

pub(crate) fn inspect<'js>(
    ctx: &Ctx<'js>,
    namespace: &Object<'js>,
    file_name: &str,
    default_timeout: Duration,
    configured_mcp_servers: Option<&[String]>,
    clock: &Clock,
) -> Result<Inspected<'js>, Vec<Problem>> {
    let mut problems = Vec::new();
    let export = |name: &str| -> Value<'js> {
        namespace
            .get(name)
            .unwrap_or_else(|_| Value::new_undefined(ctx.clone()))
    };
    warn_unknown_exports(namespace, file_name);

    let name = check_name(&export("CHARACTER_NAME"), &mut problems);
    let voice_source = check_object(
        ctx,
        clock,
        "VOICE_SOURCE",
        &export("VOICE_SOURCE"),
        &["source_type"],
        &mut problems,
    );
    let instructions_value = export("INSTRUCTIONS");
    let instructions = check_object(
        ctx,
        clock,
        "INSTRUCTIONS",
        &instructions_value,
        &[],
        &mut problems,
    );
    if let Some(Json::Object(fields)) = &instructions {
        for field in ["instruction_prompt", "language"] {
            if let Some(value) = fields.get(field).filter(|value| !value.is_string()) {
                problems.push(invalid(
                    format!("INSTRUCTIONS.{field}"),
                    &format!("expected a string, got {}", json_type(value)),
                ));
            }
        }
    }
    let metadata = check_metadata(ctx, clock, &export("METADATA"), &mut problems);
    let tools = check_tools(ctx, clock, &export("TOOLS"), &mut problems);
    let timeout = check_timeout(&export("TOOL_TIMEOUT_MS"), default_timeout, &mut problems);
    let mcp_servers = check_mcp_servers(
        ctx,
        clock,
        &export("MCP_SERVERS"),
        configured_mcp_servers,
        &mut problems,
    );
    let class = check_class(&export("PromptGenerator"), tools.as_ref(), &mut problems);

    match (
        name,
        voice_source,
        instructions,
        metadata,
        tools,
        timeout,
        mcp_servers,
        class,
    ) {
        (
            Some(name),
            Some(voice_source),
            Some(instructions),
            Some(metadata),
            Some(tools),
            Some(timeout),
            Some(mcp_servers),
            Some(class),
        ) if problems.is_empty() => {
            let listed = metadata.as_ref().and_then(|metadata| metadata.get("good"))
                != Some(&Json::Bool(false));
            Ok(Inspected {
                declaration: Declaration {
                    name,
                    voice_source,
                    instructions,
                    metadata,
                    listed,
                    tools,
                    timeout,
                    mcp_servers,
                },
                class,
                instructions: instructions_value,
            })
        }
        _ => Err(problems),
    }
}

fn invalid(path: impl Into<String>, detail: &str) -> Problem {
    Problem::at_export(kind::INVALID_EXPORT, path, detail)
}

fn missing(export: &str, wanted: &str) -> Problem {
    Problem::at_export(
        kind::MISSING_EXPORT,
        export,
        &format!("missing; export {wanted}"),
    )
}

/// An upper-case export the format does not know is most likely a typo (`TOOL`), which
/// would otherwise silently leave the character without what it meant to declare.
fn warn_unknown_exports(namespace: &Object<'_>, file_name: &str) {
    for key in namespace.keys::<String>().flatten() {
        if !KNOWN_EXPORTS.contains(&key.as_str())
            && key.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            tracing::warn!(
                target: "character",
                "{file_name}: export {key} is not part of the character format ({}); is it a typo?",
                KNOWN_EXPORTS.join(", ")
            );
        }
    }
}

fn check_name(value: &Value<'_>, problems: &mut Vec<Problem>) -> Option<String> {
    if value.is_undefined() {
        problems.push(missing("CHARACTER_NAME", "a non-empty string"));
        return None;
    }
    let Some(name) = value.as_string().and_then(|name| name.to_string().ok()) else {
        problems.push(invalid(
            "CHARACTER_NAME",
            &format!("expected a string, got {}", type_name(value)),
        ));
        return None;
    };
    let name = name.trim().to_owned();
    if name.is_empty() {
        problems.push(invalid("CHARACTER_NAME", "must not be empty"));
        return None;
    }
    Some(name)
}

/// A required plain-object export, converted to JSON; `string_fields` must be strings.
fn check_object<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    export: &str,
    value: &Value<'js>,
    string_fields: &[&str],
    problems: &mut Vec<Problem>,
) -> Option<Json> {
    if value.is_undefined() {
        problems.push(missing(export, "an object"));
        return None;
    }
    let json = plain_object(ctx, clock, export, value, problems)?;
    let before = problems.len();
    for field in string_fields {
        match json.get(field) {
            Some(Json::String(_)) => {}
            Some(other) => problems.push(invalid(
                format!("{export}.{field}"),
                &format!("expected a string, got {}", json_type(other)),
            )),
            None => problems.push(invalid(
                format!("{export}.{field}"),
                "missing; a string is required",
            )),
        }
    }
    (problems.len() == before).then_some(json)
}

/// An object export (not an array, function or `null`) as JSON.
fn plain_object<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    export: &str,
    value: &Value<'js>,
    problems: &mut Vec<Problem>,
) -> Option<Json> {
    if !value.is_object() || value.is_array() || value.is_function() {
        problems.push(invalid(
            export,
            &format!("expected an object, got {}", type_name(value)),
        ));
        return None;
    }
    to_json(ctx, clock, export, value)
        .map_err(|problem| problems.push(problem))
        .ok()
}

/// Optional `METADATA`: `Some(None)` when absent, `None` when wrong.
fn check_metadata<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    value: &Value<'js>,
    problems: &mut Vec<Problem>,
) -> Option<Option<Json>> {
    if value.is_undefined() || value.is_null() {
        return Some(None);
    }
    let json = plain_object(ctx, clock, "METADATA", value, problems)?;
    let before = problems.len();
    if let Some(good) = json.get("good").filter(|good| !good.is_boolean()) {
        problems.push(invalid(
            "METADATA.good",
            &format!("expected a boolean, got {}", json_type(good)),
        ));
    }
    if let Some(comment) = json.get("comment").filter(|comment| !comment.is_string()) {
        problems.push(invalid(
            "METADATA.comment",
            &format!("expected a string, got {}", json_type(comment)),
        ));
    }
    (problems.len() == before).then_some(Some(json))
}

/// `TOOLS`: absent, `null` or `[]` is a character without tools; otherwise an array that
/// passes the `character` profile, every problem reported with its path.
fn check_tools<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    value: &Value<'js>,
    problems: &mut Vec<Problem>,
) -> Option<Toolset> {
    if value.is_undefined() || value.is_null() {
        return Some(Toolset::default());
    }
    if !value.is_array() {
        problems.push(Problem::at_export(
            kind::TOOLS_NOT_ARRAY,
            "TOOLS",
            &format!(
                "expected an array of tool definitions, got {}",
                type_name(value)
            ),
        ));
        return None;
    }
    let json = to_json(ctx, clock, "TOOLS", value)
        .map_err(|problem| problems.push(problem))
        .ok()?;
    match Toolset::from_json(&json, &Profile::character()) {
        Ok(tools) => Some(tools),
        Err(found) => {
            problems.extend(found.0.into_iter().map(|problem| {
                Problem::at_export(
                    kind::INVALID_SCHEMA,
                    format!("TOOLS{}", problem.path),
                    &problem.message,
                )
            }));
            None
        }
    }
}

fn check_timeout(
    value: &Value<'_>,
    default: Duration,
    problems: &mut Vec<Problem>,
) -> Option<Duration> {
    if value.is_undefined() {
        return Some(default);
    }
    match value.as_number() {
        Some(ms) if ms.fract() == 0.0 && ms >= 1.0 && ms <= MAX_TOOL_TIMEOUT_MS as f64 => {
            Some(Duration::from_millis(ms as u64))
        }
        _ => {
            let found = if value.is_number() {
                format!("{}", value.as_number().unwrap_or_default())
            } else {
                type_name(value).to_owned()
            };
            problems.push(invalid(
                "TOOL_TIMEOUT_MS",
                &format!("expected a whole number of milliseconds from 1 to {MAX_TOOL_TIMEOUT_MS}, got {found}"),
            ));
            None
        }
    }
}

/// `MCP_SERVERS`: absent, `null` or `[]` is a character that uses no MCP server; otherwise
/// an array of server names and `{ server, tools }` objects, each server configured when
/// `configured` lists the configuration's servers.
fn check_mcp_servers<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    value: &Value<'js>,
    configured: Option<&[String]>,
    problems: &mut Vec<Problem>,
) -> Option<Vec<McpServerUse>> {
    if value.is_undefined() || value.is_null() {
        return Some(Vec::new());
    }
    if !value.is_array() {
        problems.push(mcp::not_array(type_name(value)));
        return None;
    }
    let json = to_json(ctx, clock, "MCP_SERVERS", value)
        .map_err(|problem| problems.push(problem))
        .ok()?;
    mcp::check(&json, configured)
        .map_err(|found| problems.extend(found))
        .ok()
}

/// `PromptGenerator` must be a class with `makeSystemPrompt`, and with `handleToolCall`
/// when the file declares tools.
fn check_class<'js>(
    value: &Value<'js>,
    tools: Option<&Toolset>,
    problems: &mut Vec<Problem>,
) -> Option<Constructor<'js>> {
    if value.is_undefined() {
        problems.push(missing(
            "PromptGenerator",
            "a class with makeSystemPrompt()",
        ));
        return None;
    }
    let Some(class) = value.as_constructor().cloned() else {
        problems.push(invalid(
            "PromptGenerator",
            &format!("expected a class, got {}", type_name(value)),
        ));
        return None;
    };
    let prototype: Option<Object<'js>> = class.get("prototype").ok();
    let has_method = |name: &str| {
        prototype
            .as_ref()
            .and_then(|prototype| prototype.get::<_, Value>(name).ok())
            .is_some_and(|method| method.is_function())
    };
    let before = problems.len();
    if !has_method("makeSystemPrompt") {
        problems.push(invalid(
            "PromptGenerator",
            "has no makeSystemPrompt() method; every character needs one to give its system prompt",
        ));
    }
    if let Some(tools) = tools.filter(|tools| !tools.is_empty())
        && !has_method("handleToolCall")
    {
        let names: Vec<&str> = tools.tools().iter().map(|tool| tool.name()).collect();
        problems.push(Problem::at_export(
            kind::MISSING_HANDLER,
            "PromptGenerator",
            &format!(
                "TOOLS declares {} but PromptGenerator has no handleToolCall(toolName, toolInput) method to implement {}",
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" }
            ),
        ));
    }
    (problems.len() == before).then_some(class)
}

fn to_json<'js>(
    ctx: &Ctx<'js>,
    clock: &Clock,
    export: &str,
    value: &Value<'js>,
) -> Result<Json, Problem> {
    let text = match ctx.json_stringify(value.clone()) {
        Ok(Some(text)) => text
            .to_string()
            .map_err(|error| invalid(export, &error.to_string()))?,
        Ok(None) => return Err(invalid(export, "cannot be represented as JSON")),
        Err(error) => {
            let failure = Failure::caught(ctx, error, clock);
            return Err(invalid(
                export,
                &format!("cannot be converted to JSON: {}", failure.summary()),
            ));
        }
    };
    serde_json::from_str(&text)
        .map_err(|error| invalid(export, &format!("cannot be converted to JSON: {error}")))
}
