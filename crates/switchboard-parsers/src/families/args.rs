//! Builds a call's JSON arguments object from key/value pairs, for formats that write each
//! argument as its own element (Qwen XML, GLM, DeepSeek DSML, Kimi K3). String values stream
//! as they arrive; other values are typed by the tool's schema once complete.

use serde_json::Value;

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
