//! What `#[tool]` expands to calls into; not a public API.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use futures;
pub use schemars;
pub use serde;
pub use serde_json;

use crate::{FunctionDefinition, ToolDefinition, ToolError, ToolKind};

/// The JSON Schema of `T` in the form tool parameters want: draft 2020-12, every
/// subschema inline, no `$schema`, no `title`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
        settings.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    strip_titles(&mut schema);
    schema
}

fn strip_titles(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("title");
    map.remove("$defs");
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(children) = value {
                    children.values_mut().for_each(strip_titles);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(children) = value {
                    children.iter_mut().for_each(strip_titles);
                }
            }
            "items" | "additionalProperties" | "not" => strip_titles(value),
            _ => {}
        }
    }
}

/// A definition built from the arguments type and, when the function returns a value
/// worth describing, its output type.
pub fn definition(
    name: &str,
    description: &str,
    parameters: Value,
    output_schema: Option<Value>,
) -> ToolDefinition {
    ToolDefinition {
        kind: ToolKind::Function,
        function: FunctionDefinition {
            name: name.to_owned(),
            description: (!description.is_empty()).then(|| description.to_owned()),
            parameters: Some(parameters),
            strict: None,
            output_schema,
        },
    }
}

/// Reads the validated arguments into the generated arguments struct.
pub fn arguments<T: DeserializeOwned>(arguments: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| ToolError::new(format_args!("Invalid parameters - {error}")))
}

/// Turns a function's return value into the JSON result.
pub fn output<T: Serialize>(value: T) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|error| ToolError::new(format_args!("result is not JSON: {error}")))
}
