//! Where in a request a problem is, written the way its API writes paths: the one formatter
//! of serde's paths (a body read into its types, an item or an MCP entry read from its
//! value) and of JSON Pointers into a request's schemas, so that every problem names its
//! field alike.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;
use serde_path_to_error::{Path, Segment};
use switchboard_tools::truncate_message;

use crate::ConvertError;

/// How an API writes the path of a field: OpenAI's `messages[3].content`, Anthropic's
/// `messages.3.content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStyle {
    Brackets,
    Dots,
}

/// Characters of a named path (object keys come from the client).
const MAX_PATH_CHARS: usize = 200;

impl PathStyle {
    /// The place of a serde problem: `path` below `at` (where the value read stands, empty
    /// for a whole body), and the field serde's `message` names when a field is missing
    /// (serde says which only in its words). Empty for the body itself.
    pub fn place(self, at: &str, path: &Path, message: &str) -> String {
        let mut place = at.to_owned();
        for segment in path.iter() {
            match segment {
                Segment::Seq { index } => self.index(&mut place, *index),
                Segment::Map { key } => field(&mut place, key),
                Segment::Enum { .. } | Segment::Unknown => {}
            }
        }
        if let Some(missing) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            field(&mut place, missing);
        }
        truncate_message(place, MAX_PATH_CHARS)
    }

    /// A JSON Pointer (`/0/function/name`, RFC 6901) below `at`: `at[0].function.name`.
    pub fn pointer(self, at: &str, pointer: &str) -> String {
        let mut place = at.to_owned();
        for segment in pointer.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            match segment.parse::<usize>() {
                Ok(index) => self.index(&mut place, index),
                Err(_) => field(&mut place, &segment),
            }
        }
        truncate_message(place, MAX_PATH_CHARS)
    }

    /// Item `index` of the list at `at`: `tools[2]`, `tools.2`.
    pub fn item(self, at: &str, index: usize) -> String {
        let mut place = at.to_owned();
        self.index(&mut place, index);
        place
    }

    fn index(self, place: &mut String, index: usize) {
        match self {
            PathStyle::Brackets => place.push_str(&format!("[{index}]")),
            PathStyle::Dots => field(place, &index.to_string()),
        }
    }
}

fn field(place: &mut String, name: &str) {
    if !place.is_empty() {
        place.push('.');
    }
    place.push_str(name);
}

/// `value`, which stands at `at` in the request, read into its type; a problem names its
/// place below `at` in the API's `style`.
pub fn typed<T: DeserializeOwned>(
    value: Value,
    at: &str,
    style: PathStyle,
) -> Result<T, ConvertError> {
    Read::from(value).at(at, style)
}

/// A part of a body read into its type as the body is read, whose problem does not end
/// the parse: it is kept with its path below the part, to be listed with the request's
/// other problems once the part's place is known ([`Read::at`]).
#[derive(Debug)]
pub struct Read<T>(pub(crate) Result<T, serde_path_to_error::Error<serde_json::Error>>);

impl<T: DeserializeOwned> From<Value> for Read<T> {
    fn from(value: Value) -> Self {
        Self(serde_path_to_error::deserialize(value))
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Read<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

impl<T> Read<T> {
    /// The part, which stands at `at` in the request; a problem names its place below
    /// `at` in the API's `style`.
    pub fn at(self, at: &str, style: PathStyle) -> Result<T, ConvertError> {
        self.0.map_err(|error| {
            let message = error.inner().to_string();
            let place = style.place(at, error.path(), &message);
            ConvertError::invalid(place, message)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Server {
        name: String,
        #[serde(default)]
        tools: Vec<String>,
    }

    #[test]
    fn a_problem_is_named_below_where_its_value_stands() {
        let error = typed::<Server>(
            json!({"name": "a", "tools": ["x", 5]}),
            "mcp_servers.0",
            PathStyle::Dots,
        )
        .unwrap_err();
        let ConvertError::Invalid { path, message } = error else {
            panic!("{error:?}")
        };
        assert_eq!(path, "mcp_servers.0.tools.1");
        assert!(
            message.starts_with("invalid type: integer `5`"),
            "{message}"
        );
        let error = typed::<Server>(json!({}), "tools[2]", PathStyle::Brackets).unwrap_err();
        assert_eq!(
            error,
            ConvertError::invalid("tools[2].name", "missing field `name`")
        );
    }

    #[test]
    fn a_part_read_with_its_body_keeps_its_problem_for_its_place() {
        #[derive(Debug, Deserialize)]
        struct Body {
            servers: Vec<Read<Server>>,
        }
        let body: Body = serde_json::from_value(json!({"servers": [
            {"name": "a"}, {"name": "b", "tools": ["x", 5]}]}))
        .unwrap();
        let mut read = body.servers.into_iter();
        assert_eq!(
            read.next()
                .unwrap()
                .at("servers.0", PathStyle::Dots)
                .unwrap()
                .name,
            "a"
        );
        let error = read
            .next()
            .unwrap()
            .at("servers.1", PathStyle::Dots)
            .unwrap_err();
        let ConvertError::Invalid { path, .. } = error else {
            panic!("{error:?}")
        };
        assert_eq!(path, "servers.1.tools.1");
    }

    #[test]
    fn pointers_take_the_apis_style() {
        assert_eq!(
            PathStyle::Brackets.pointer("tools", "/0/function/a~1b"),
            "tools[0].function.a/b"
        );
        assert_eq!(
            PathStyle::Dots.pointer("tools", "/3/input_schema/type"),
            "tools.3.input_schema.type"
        );
        assert_eq!(PathStyle::Brackets.pointer("", "/0/name"), "[0].name");
    }
}
