//! A validated tool list with its compiled validators: checks the arguments of each call
//! and the result it returns, turning every failure into the words the model will read.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

use crate::defaults::Defaults;
use crate::problem::{Problems, truncate_message};
use crate::schema::{describe, plural, type_name};
use crate::{Profile, ToolDefinition, validate_tools};

/// The longest message a model receives about one failed call.
pub const MAX_MESSAGE_CHARS: usize = 1000;

/// A tool definition with the validators compiled from it, built once at load.
#[derive(Debug, Clone)]
pub struct CompiledTool {
    definition: ToolDefinition,
    parameters: Option<Validator>,
    output: Option<Validator>,
    defaults: Defaults,
    max_argument_bytes: Option<usize>,
}

/// Why a call's arguments or result were refused. `Display` gives the exact text the model
/// reads, at most [`MAX_MESSAGE_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    UnknownTool(String),
    ArgumentsTooLarge { bytes: usize, limit: usize },
    InvalidJson(String),
    NotAnObject(&'static str),
    MissingRequired(Vec<String>),
    InvalidParameters(Vec<String>),
    InvalidResult(Vec<String>),
}

impl CallError {
    /// A short, stable label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownTool(_) => "unknown_tool",
            CallError::ArgumentsTooLarge { .. } => "too_large",
            CallError::InvalidJson(_) | CallError::NotAnObject(_) => "json_parse",
            CallError::MissingRequired(_) | CallError::InvalidParameters(_) => "validation",
            CallError::InvalidResult(_) => "bad_return",
        }
    }

    fn full_message(&self) -> String {
        match self {
            CallError::UnknownTool(name) => format!("Error: Unknown tool: {name}"),
            CallError::ArgumentsTooLarge { bytes, limit } => {
                format!("Error: Arguments too large - {bytes} bytes, at most {limit} allowed")
            }
            CallError::InvalidJson(message) => format!("Error: Invalid JSON arguments - {message}"),
            CallError::NotAnObject(found) => {
                format!(
                    "Error: Invalid JSON arguments - expected a JSON object at the top level, got {found}"
                )
            }
            CallError::MissingRequired(names) => format!(
                "Error: Missing required {}: {}",
                plural(names.len(), "parameter", "parameters"),
                names.join(", ")
            ),
            CallError::InvalidParameters(violations) => {
                format!("Error: Invalid parameters - {}", violations.join("; "))
            }
            CallError::InvalidResult(violations) => {
                format!("Error: Invalid result - {}", violations.join("; "))
            }
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&truncate_message(self.full_message(), MAX_MESSAGE_CHARS))
    }
}

impl std::error::Error for CallError {}

impl CompiledTool {
    pub(crate) fn new(
        definition: ToolDefinition,
        parameters: Option<Validator>,
        output: Option<Validator>,
        defaults: Defaults,
        max_argument_bytes: Option<usize>,
    ) -> Self {
        Self {
            definition,
            parameters,
            output,
            defaults,
            max_argument_bytes,
        }
    }

    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    pub fn name(&self) -> &str {
        self.definition.name()
    }

    /// Turns the model's raw argument text into the validated object, defaults filled in.
    /// An empty text means `{}`: models send that for tools without parameters.
    pub fn check_arguments(&self, raw: &str) -> Result<Map<String, Value>, CallError> {
        if let Some(limit) = self.max_argument_bytes
            && raw.len() > limit
        {
            return Err(CallError::ArgumentsTooLarge {
                bytes: raw.len(),
                limit,
            });
        }
        let value = if raw.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(raw).map_err(|error| CallError::InvalidJson(error.to_string()))?
        };
        let mut value = match value {
            Value::Object(_) => value,
            other => return Err(CallError::NotAnObject(type_name(&other))),
        };
        if let Some(validator) = &self.parameters {
            violations(validator, &value, true)?;
        }
        self.defaults.apply(&mut value);
        match value {
            Value::Object(object) => Ok(object),
            other => Err(CallError::NotAnObject(type_name(&other))),
        }
    }

    /// Checks a result against the declared output schema, if any.
    pub fn check_result(&self, result: &Value) -> Result<(), CallError> {
        match &self.output {
            Some(validator) => violations(validator, result, false),
            None => Ok(()),
        }
    }
}

fn identical_lists(one: &[ToolDefinition], other: &[ToolDefinition]) -> bool {
    one.len() == other.len()
        && one.iter().zip(other).all(|(one, other)| {
            if one.kind != other.kind {
                return false;
            }
            let (one, other) = (&one.function, &other.function);
            one.name == other.name
                && one.description == other.description
                && one.strict == other.strict
                && identical_options(one.parameters.as_ref(), other.parameters.as_ref())
                && identical_options(one.output_schema.as_ref(), other.output_schema.as_ref())
        })
}

fn identical_options(one: Option<&Value>, other: Option<&Value>) -> bool {
    match (one, other) {
        (Some(one), Some(other)) => identical(one, other),
        (None, None) => true,
        _ => false,
    }
}

/// Equal with objects' members in the same order (`==` on maps ignores their order).
fn identical(one: &Value, other: &Value) -> bool {
    match (one, other) {
        (Value::Object(one), Value::Object(other)) => {
            one.len() == other.len()
                && one
                    .iter()
                    .zip(other)
                    .all(|((key, one), (other_key, other))| {
                        key == other_key && identical(one, other)
                    })
        }
        (Value::Array(one), Value::Array(other)) => {
            one.len() == other.len()
                && one
                    .iter()
                    .zip(other)
                    .all(|(one, other)| identical(one, other))
        }
        _ => one == other,
    }
}

/// Every violation of `value` against `validator`. With `arguments`, a value whose only
/// problems are missing top-level properties is reported as missing parameters.
fn violations(validator: &Validator, value: &Value, arguments: bool) -> Result<(), CallError> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut all = Vec::new();
    for error in validator.iter_errors(value) {
        let path = error.instance_path().as_str();
        if let ValidationErrorKind::Required { property } = error.kind()
            && path.is_empty()
        {
            missing.push(
                property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned),
            );
        }
        let place = if path.is_empty() { "(root)" } else { path };
        all.push(format!("{place}: {}", describe(&error)));
    }
    Err(
        if arguments && !missing.is_empty() && missing.len() == all.len() {
            CallError::MissingRequired(missing)
        } else if arguments {
            CallError::InvalidParameters(all)
        } else {
            CallError::InvalidResult(all)
        },
    )
}

/// A validated tool list, looked up by name. Built once; shared by every call. A clone
/// shares the compiled list: a gateway keeps one list for the many requests that send it,
/// and a copy per request would cost each of them the compiled schemas again (about 12 KB
/// a tool).
#[derive(Debug, Clone, Default)]
pub struct Toolset(Arc<Compiled>);

#[derive(Debug, Default)]
struct Compiled {
    tools: Vec<CompiledTool>,
    by_name: HashMap<String, usize>,
    /// The definitions as the first request that shared them sent them: see [`Toolset::share`].
    shared: OnceLock<Arc<[ToolDefinition]>>,
}

impl Toolset {
    /// Validates and compiles a JSON array of tool definitions under `profile`.
    pub fn from_json(list: &Value, profile: &Profile) -> Result<Self, Problems> {
        Ok(Self::from_compiled(validate_tools(list, profile)?))
    }

    /// Validates and compiles already typed definitions (e.g. from `#[tool]`).
    pub fn from_definitions(
        definitions: &[ToolDefinition],
        profile: &Profile,
    ) -> Result<Self, Problems> {
        let list = serde_json::to_value(definitions).unwrap_or(Value::Null);
        Self::from_json(&list, profile)
    }

    fn from_compiled(tools: Vec<CompiledTool>) -> Self {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(index, tool)| (tool.name().to_owned(), index))
            .collect();
        Self(Arc::new(Compiled {
            tools,
            by_name,
            shared: OnceLock::new(),
        }))
    }

    pub fn get(&self, name: &str) -> Option<&CompiledTool> {
        self.0.by_name.get(name).map(|&index| &self.0.tools[index])
    }

    pub fn tools(&self) -> &[CompiledTool] {
        &self.0.tools
    }

    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.0.tools.iter().map(CompiledTool::definition)
    }

    pub fn is_empty(&self) -> bool {
        self.0.tools.is_empty()
    }

    /// A request's own definitions of these tools, or the identical list an earlier request
    /// with this toolset shared: a gateway keeps one toolset for every request that sends the
    /// same list, and each request's parsed copy (several kilobytes for a coding agent's
    /// tools) would otherwise be held for as long as its answer streams. Identical means
    /// field for field with objects' members in the same order, so the list serialises to
    /// the same bytes whichever copy is sent.
    pub fn share(&self, definitions: Arc<[ToolDefinition]>) -> Arc<[ToolDefinition]> {
        let kept = self.0.shared.get_or_init(|| Arc::clone(&definitions));
        if Arc::ptr_eq(kept, &definitions) || identical_lists(kept, &definitions) {
            Arc::clone(kept)
        } else {
            definitions
        }
    }

    pub fn len(&self) -> usize {
        self.0.tools.len()
    }

    /// Checks one call: the tool exists and its arguments are valid.
    pub fn check_call(
        &self,
        name: &str,
        raw_arguments: &str,
    ) -> Result<Map<String, Value>, CallError> {
        self.get(name)
            .ok_or_else(|| CallError::UnknownTool(name.to_owned()))?
            .check_arguments(raw_arguments)
    }
}
