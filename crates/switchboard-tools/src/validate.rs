//! Validation of a tool list: every rule of a profile, every problem with its path, and
//! the compiled validators kept for call time.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::defaults::Defaults;
use crate::problem::{Problem, Problems, pointer, quote, quote_value};
use crate::profile::{Profile, STRICT_MAX_DEPTH, STRICT_MAX_PROPERTIES};
use crate::schema::{self, walk};
use crate::toolset::CompiledTool;
use crate::{FunctionDefinition, ToolDefinition, ToolKind};

const FUNCTION_KEYS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "strict",
    "output_schema",
];

/// The longest regular expression a schema may hold (a `pattern`, or a name under
/// `patternProperties`), in bytes: a regex compiles into automata hundreds of times its
/// length (one 4 MB pattern cost over 500 MB before it was refused).
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Most bytes of regular expressions in one tool list, every schema together.
pub const MAX_PATTERN_BYTES_IN_ALL: usize = 512 * 1024;
/// Deepest nesting of groups in one regular expression.
pub const MAX_PATTERN_NESTING: usize = 32;

/// Validates a JSON array of tool definitions under `profile` and compiles each schema.
/// Either every tool is valid, or every problem in the list is returned.
pub fn validate_tools(list: &Value, profile: &Profile) -> Result<Vec<CompiledTool>, Problems> {
    let Value::Array(items) = list else {
        return Err(Problems(vec![Problem::new(
            "",
            format!(
                "expected an array of tool definitions, got {}",
                schema::type_name(list)
            ),
        )]));
    };
    let mut problems = Vec::new();
    if let Some(max) = profile.max_tools
        && items.len() > max
    {
        problems.push(Problem::new(
            "",
            format!("{} tools, at most {max} allowed", items.len()),
        ));
    }
    // Bounded before anything is compiled: compiling is what costs.
    let compilable = check_patterns(items, &mut problems);
    let mut compiled = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let compile = compilable[index];
        if let Some(tool) =
            validate_tool(item, &format!("/{index}"), profile, compile, &mut problems)
        {
            compiled.push(tool);
        }
    }
    report_duplicates(items, &mut problems);
    if problems.is_empty() {
        Ok(compiled)
    } else {
        Err(Problems(problems))
    }
}

/// Validates one tool definition located at `path`; problems are appended. Its schemas are
/// compiled only when `compile` (their patterns are within bounds).
fn validate_tool(
    item: &Value,
    path: &str,
    profile: &Profile,
    compile: bool,
    problems: &mut Vec<Problem>,
) -> Option<CompiledTool> {
    let before = problems.len();
    let Value::Object(tool) = item else {
        problems.push(Problem::new(
            path,
            format!("expected a tool object, got {}", schema::type_name(item)),
        ));
        return None;
    };
    match tool.get("type") {
        Some(Value::String(kind)) if kind == "function" => {}
        Some(other) => problems.push(Problem::new(
            pointer(path, "type"),
            format!("must be \"function\", got {}", quote_value(other)),
        )),
        None => problems.push(Problem::new(
            pointer(path, "type"),
            "missing; must be \"function\"",
        )),
    }
    let function_path = pointer(path, "function");
    let Some(function) = tool.get("function") else {
        problems.push(Problem::new(function_path, "missing function object"));
        return None;
    };
    let Value::Object(function) = function else {
        problems.push(Problem::new(
            function_path,
            format!("expected an object, got {}", schema::type_name(function)),
        ));
        return None;
    };
    if profile.reject_unknown_keys {
        for key in function
            .keys()
            .filter(|key| !FUNCTION_KEYS.contains(&key.as_str()))
        {
            problems.push(Problem::new(
                pointer(&function_path, key),
                format!("unknown key; a function has {}", FUNCTION_KEYS.join(", ")),
            ));
        }
    }
    let name = check_name(function, &function_path, profile, problems);
    let description = check_description(function, &function_path, profile, problems);
    let strict = match function.get("strict") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(strict)) => Some(*strict),
        Some(other) => {
            problems.push(Problem::new(
                pointer(&function_path, "strict"),
                format!("expected a boolean, got {}", quote_value(other)),
            ));
            None
        }
    };
    let parameters = check_parameters(
        function,
        &function_path,
        profile,
        strict == Some(true),
        compile,
        problems,
    );
    let output = function
        .get("output_schema")
        .filter(|_| compile)
        .and_then(|output| {
            let output_path = pointer(&function_path, "output_schema");
            schema::compile(output, &output_path)
                .map_err(|found| problems.extend(found))
                .ok()
        });
    if problems.len() != before {
        return None;
    }
    let definition = ToolDefinition {
        kind: ToolKind::Function,
        function: FunctionDefinition {
            name: name?,
            description,
            parameters: function.get("parameters").cloned(),
            strict,
            output_schema: function.get("output_schema").cloned(),
        },
    };
    let (validator, defaults) = parameters.unwrap_or((None, Defaults::default()));
    Some(CompiledTool::new(
        definition,
        validator,
        output,
        defaults,
        profile.max_argument_bytes,
    ))
}

fn check_name(
    function: &Map<String, Value>,
    path: &str,
    profile: &Profile,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    let path = pointer(path, "name");
    match function.get("name") {
        Some(Value::String(name)) => {
            let before = problems.len();
            if name.chars().count() > profile.max_name_len {
                problems.push(Problem::new(
                    &path,
                    format!(
                        "{} is {} characters long, at most {} allowed",
                        quote(name),
                        name.chars().count(),
                        profile.max_name_len
                    ),
                ));
            }
            if !profile.name_matches(name) {
                problems.push(Problem::new(
                    &path,
                    format!("{} does not match {}", quote(name), profile.name_pattern),
                ));
            }
            (problems.len() == before).then(|| name.clone())
        }
        Some(other) => {
            problems.push(Problem::new(
                path,
                format!("expected a string, got {}", quote_value(other)),
            ));
            None
        }
        None => {
            problems.push(Problem::new(path, "missing; every tool needs a name"));
            None
        }
    }
}

fn check_description(
    function: &Map<String, Value>,
    path: &str,
    profile: &Profile,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    let path = pointer(path, "description");
    match function.get("description") {
        Some(Value::String(text)) => {
            if profile.description_required && text.trim().is_empty() {
                problems.push(Problem::new(
                    &path,
                    "must not be empty: the model chooses tools by their description",
                ));
            }
            if let Some(max) = profile.max_description_len
                && text.chars().count() > max
            {
                problems.push(Problem::new(
                    &path,
                    format!(
                        "{} characters long, at most {max} allowed",
                        text.chars().count()
                    ),
                ));
            }
            Some(text.clone())
        }
        None | Some(Value::Null) if !profile.description_required => None,
        None => {
            problems.push(Problem::new(
                path,
                "missing; the model chooses tools by their description",
            ));
            None
        }
        Some(other) => {
            problems.push(Problem::new(
                path,
                format!("expected a string, got {}", quote_value(other)),
            ));
            None
        }
    }
}

type CompiledParameters = (Option<jsonschema::Validator>, Defaults);

fn check_parameters(
    function: &Map<String, Value>,
    path: &str,
    profile: &Profile,
    strict: bool,
    compile: bool,
    problems: &mut Vec<Problem>,
) -> Option<CompiledParameters> {
    let path = pointer(path, "parameters");
    let parameters = match function.get("parameters") {
        None | Some(Value::Null) if profile.parameters_required => {
            problems.push(Problem::new(
                path,
                "missing; give at least {\"type\": \"object\", \"properties\": {}}",
            ));
            return None;
        }
        None | Some(Value::Null) => return Some((None, Defaults::default())),
        Some(parameters) => parameters,
    };
    let before = problems.len();
    let Value::Object(root) = parameters else {
        problems.push(Problem::new(
            path,
            format!(
                "expected a JSON Schema object, got {}",
                schema::type_name(parameters)
            ),
        ));
        return None;
    };
    if root.get("type") != Some(&Value::String("object".into())) {
        let found = root.get("type").map_or("nothing".to_owned(), quote_value);
        problems.push(Problem::new(
            pointer(&path, "type"),
            format!("the root type must be \"object\", got {found}"),
        ));
    }
    if let Some(max) = profile.max_properties
        && let Some(Value::Object(properties)) = root.get("properties")
        && properties.len() > max
    {
        problems.push(Problem::new(
            pointer(&path, "properties"),
            format!("{} properties, at most {max} allowed", properties.len()),
        ));
    }
    check_keywords(parameters, &path, profile, problems);
    if strict {
        check_strict(parameters, &path, problems);
    }
    if !compile {
        return None;
    }
    let compiled = schema::compile(parameters, &path)
        .map_err(|found| problems.extend(found))
        .ok();
    check_defaults(parameters, &path, problems);
    if problems.len() != before {
        return None;
    }
    Some((compiled, Defaults::from_schema(parameters)))
}

/// The regular expressions of every schema in the list, each within [`MAX_PATTERN_BYTES`]
/// and [`MAX_PATTERN_NESTING`], those together within [`MAX_PATTERN_BYTES_IN_ALL`]. Whether
/// each tool's schemas may be compiled.
fn check_patterns(items: &[Value], problems: &mut Vec<Problem>) -> Vec<bool> {
    let mut total = 0;
    let mut compilable = vec![true; items.len()];
    for (index, item) in items.iter().enumerate() {
        for key in ["parameters", "output_schema"] {
            let Some(schema) = item.get("function").and_then(|function| function.get(key)) else {
                continue;
            };
            let path = format!("/{index}/function/{key}");
            walk(schema, &path, &mut |here, map| {
                let named = map
                    .get("patternProperties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flat_map(|properties| properties.keys())
                    .map(|name| {
                        (
                            pointer(&pointer(here, "patternProperties"), name),
                            name.as_str(),
                        )
                    });
                let pattern = map
                    .get("pattern")
                    .and_then(Value::as_str)
                    .map(|pattern| (pointer(here, "pattern"), pattern));
                for (at, pattern) in pattern.into_iter().chain(named) {
                    if pattern.len() > MAX_PATTERN_BYTES {
                        compilable[index] = false;
                        problems.push(Problem::new(
                            at,
                            format!(
                                "the pattern is {} characters long ({} bytes), at most {MAX_PATTERN_BYTES} bytes allowed",
                                pattern.chars().count(),
                                pattern.len()
                            ),
                        ));
                    } else if nesting(pattern) > MAX_PATTERN_NESTING {
                        compilable[index] = false;
                        problems.push(Problem::new(
                            at,
                            format!(
                                "the pattern nests groups {} deep, at most {MAX_PATTERN_NESTING} allowed",
                                nesting(pattern)
                            ),
                        ));
                    } else {
                        total += pattern.len();
                    }
                }
            });
        }
    }
    if total > MAX_PATTERN_BYTES_IN_ALL {
        problems.push(Problem::new(
            "",
            format!(
                "the schemas' patterns take {total} bytes in all, at most {MAX_PATTERN_BYTES_IN_ALL} allowed"
            ),
        ));
        compilable.fill(false);
    }
    compilable
}

/// How deep a regular expression's groups nest (escaped parentheses are not groups; those
/// in a character class are counted, which errs on the safe side).
fn nesting(pattern: &str) -> usize {
    let (mut depth, mut deepest, mut escaped) = (0usize, 0, false);
    for character in pattern.chars() {
        match character {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Rules that hold for every subschema: `$ref` and the size of `enum`.
fn check_keywords(parameters: &Value, path: &str, profile: &Profile, problems: &mut Vec<Problem>) {
    walk(parameters, path, &mut |here, map| {
        if !profile.allow_ref && map.contains_key("$ref") {
            problems.push(Problem::new(
                pointer(here, "$ref"),
                "$ref is not allowed in character tools; inline the schema",
            ));
        }
        if let Some(max) = profile.max_enum_values
            && let Some(Value::Array(values)) = map.get("enum")
            && values.len() > max
        {
            problems.push(Problem::new(
                pointer(here, "enum"),
                format!("{} values, at most {max} allowed", values.len()),
            ));
        }
    });
}

/// OpenAI's structured-output rules for `strict: true`.
fn check_strict(parameters: &Value, path: &str, problems: &mut Vec<Problem>) {
    let mut total = 0;
    walk(parameters, path, &mut |here, map| {
        let depth = object_depth(path, here);
        let Some(Value::Object(properties)) = map.get("properties") else {
            if map.get("type") == Some(&Value::String("object".into()))
                && map.get("additionalProperties") != Some(&Value::Bool(false))
            {
                problems.push(Problem::new(
                    pointer(here, "additionalProperties"),
                    "strict mode requires additionalProperties: false",
                ));
            }
            return;
        };
        total += properties.len();
        if depth > STRICT_MAX_DEPTH {
            problems.push(Problem::new(
                here,
                format!("nested {depth} levels deep; strict mode allows {STRICT_MAX_DEPTH}"),
            ));
        }
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(Problem::new(
                pointer(here, "additionalProperties"),
                "strict mode requires additionalProperties: false",
            ));
        }
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for name in properties
            .keys()
            .filter(|name| !required.contains(&name.as_str()))
        {
            problems.push(Problem::new(
                pointer(here, "required"),
                format!("strict mode requires every property in required; {} is missing (make it nullable instead)", quote(name)),
            ));
        }
    });
    if total > STRICT_MAX_PROPERTIES {
        problems.push(Problem::new(
            path,
            format!("{total} properties in all, strict mode allows {STRICT_MAX_PROPERTIES}"),
        ));
    }
}

/// How many object levels down `here` is from the parameters root (the root is level 1).
fn object_depth(root: &str, here: &str) -> usize {
    1 + here[root.len()..]
        .split('/')
        .filter(|segment| *segment == "properties")
        .count()
}

/// A `default` that its own schema rejects would be filled into every call and fail there.
fn check_defaults(parameters: &Value, path: &str, problems: &mut Vec<Problem>) {
    walk(parameters, path, &mut |here, map| {
        if let Some(default) = map.get("default") {
            let mut schema = map.clone();
            schema.remove("default");
            if let Ok(validator) = jsonschema::draft202012::new(&Value::Object(schema))
                && let Err(error) = validator.validate(default)
            {
                problems.push(Problem::new(
                    pointer(here, "default"),
                    format!(
                        "the default does not match its own schema: {}",
                        schema::describe(&error)
                    ),
                ));
            }
        }
    });
}

fn report_duplicates(items: &[Value], problems: &mut Vec<Problem>) {
    let mut seen: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        if let Some(name) = item.pointer("/function/name").and_then(Value::as_str) {
            seen.entry(name).or_default().push(index);
        }
    }
    let mut duplicates: Vec<_> = seen
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .collect();
    duplicates.sort_by_key(|(_, places)| places[0]);
    for (name, places) in duplicates {
        for &index in &places {
            let others: Vec<String> = places
                .iter()
                .filter(|&&other| other != index)
                .map(|other| format!("/{other}"))
                .collect();
            problems.push(Problem::new(
                format!("/{index}/function/name"),
                format!(
                    "duplicate tool name {} (also at {})",
                    quote(name),
                    others.join(", ")
                ),
            ));
        }
    }
}
