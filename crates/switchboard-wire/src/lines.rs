//! Line framing over a byte stream fed in arbitrary pieces: both SSE and NDJSON are lines,
//! and only a complete line is turned into text, so a UTF-8 character split across two
//! network reads is never seen half. A line is bounded: a backend that never sends a newline
//! cannot make the gateway buffer without end.

use crate::{DecodeError, DecodeErrorKind};

/// The longest line, and the longest SSE event, a decoder accepts. Generous for any real
/// answer (a whole tool call's arguments in one event fit many times over), small enough
/// that a runaway backend is stopped long before it hurts.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Bytes received but not yet consumed as complete lines.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    buffer: Vec<u8>,
    /// Absolute offset (from the first byte of the body) of `buffer[0]`.
    base: usize,
    /// How far `buffer` has been searched for a newline, so 1-byte feeds stay linear.
    searched: usize,
}

impl Lines {
    /// Total bytes fed so far.
    pub(crate) fn position(&self) -> usize {
        self.base + self.buffer.len()
    }

    /// Appends `bytes` and hands every line now complete to `each` with its start offset,
    /// without its `\n` or `\r\n` terminator.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(usize, &str) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut from = self.searched;
        while let Some(found) = self.buffer[from..].iter().position(|&byte| byte == b'\n') {
            let end = from + found;
            if end - start > MAX_EVENT_BYTES {
                return Err(DecodeError::too_large(self.base + start));
            }
            let mut line = &self.buffer[start..end];
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            let offset = self.base + start;
            each(offset, as_text(line, offset)?)?;
            start = end + 1;
            from = start;
        }
        self.buffer.drain(..start);
        self.base += start;
        self.searched = self.buffer.len();
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(DecodeError::too_large(self.base));
        }
        Ok(())
    }

    /// The unterminated last line, if any bytes are left, with its start offset.
    pub(crate) fn rest(&mut self) -> Result<Option<(usize, &str)>, DecodeError> {
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let offset = self.base;
        let mut line = self.buffer.as_slice();
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        // A body cut inside a multi-byte character: keep the whole characters, so the
        // caller sees a cut line (a truncation) rather than an encoding error.
        if let Err(error) = std::str::from_utf8(line)
            && error.error_len().is_none()
        {
            line = &line[..error.valid_up_to()];
        }
        Ok(Some((offset, as_text(line, offset)?)))
    }
}

fn as_text(line: &[u8], offset: usize) -> Result<&str, DecodeError> {
    std::str::from_utf8(line).map_err(|error| {
        DecodeError::new(offset + error.valid_up_to(), DecodeErrorKind::InvalidUtf8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8], piece: usize) -> Vec<(usize, String)> {
        let mut lines = Lines::default();
        let mut seen = Vec::new();
        for chunk in input.chunks(piece) {
            lines
                .feed(chunk, |offset, line| {
                    seen.push((offset, line.to_owned()));
                    Ok(())
                })
                .unwrap();
        }
        if let Some((offset, line)) = lines.rest().unwrap() {
            seen.push((offset, line.to_owned()));
        }
        seen
    }

    #[test]
    fn same_lines_and_offsets_in_any_chunking() {
        let input = "a\r\nhé llo\n\nlast".as_bytes();
        let whole = lines_of(input, input.len());
        assert_eq!(
            whole,
            vec![
                (0, "a".into()),
                (3, "hé llo".into()),
                (11, String::new()),
                (12, "last".into())
            ]
        );
        for piece in 1..input.len() {
            assert_eq!(lines_of(input, piece), whole, "piece {piece}");
        }
    }

    #[test]
    fn invalid_utf8_names_its_offset() {
        let mut lines = Lines::default();
        let error = lines.feed(b"ok\nab\xffc\n", |_, _| Ok(())).unwrap_err();
        assert_eq!(error.offset, 5);
        assert_eq!(error.kind, DecodeErrorKind::InvalidUtf8);
    }
}
