//! What a parser needs from the request's tools: which names exist, and the JSON type each
//! parameter should have, so formats that write values as bare text (XML-style parameters)
//! can tell the string `"3"` from the number `3`.

use std::sync::Arc;

use serde_json::Value;
use switchboard_tools::ToolDefinition;

/// The offered tools, read for their names and parameter schemas. Shared, not copied: a
/// parser (and each family parser the unknown-family detector starts) holds the request's
/// own list, which a coding agent's dozen tools make several kilobytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tools {
    tools: Arc<[ToolDefinition]>,
}

impl Tools {
    pub(crate) fn new(definitions: impl Into<Arc<[ToolDefinition]>>) -> Self {
        Self {
            tools: definitions.into(),
        }
    }

    /// With no tools offered there is nothing to check a name against, so every name is known.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|tool| tool.function.name == name)
    }

    /// The schema of `tool`'s `parameter`: the first tool of that name, its parameters'
    /// `properties` object.
    fn schema(&self, tool: &str, parameter: &str) -> Option<&Value> {
        self.tools
            .iter()
            .find(|definition| definition.function.name == tool)
            .and_then(|definition| definition.function.parameters.as_ref())
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
            .and_then(|properties| properties.get(parameter))
    }

    /// Whether the parameter's schema says plainly that it is a string, so its text can be
    /// streamed as a JSON string before it is complete.
    pub(crate) fn is_string(&self, tool: &str, parameter: &str) -> bool {
        let mut types = Vec::new();
        if let Some(schema) = self.schema(tool, parameter) {
            schema_types(schema, &mut types);
        }
        types == ["string"]
    }

    /// Turns a value written as bare text into JSON, typed by the parameter's schema.
    /// Without a schema, text that is valid JSON (a number, `true`, an object...) is taken as
    /// such and anything else stays a string.
    pub(crate) fn typed_value(&self, tool: &str, parameter: &str, raw: &str) -> Value {
        let mut types = Vec::new();
        if let Some(schema) = self.schema(tool, parameter) {
            schema_types(schema, &mut types);
        }
        if types.is_empty() {
            return untyped(raw);
        }
        for kind in &types {
            if let Some(value) = as_type(kind, raw) {
                return value;
            }
        }
        Value::String(raw.to_owned())
    }
}

fn schema_types<'a>(schema: &'a Value, types: &mut Vec<&'a str>) {
    match schema.get("type") {
        Some(Value::String(kind)) => types.push(kind),
        Some(Value::Array(kinds)) => types.extend(kinds.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            for option in options {
                schema_types(option, types);
            }
        }
    }
    if types.is_empty()
        && let Some(Value::Array(values)) = schema.get("enum")
        && values.iter().all(Value::is_string)
    {
        types.push("string");
    }
    // A string is the fallback for every other type, so try it last: "3" for a
    // ["string", "integer"] parameter is most likely the number.
    types.sort_by_key(|kind| *kind == "string");
}

fn as_type(kind: &str, raw: &str) -> Option<Value> {
    let text = raw.trim();
    match kind {
        "string" => Some(Value::String(raw.to_owned())),
        "integer" => match serde_json::from_str::<Value>(text) {
            Ok(Value::Number(number)) if number.is_i64() || number.is_u64() => {
                Some(Value::Number(number))
            }
            Ok(Value::Number(number)) => number
                .as_f64()
                .filter(|float| float.fract() == 0.0 && float.abs() < 9.0e15)
                .map(|float| Value::from(float as i64)),
            _ => None,
        },
        "number" => match serde_json::from_str::<Value>(text) {
            Ok(Value::Number(number)) => Some(Value::Number(number)),
            _ => None,
        },
        "boolean" => match text {
            "true" | "True" => Some(Value::Bool(true)),
            "false" | "False" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => matches!(text, "null" | "None").then_some(Value::Null),
        "object" => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => Some(value),
            _ => None,
        },
        "array" => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Array(_)) => Some(value),
            _ => None,
        },
        _ => None,
    }
}

fn untyped(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw.trim()) {
        Ok(value) if !raw.trim().is_empty() => value,
        _ => Value::String(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Tools {
        let definition = ToolDefinition::function(
            "f",
            "test",
            json!({"type": "object", "properties": {
                "n": {"type": "integer"}, "s": {"type": "string"}, "b": {"type": "boolean"},
                "o": {"type": ["object", "null"]}
            }}),
        );
        Tools::new(vec![definition])
    }

    #[test]
    fn bare_values_are_typed_by_the_schema() {
        let tools = tools();
        assert_eq!(tools.typed_value("f", "n", "3"), json!(3));
        assert_eq!(tools.typed_value("f", "s", "3"), json!("3"));
        assert_eq!(tools.typed_value("f", "b", "True"), json!(true));
        assert_eq!(tools.typed_value("f", "o", "None"), json!(null));
        assert_eq!(tools.typed_value("f", "o", "{\"a\": 1}"), json!({"a": 1}));
        assert_eq!(tools.typed_value("f", "n", "three"), json!("three"));
        assert_eq!(tools.typed_value("f", "other", "0042"), json!("0042"));
        assert_eq!(tools.typed_value("f", "other", "4.5"), json!(4.5));
    }

    #[test]
    fn names_are_known_only_when_offered() {
        assert!(tools().knows("f"));
        assert!(!tools().knows("g"));
        assert!(Tools::default().knows("anything"));
    }
}
