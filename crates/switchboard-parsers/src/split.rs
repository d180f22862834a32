//! Cuts a stream of text chunks into plain text and family markers, holding back only the
//! shortest suffix that could still grow into a marker. Every byte is examined a bounded
//! number of times, so parsing stays linear however the output is chunked.

/// A piece of the stream: text, or the index of a marker in the splitter's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    Marker(usize),
}

/// Splits text on a fixed list of markers; the longest marker wins where several match.
#[derive(Debug)]
pub(crate) struct Splitter {
    markers: &'static [&'static str],
    starts: [bool; 256],
    held: String,
}

impl Splitter {
    pub(crate) fn new(markers: &'static [&'static str]) -> Self {
        let mut starts = [false; 256];
        for marker in markers {
            if let Some(&first) = marker.as_bytes().first() {
                starts[usize::from(first)] = true;
            }
        }
        Self {
            markers,
            starts,
            held: String::new(),
        }
    }

    /// Feeds one chunk; `on_piece` sees every piece that can be decided now.
    pub(crate) fn push(&mut self, chunk: &str, on_piece: impl FnMut(Piece<'_>)) {
        if self.held.is_empty() {
            let rest = self.split(chunk, false, on_piece);
            self.held.push_str(&chunk[rest..]);
        } else {
            let mut text = std::mem::take(&mut self.held);
            text.push_str(chunk);
            let rest = self.split(&text, false, on_piece);
            text.drain(..rest);
            self.held = text;
        }
    }

    /// End of output: whatever was held back is decided with no more input to come.
    pub(crate) fn finish(&mut self, on_piece: impl FnMut(Piece<'_>)) {
        let text = std::mem::take(&mut self.held);
        self.split(&text, true, on_piece);
    }

    /// Emits the pieces of `text` and returns where the undecided suffix starts.
    fn split(&self, text: &str, last: bool, mut on_piece: impl FnMut(Piece<'_>)) -> usize {
        let bytes = text.as_bytes();
        let mut plain = 0;
        let mut at = 0;
        while at < bytes.len() {
            if !self.starts[usize::from(bytes[at])] {
                at += 1;
                continue;
            }
            let rest = &text[at..];
            let mut best: Option<(usize, usize)> = None;
            let mut undecided = false;
            for (index, marker) in self.markers.iter().enumerate() {
                if rest.starts_with(marker) {
                    if best.is_none_or(|(_, len)| marker.len() > len) {
                        best = Some((index, marker.len()));
                    }
                } else if !last && rest.len() < marker.len() && marker.starts_with(rest) {
                    undecided = true;
                }
            }
            // An undecided marker is always longer than any match found here: wait for it.
            if undecided {
                if plain < at {
                    on_piece(Piece::Text(&text[plain..at]));
                }
                return at;
            }
            match best {
                Some((index, len)) => {
                    if plain < at {
                        on_piece(Piece::Text(&text[plain..at]));
                    }
                    on_piece(Piece::Marker(index));
                    at += len;
                    plain = at;
                }
                None => at += 1,
            }
        }
        if plain < bytes.len() {
            on_piece(Piece::Text(&text[plain..]));
        }
        bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(markers: &'static [&'static str], chunks: &[&str]) -> Vec<String> {
        let mut splitter = Splitter::new(markers);
        let mut out = Vec::new();
        let mut take = |piece: Piece<'_>| match piece {
            Piece::Text(text) => out.push(format!("T:{text}")),
            Piece::Marker(index) => out.push(format!("M:{index}")),
        };
        for chunk in chunks {
            splitter.push(chunk, &mut take);
        }
        splitter.finish(&mut take);
        // Adjacent text pieces are an artefact of chunking; merge them for comparison.
        let mut merged: Vec<String> = Vec::new();
        for piece in out {
            match (merged.last_mut(), piece.strip_prefix("T:")) {
                (Some(last), Some(text)) if last.starts_with("T:") => last.push_str(text),
                _ => merged.push(piece),
            }
        }
        merged
    }

    #[test]
    fn splits_markers_whatever_the_chunking() {
        const MARKERS: &[&str] = &["<tool_call>", "</tool_call>", "<think>"];
        let text = "a<b<tool_call>{x}</tool_call>c<thin";
        let whole = run(MARKERS, &[text]);
        assert_eq!(whole, ["T:a<b", "M:0", "T:{x}", "M:1", "T:c<thin"]);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(MARKERS, &chars), whole);
    }

    #[test]
    fn longest_marker_wins_and_waits_for_it() {
        const MARKERS: &[&str] = &["</parameter>", "\n</parameter>"];
        assert_eq!(run(MARKERS, &["x\n", "</param", "eter>"]), ["T:x", "M:1"]);
        assert_eq!(run(MARKERS, &["x</parameter>"]), ["T:x", "M:0"]);
    }

    #[test]
    fn holds_back_only_a_possible_marker_start() {
        let mut splitter = Splitter::new(&["<tool_call>"]);
        let mut seen = Vec::new();
        splitter.push("hello <to", |piece| seen.push(format!("{piece:?}")));
        assert_eq!(seen, ["Text(\"hello \")"]);
    }
}
