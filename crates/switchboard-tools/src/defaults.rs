//! Filling in the `default` values a schema declares, prepared once per tool.

use serde_json::{Map, Value};

/// The defaults of one object schema and of the objects nested in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Defaults {
    fill: Vec<(String, Value)>,
    nested: Vec<(String, Defaults)>,
    items: Option<Box<Defaults>>,
}

impl Defaults {
    pub(crate) fn from_schema(schema: &Value) -> Self {
        let mut defaults = Defaults::default();
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for (name, property) in properties {
                if let Some(default) = property.get("default") {
                    defaults.fill.push((name.clone(), default.clone()));
                }
                let nested = Defaults::from_schema(property);
                if !nested.is_empty() {
                    defaults.nested.push((name.clone(), nested));
                }
            }
        }
        if let Some(items) = schema.get("items") {
            let items = Defaults::from_schema(items);
            if !items.is_empty() {
                defaults.items = Some(Box::new(items));
            }
        }
        defaults
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fill.is_empty() && self.nested.is_empty() && self.items.is_none()
    }

    /// Adds each missing property that has a default, at every level.
    pub(crate) fn apply(&self, value: &mut Value) {
        match value {
            Value::Object(object) => self.apply_object(object),
            Value::Array(items) => {
                if let Some(defaults) = &self.items {
                    items.iter_mut().for_each(|item| defaults.apply(item));
                }
            }
            _ => {}
        }
    }

    pub(crate) fn apply_object(&self, object: &mut Map<String, Value>) {
        for (name, default) in &self.fill {
            if !object.contains_key(name) {
                object.insert(name.clone(), default.clone());
            }
        }
        for (name, nested) in &self.nested {
            if let Some(child) = object.get_mut(name) {
                nested.apply(child);
            }
        }
    }
}
