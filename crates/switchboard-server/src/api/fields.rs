//! What every front-end's validator shares: a problem with one field of the request, the one
//! 400 that lists them (bounded, so thousands of broken fields make a short answer), and the
//! checks of fields that mean the same in every API. Client values are quoted through
//! `quote_value`, which cuts long ones, so an error never echoes a large input back.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_tools::quote_value;
use switchboard_wire::ConvertError;

use crate::api::error::ApiError;

/// Problems named in one error.
const MAX_PROBLEMS_LISTED: usize = 20;

/// A problem with one field (its parameter name or path) of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub param: String,
    pub message: String,
}

pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid {
        param: param.into(),
        message: message.into(),
    }
}

/// A problem the wire crate found reading a part of the request, at the place it names.
pub(crate) fn converted(error: ConvertError) -> Invalid {
    match error {
        ConvertError::Invalid { path, message } => invalid(path, message),
        // Reading a part of a request refuses nothing as unsupported; named whole if it did.
        ConvertError::Unsupported { .. } => invalid("request", error.to_string()),
    }
}

/// One 400 listing the problems, `param: message` each; the first names the parameter.
pub(crate) fn rejection(problems: &[Invalid]) -> ApiError {
    let param = problems.first().map(|first| first.param.clone());
    let mut message = problems
        .iter()
        .take(MAX_PROBLEMS_LISTED)
        .map(|problem| format!("{}: {}", problem.param, problem.message))
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > MAX_PROBLEMS_LISTED {
        message.push_str(&format!(
            "; and {} more problems",
            problems.len() - MAX_PROBLEMS_LISTED
        ));
    }
    ApiError::invalid_request(message, param)
}

/// A field as the client sent it: absent (or null), a value of its type, or something
/// else, kept so that the problem can quote it. Parsing never fails on such a field, so
/// that every wrong field of a request is listed, not only the first. For small values
/// only (a number, a flag, a name, a kind): the value is read whole before it is typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Sent<T> {
    #[default]
    Absent,
    Given(T),
    Wrong(Value),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Sent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::of(Value::deserialize(deserializer)?))
    }
}

impl<T: DeserializeOwned> Sent<T> {
    /// The field read from a value already parsed.
    pub(crate) fn of(value: Value) -> Self {
        match value {
            Value::Null => Self::Absent,
            value => match T::deserialize(&value) {
                Ok(typed) => Self::Given(typed),
                Err(_) => Self::Wrong(value),
            },
        }
    }
}

impl<T: DeserializeOwned> Sent<T> {
    /// The field `name` of a body read as a JSON object.
    pub(crate) fn field(request: &Map<String, Value>, name: &str) -> Self {
        Self::of(request.get(name).cloned().unwrap_or_default())
    }
}

impl<T> Sent<T> {
    /// What was sent in place of one of the values a field takes, as a problem quotes it:
    /// the value, or nothing. For a field that takes every value of its type, so that
    /// `Given` is never one of these.
    pub(crate) fn quoted(self) -> String {
        match self {
            Sent::Wrong(value) => quote_value(&value),
            Sent::Absent | Sent::Given(_) => "nothing".to_owned(),
        }
    }

    /// The value when it is one of type `T` that `valid` accepts; otherwise the problem
    /// `param: {what}, got {the value}` is recorded. Absent is `None`, with no problem.
    pub(crate) fn check(
        self,
        param: &str,
        what: &str,
        valid: impl FnOnce(&T) -> bool,
        problems: &mut Vec<Invalid>,
    ) -> Option<T>
    where
        T: Serialize,
    {
        match self {
            Sent::Absent => None,
            Sent::Given(value) if valid(&value) => Some(value),
            Sent::Given(value) => {
                let sent = serde_json::to_value(&value).unwrap_or_default();
                problems.push(invalid(
                    param,
                    format!("{what}, got {}", quote_value(&sent)),
                ));
                None
            }
            Sent::Wrong(sent) => {
                problems.push(invalid(
                    param,
                    format!("{what}, got {}", quote_value(&sent)),
                ));
                None
            }
        }
    }
}

/// `model`: a non-empty string (empty when it is not one; the problem is recorded).
pub(crate) fn model(model: Sent<String>, problems: &mut Vec<Invalid>) -> String {
    match model {
        Sent::Given(model) if !model.trim().is_empty() => model,
        Sent::Given(_) | Sent::Absent => {
            problems.push(invalid(
                "model",
                "you must name a model (a route, an alias of one, or character/<name>)",
            ));
            String::new()
        }
        wrong => {
            wrong.check("model", "expected a string", |_| true, problems);
            String::new()
        }
    }
}

/// A boolean field; absent or null is `false`.
pub(crate) fn boolean(flag: Sent<bool>, param: &str, problems: &mut Vec<Invalid>) -> bool {
    flag.check(param, "expected a boolean", |_| true, problems)
        .unwrap_or(false)
}

/// A token count: a positive integer up to `u32::MAX`.
pub(crate) fn token_count(
    count: Sent<u64>,
    param: &str,
    problems: &mut Vec<Invalid>,
) -> Option<u32> {
    count
        .check(
            param,
            &format!("must be a positive integer up to {}", u32::MAX),
            |count| *count > 0 && u32::try_from(*count).is_ok(),
            problems,
        )
        .and_then(|count| u32::try_from(count).ok())
}

/// A number field within `min..=max`, when present.
pub(crate) fn number(
    number: Sent<f64>,
    param: &str,
    min: f64,
    max: f64,
    problems: &mut Vec<Invalid>,
) -> Option<f64> {
    number.check(
        param,
        &format!("must be a number from {min} to {max}"),
        |value| (min..=max).contains(value),
        problems,
    )
}

/// A list of objects (null: none); anything else is the error `expected an array, got …`.
pub(crate) fn array<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<T>>, D::Error> {
    const WHAT: &str = "expected an array";

    struct Array<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Array<T> {
        type Value = Option<Vec<T>>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an array")
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
            Err(refused(WHAT, &Value::from(text)))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<Self::Value, A::Error> {
            let objects: Vec<Object<T>> = collect(items)?;
            Ok(Some(objects.into_iter().map(|Object(item)| item).collect()))
        }

        refuse_other_types!(WHAT);
    }

    deserializer.deserialize_any(Array(PhantomData))
}

/// `T` read from a JSON object only: a struct serde derives would also take an array of its
/// fields in order (`["user", "hi"]` as a message), which no API means.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = Object<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Object)
            }
        }

        deserializer.deserialize_map(Fields(PhantomData))
    }
}

/// A field that takes a string or a list (a message's content, the system prompt, a
/// tool result's, a Responses `input`), read in place: the list's elements into their
/// type as the body is read, and any other JSON value kept for the problem to quote.
#[derive(Debug)]
pub enum TextOrList<T> {
    Text(String),
    List(Vec<T>),
    Other(Value),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TextOrList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Shape<T> {
            type Value = TextOrList<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string or an array")
            }

            fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(TextOrList::Text(text.to_owned()))
            }

            fn visit_string<E: Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(TextOrList::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<Self::Value, A::Error> {
                collect(items).map(TextOrList::List)
            }

            fn visit_bool<E: Error>(self, value: bool) -> Result<Self::Value, E> {
                Ok(TextOrList::Other(value.into()))
            }

            fn visit_i64<E: Error>(self, value: i64) -> Result<Self::Value, E> {
                Ok(TextOrList::Other(value.into()))
            }

            fn visit_u64<E: Error>(self, value: u64) -> Result<Self::Value, E> {
                Ok(TextOrList::Other(value.into()))
            }

            fn visit_f64<E: Error>(self, value: f64) -> Result<Self::Value, E> {
                Ok(TextOrList::Other(value.into()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(TextOrList::Other)
            }
        }

        deserializer.deserialize_any(Shape(PhantomData))
    }
}

pub(crate) fn collect<'de, T: Deserialize<'de>, A: SeqAccess<'de>>(
    mut items: A,
) -> Result<Vec<T>, A::Error> {
    let mut list = Vec::new();
    while let Some(item) = items.next_element()? {
        list.push(item);
    }
    Ok(list)
}

/// The problem of a value whose JSON type a field does not take: `{what}, got {value}`.
pub(crate) fn refused<E: serde::de::Error>(what: &str, value: &Value) -> E {
    E::custom(format!("{what}, got {}", quote_value(value)))
}

/// Visitor methods for the JSON types a field does not take (numbers, booleans, objects):
/// each is the error `{what}, got {value}`, so a hand-written visitor reads like the rest
/// of the API's errors rather than serde's "invalid type".
macro_rules! refuse_other_types {
    ($what:expr) => {
        fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
            Err($crate::api::fields::refused(
                $what,
                &serde_json::Value::Bool(value),
            ))
        }

        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
            Err($crate::api::fields::refused($what, &value.into()))
        }

        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
            Err($crate::api::fields::refused($what, &value.into()))
        }

        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
            Err($crate::api::fields::refused($what, &value.into()))
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let value = <serde_json::Value as serde::Deserialize>::deserialize(
                serde::de::value::MapAccessDeserializer::new(map),
            )?;
            Err($crate::api::fields::refused($what, &value))
        }
    };
}
pub(crate) use refuse_other_types;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_large_wrong_value_is_quoted_short() {
        let mut problems = Vec::new();
        assert!(!boolean(
            Sent::of(json!(vec![7; 100_000])),
            "stream",
            &mut problems
        ));
        let message = &problems[0].message;
        assert!(
            message.starts_with("expected a boolean, got [7,7,"),
            "{message}"
        );
        assert!(message.len() < 300, "{} bytes", message.len());
    }

    #[test]
    fn the_rejection_lists_twenty_problems_and_counts_the_rest() {
        let problems: Vec<Invalid> = (0..25)
            .map(|index| invalid(format!("tools[{index}]"), "bad"))
            .collect();
        let error = rejection(&problems);
        assert_eq!(error.param.as_deref(), Some("tools[0]"));
        assert!(
            error
                .message
                .ends_with("tools[19]: bad; and 5 more problems"),
            "{}",
            error.message
        );
    }
}
