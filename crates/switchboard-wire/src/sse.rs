//! Server-sent events framing (the WHATWG rules OpenAI and Anthropic streams follow) as a
//! synchronous state machine, so decoders stay pure and can name the byte offset of every
//! event; `eventsource-stream` only works on an async stream and loses offsets.

use crate::DecodeError;
use crate::lines::{Lines, MAX_EVENT_BYTES};

/// One dispatched event: its `event:` name (empty when absent), its joined `data:` lines,
/// the offset of its first field and the offset of its data's first byte in the body.
#[derive(Debug)]
pub(crate) struct SseEvent<'a> {
    pub(crate) name: &'a str,
    pub(crate) data: &'a str,
    pub(crate) offset: usize,
    pub(crate) data_offset: usize,
}

#[derive(Debug, Default)]
pub(crate) struct Sse {
    lines: Lines,
    pending: Pending,
}

#[derive(Debug, Default)]
struct Pending {
    name: String,
    data: String,
    has_data: bool,
    start: Option<usize>,
    data_start: usize,
}

impl Pending {
    fn line(
        &mut self,
        offset: usize,
        line: &str,
        each: &mut impl FnMut(SseEvent<'_>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let (offset, line) = match line.strip_prefix('\u{feff}') {
            Some(rest) if offset == 0 => (offset + '\u{feff}'.len_utf8(), rest),
            _ => (offset, line),
        };
        if line.is_empty() {
            return self.dispatch(each);
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                } else {
                    self.data_start = offset + line.len() - value.len();
                }
                self.data.push_str(value);
                self.has_data = true;
                let start = *self.start.get_or_insert(offset);
                if self.data.len() > MAX_EVENT_BYTES {
                    return Err(DecodeError::too_large(start));
                }
            }
            "event" => {
                value.clone_into(&mut self.name);
                self.start.get_or_insert(offset);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(
        &mut self,
        each: &mut impl FnMut(SseEvent<'_>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let outcome = match (self.has_data, self.start) {
            (true, Some(offset)) => each(SseEvent {
                name: &self.name,
                data: &self.data,
                offset,
                data_offset: self.data_start,
            }),
            _ => Ok(()),
        };
        self.name.clear();
        self.data.clear();
        self.has_data = false;
        self.start = None;
        outcome
    }
}

impl Sse {
    /// Bytes fed so far.
    pub(crate) fn position(&self) -> usize {
        self.lines.position()
    }

    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(SseEvent<'_>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let pending = &mut self.pending;
        self.lines
            .feed(bytes, |offset, line| pending.line(offset, line, &mut each))
    }

    /// End of body: an event the server did not close with a blank line is still
    /// dispatched, so a truncated JSON payload is reported as such rather than dropped.
    pub(crate) fn finish(
        &mut self,
        mut each: impl FnMut(SseEvent<'_>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        if let Some((offset, line)) = self.lines.rest()? {
            self.pending.line(offset, line, &mut each)?;
        }
        self.pending.dispatch(&mut each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &str, piece: usize) -> Vec<(String, String, usize)> {
        let mut sse = Sse::default();
        let mut seen = Vec::new();
        let mut record = |event: SseEvent<'_>| {
            assert!(
                input[event.data_offset..].starts_with(event.data.lines().next().unwrap_or(""))
            );
            seen.push((event.name.to_owned(), event.data.to_owned(), event.offset));
            Ok(())
        };
        for chunk in input.as_bytes().chunks(piece) {
            sse.feed(chunk, &mut record).unwrap();
        }
        sse.finish(&mut record).unwrap();
        seen
    }

    #[test]
    fn fields_comments_and_multiline_data() {
        let input = ": keep-alive\r\n\r\nevent: ping\r\ndata: {\"a\":1}\r\n\r\ndata:x\ndata: y\nid: 3\n\ndata: tail";
        let expected = vec![
            ("ping".to_owned(), "{\"a\":1}".to_owned(), 16),
            (String::new(), "x\ny".to_owned(), 46),
            (String::new(), "tail".to_owned(), 68),
        ];
        for piece in 1..=input.len() {
            assert_eq!(events(input, piece), expected, "piece {piece}");
        }
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert!(events("event: nothing\n\n", 3).is_empty());
    }
}
