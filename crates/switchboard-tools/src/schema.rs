//! Compiling JSON Schemas once, and wording their violations for people and models.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use crate::problem::{MAX_QUOTED_CHARS, Problem, pointer, quote_value};

const TYPE_NAMES: &[&str] = &[
    "\"array\"",
    "\"boolean\"",
    "\"integer\"",
    "\"null\"",
    "\"number\"",
    "\"object\"",
    "\"string\"",
];

/// Checks `schema` against the draft 2020-12 meta-schema and compiles it.
/// Problems are located under `path`, the schema's place in the tool list.
pub(crate) fn compile(schema: &Value, path: &str) -> Result<Validator, Vec<Problem>> {
    let meta = jsonschema::draft202012::meta::validator();
    let problems: Vec<Problem> = meta
        .iter_errors(schema)
        .map(|error| {
            let at = error.instance_path().as_str();
            let message = if at.ends_with("/type")
                && matches!(error.kind(), ValidationErrorKind::AnyOf { .. })
            {
                format!(
                    "{} is not a JSON Schema type; use one of {}",
                    quote_value(error.instance()),
                    TYPE_NAMES.join(", ")
                )
            } else {
                describe(&error)
            };
            Problem::new(format!("{path}{at}"), message)
        })
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|error| {
            vec![Problem::new(
                path,
                format!("schema does not compile: {}", describe(&error)),
            )]
        })
}

/// One violation as a short sentence. The crate's own messages print whole schemas for
/// some keywords; models and people need the allowed values, not the schema. The value
/// at fault is quoted cut to a bounded length.
pub(crate) fn describe(error: &ValidationError<'_>) -> String {
    match error.kind() {
        ValidationErrorKind::Enum { options } => {
            format!(
                "{} is not one of the allowed values: {}",
                quote_value(error.instance()),
                list_values(options)
            )
        }
        ValidationErrorKind::Required { property } => {
            format!("missing required property {property}")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected
                .iter()
                .map(|name| format!("\"{name}\""))
                .collect();
            format!(
                "unexpected {} {}",
                plural(names.len(), "property", "properties"),
                names.join(", ")
            )
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(ty) => ty.to_string(),
                TypeKind::Multiple(types) => types
                    .iter()
                    .map(|ty| ty.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!(
                "expected {expected}, got {} {}",
                type_name(error.instance()),
                quote_value(error.instance())
            )
        }
        _ => {
            let message = error.to_string();
            let instance = error.instance().to_string();
            if instance.chars().count() > MAX_QUOTED_CHARS {
                message.replacen(&instance, &quote_value(error.instance()), 1)
            } else {
                message
            }
        }
    }
}

pub(crate) fn plural<'a>(count: usize, one: &'a str, many: &'a str) -> &'a str {
    if count == 1 { one } else { many }
}

fn list_values(options: &Value) -> String {
    match options {
        Value::Array(values) => values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Calls `visit(path, schema)` for `schema` and every subschema below it, so that rules
/// like "no `$ref` anywhere" see nested objects, arrays and combinators alike.
pub(crate) fn walk<'a>(
    schema: &'a Value,
    path: &str,
    visit: &mut dyn FnMut(&str, &'a serde_json::Map<String, Value>),
) {
    walk_nested(schema, path, 0, &mut |here, _, map| visit(here, map));
}

/// What compiling a schema costs grows with these, past its size in bytes: a validator is
/// built for every subschema, and `anyOf`/`allOf`/`oneOf` nested in one another make
/// each level's alternatives be tried under every alternative above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaSize {
    /// The schema and every subschema below it.
    pub subschemas: usize,
    /// How deep `anyOf`, `allOf` and `oneOf` nest in one another (0 without any).
    pub combinator_depth: usize,
}

/// Measures `schema` (see [`SchemaSize`]) without compiling it.
pub fn schema_size(schema: &Value) -> SchemaSize {
    let mut size = SchemaSize {
        subschemas: 0,
        combinator_depth: 0,
    };
    walk_nested(schema, "", 0, &mut |_, combinators, _| {
        size.subschemas += 1;
        size.combinator_depth = size.combinator_depth.max(combinators);
    });
    size
}

/// What [`walk_nested`] calls for each subschema: its path, how many combinators enclose
/// it, and the subschema.
type NestedVisit<'v, 'a> = dyn FnMut(&str, usize, &'a serde_json::Map<String, Value>) + 'v;

/// [`walk`], telling `visit` also how many combinators enclose each subschema.
fn walk_nested<'a>(
    schema: &'a Value,
    path: &str,
    combinators: usize,
    visit: &mut NestedVisit<'_, 'a>,
) {
    let Value::Object(map) = schema else { return };
    visit(path, combinators, map);
    for (key, value) in map {
        let here = pointer(path, key);
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(children) = value {
                    for (name, child) in children {
                        walk_nested(child, &pointer(&here, name), combinators, visit);
                    }
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "additionalItems" => walk_nested(value, &here, combinators, visit),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                let nested = if key == "prefixItems" {
                    combinators
                } else {
                    combinators + 1
                };
                if let Value::Array(children) = value {
                    for (index, child) in children.iter().enumerate() {
                        walk_nested(child, &pointer(&here, index), nested, visit);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schemas_size_counts_its_subschemas_and_how_deep_combinators_nest() {
        let schema = json!({"type": "object", "properties": {
            "a": {"anyOf": [{"type": "string"}, {"allOf": [{"oneOf": [{"type": "null"}]}]}]},
            "b": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
            "anyOf": {"type": "string"}
        }});
        assert_eq!(
            schema_size(&schema),
            SchemaSize {
                subschemas: 10,
                combinator_depth: 3
            }
        );
        assert_eq!(
            schema_size(&json!(true)),
            SchemaSize {
                subschemas: 0,
                combinator_depth: 0
            }
        );
    }
}
