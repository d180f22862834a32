//! How many bytes a value takes as JSON, counted as it is written and never held: for
//! bounds on what is kept (stored responses) or accepted (an MCP server's tool listing).

use serde::Serialize;

/// The length of `value` as compact JSON; `usize::MAX` for a value that cannot be written
/// (so it fails every bound).
pub fn json_len(value: &impl Serialize) -> usize {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_or(usize::MAX, |()| counter.0)
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_serde_json_writes() {
        let value = serde_json::json!({"name": "ünïcode", "list": [1, 2.5, null]});
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len());
    }
}
