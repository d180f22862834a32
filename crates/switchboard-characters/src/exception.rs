//! Turning what character code threw into words: the `ErrorName - message` the model reads,
//! the stack the developer reads, and the line and column of a syntax error.

use rquickjs::{CaughtError, Coerced, Ctx, Type, Value};

use crate::clock::Clock;

/// Why character code did not return normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The deadline passed and the interrupt handler stopped the code.
    TimedOut,
    /// The runtime's memory limit was reached.
    OutOfMemory,
    /// The code threw (or a promise it returned rejected).
    Threw {
        name: String,
        message: String,
        stack: String,
    },
}

impl Failure {
    /// Reads the pending exception of `ctx` after `error`, telling an interrupt and an
    /// exhausted memory limit apart from what the code itself threw.
    pub fn caught(ctx: &Ctx<'_>, error: rquickjs::Error, clock: &Clock) -> Self {
        let caught = CaughtError::from_error(ctx, error);
        if clock.fired() {
            return Failure::TimedOut;
        }
        match caught {
            CaughtError::Exception(exception) => Self::thrown_value(ctx, &exception.into_value()),
            CaughtError::Value(value) => Self::thrown_value(ctx, &value),
            CaughtError::Error(error) => Failure::Threw {
                name: "InternalError".to_owned(),
                message: error.to_string(),
                stack: String::new(),
            },
        }
    }

    /// A rejected promise's reason, or a thrown value that is not an `Error`.
    pub fn thrown_value<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> Self {
        let failure = match value.as_exception() {
            Some(exception) => {
                let name = exception
                    .get::<_, Coerced<String>>("name")
                    .map_or_else(|_| "Error".to_owned(), |name| name.0);
                let message = exception.message().unwrap_or_default();
                if name == "InternalError" && message == "out of memory" {
                    Failure::OutOfMemory
                } else {
                    Failure::Threw {
                        name,
                        message,
                        stack: exception.stack().unwrap_or_default(),
                    }
                }
            }
            None => Failure::Threw {
                name: "Error".to_owned(),
                message: coerce(ctx, value),
                stack: String::new(),
            },
        };
        // A throwing `name` getter must not leave its exception behind for the next call.
        ctx.catch();
        failure
    }

    /// `ErrorName - message`, how an exception reads in the model's `Error: …` result.
    pub fn summary(&self) -> String {
        match self {
            Failure::TimedOut => "execution timed out".to_owned(),
            Failure::OutOfMemory => "out of memory".to_owned(),
            Failure::Threw { name, message, .. } => format!("{name} - {message}"),
        }
    }
}

/// `String(value)`; a value whose `toString` throws reads as a placeholder.
pub(crate) fn coerce<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    match value.get::<Coerced<String>>() {
        Ok(text) => text.0,
        Err(_) => {
            ctx.catch();
            "[value that cannot be converted to a string]".to_owned()
        }
    }
}

/// The JavaScript type of a value as a developer names it (`array` and `null` apart from
/// `object`), for `Tool must return string, got <type>`.
pub(crate) fn type_name(value: &Value<'_>) -> &'static str {
    match value.type_of() {
        Type::Uninitialized | Type::Undefined | Type::Unknown => "undefined",
        Type::Null => "null",
        Type::Bool => "boolean",
        Type::Int | Type::Float => "number",
        Type::String => "string",
        Type::Symbol => "symbol",
        Type::BigInt => "bigint",
        Type::Array => "array",
        Type::Function | Type::Constructor => "function",
        Type::Promise => "promise",
        Type::Object | Type::Exception | Type::Proxy | Type::Module => "object",
    }
}

/// File, line and column of the first frame of a stack (`    at narrator.js:3:15`).
pub(crate) fn location(stack: &str) -> Option<(String, u32, u32)> {
    let frame = stack
        .lines()
        .find_map(|line| line.trim().strip_prefix("at "))?;
    let frame = frame.trim_end_matches(')');
    let frame = frame.rsplit_once(" (").map_or(frame, |(_, place)| place);
    let mut parts = frame.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_owned(), line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_reads_the_first_frame() {
        assert_eq!(
            location("    at narrator.js:3:15\n"),
            Some(("narrator.js".to_owned(), 3, 15))
        );
        assert_eq!(
            location("    at handleToolCall (quiz.js:12:7)\n    at <anonymous>"),
            Some(("quiz.js".to_owned(), 12, 7))
        );
        assert_eq!(location(""), None);
        assert_eq!(location("    at <native>"), None);
    }
}
