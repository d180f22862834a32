//! Builds a call's JSON arguments object from key/value pairs, for formats that write each
//! argument as its own element (Qwen XML, GLM, DeepSeek DSML, Kimi K3). String values stream
//! as they arrive; other values are typed by the tool's schema once complete. Also streams
//! arguments that the model writes as one raw JSON object.

use serde_json::Value;

use crate::json_scan::{JsonScan, Scan};

use crate::out::Out;

/// Writes `{"k":v,…}` to the open call piece by piece; `}` comes from [`ArgsWriter::close`].
#[derive(Debug, Default)]
pub(crate) struct ArgsWriter {
    count: usize,
}

impl ArgsWriter {
    fn key(&mut self, out: &mut Out, key: &str) {
        let mut piece = String::from(if self.count == 0 { "{" } else { "," });
        piece.push_str(&Value::String(key.to_owned()).to_string());
        piece.push(':');
        out.arguments(&piece);
        self.count += 1;
    }

    /// One complete value.
    pub(crate) fn value(&mut self, out: &mut Out, key: &str, value: &Value) {
        self.key(out, key);
        out.arguments(&value.to_string());
    }

    /// Opens a string value whose text follows through [`ArgsWriter::string_text`].
    pub(crate) fn open_string(&mut self, out: &mut Out, key: &str) {
        self.key(out, key);
        out.arguments("\"");
    }

    pub(crate) fn string_text(&mut self, out: &mut Out, text: &str) {
        let quoted = Value::String(text.to_owned()).to_string();
        out.arguments(&quoted[1..quoted.len() - 1]);
    }

    pub(crate) fn close_string(&mut self, out: &mut Out) {
        out.arguments("\"");
    }

    /// Ends the object; with no arguments nothing is written and the sink sends `{}`.
    pub(crate) fn close(&mut self, out: &mut Out) {
        if self.count > 0 {
            out.arguments("}");
        }
        self.count = 0;
    }
}

/// What [`RawJsonArgs::feed`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fed {
    More,
    /// The object closed; the call is ended and the text after this offset is not arguments.
    Done(usize),
    /// The text does not open a JSON object; the call has been reported invalid and the
    /// caller skips the rest of it.
    Broken,
}

/// Streams arguments the model writes as one JSON object, as they arrive, and ends the call
/// where the object closes (braces inside strings do not count).
#[derive(Debug, Default)]
pub(crate) struct RawJsonArgs {
    scan: JsonScan,
    sent: bool,
}

impl RawJsonArgs {
    pub(crate) fn feed(&mut self, out: &mut Out, text: &str) -> Fed {
        let outcome = self.scan.feed(text);
        let piece = match outcome {
            Scan::More if !self.scan.started() => return Fed::More,
            Scan::More => text,
            Scan::Done(end) => &text[..end],
            Scan::NotJson => {
                out.fail("the arguments are not a JSON object", "");
                return Fed::Broken;
            }
        };
        let piece = if self.sent { piece } else { piece.trim_start() };
        self.sent = true;
        out.arguments(piece);
        match outcome {
            Scan::Done(end) => {
                out.end();
                Fed::Done(end)
            }
            _ => Fed::More,
        }
    }

    /// Whether the object has begun, so markup met now is part of a value.
    pub(crate) fn started(&self) -> bool {
        self.scan.started()
    }
}
