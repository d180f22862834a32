//! Fuzzer-chosen chunk boundaries. A few header bytes give the sizes of successive pieces
//! (cycled), so one mutated byte moves many boundaries and all-zero bytes mean one byte at a
//! time, the hardest case for an incremental decoder.

use std::ops::Range;

/// Header bytes that describe the chunking.
pub(crate) const PATTERN_LEN: usize = 4;

/// Cuts `0..len` into pieces of `pattern[i % PATTERN_LEN] + 1` bytes; a cut that falls where
/// `is_boundary` says no (inside a UTF-8 character) moves forward to the next boundary.
pub(crate) fn pieces(
    pattern: &[u8],
    len: usize,
    is_boundary: impl Fn(usize) -> bool,
) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut sizes = pattern.iter().map(|&byte| usize::from(byte) + 1).cycle();
    while start < len {
        let mut end = (start + sizes.next().unwrap_or(len)).min(len);
        while end < len && !is_boundary(end) {
            end += 1;
        }
        pieces.push(start..end);
        start = end;
    }
    pieces
}

/// The first `N` bytes of `data` (zero-padded when it is shorter) and the rest.
pub(crate) fn header<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut header = [0; N];
    let taken = data.len().min(N);
    header[..taken].copy_from_slice(&data[..taken]);
    (header, &data[taken..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cycle_the_pattern_and_respect_boundaries() {
        let all = |_| true;
        assert_eq!(pieces(&[0, 2], 7, all), [0..1, 1..4, 4..5, 5..7]);
        assert_eq!(pieces(&[0, 0, 0, 0], 3, all), [0..1, 1..2, 2..3]);
        assert!(pieces(&[9], 0, all).is_empty());
        let text = "aé€b";
        assert_eq!(
            pieces(&[0], text.len(), |at| text.is_char_boundary(at)),
            [0..1, 1..3, 3..6, 6..7]
        );
    }

    #[test]
    fn short_headers_are_padded() {
        assert_eq!(header::<3>(&[7]), ([7, 0, 0], &[][..]));
        assert_eq!(header::<1>(&[7, 8, 9]), ([7], &[8, 9][..]));
    }
}
