//! Target `wire`: backend bytes through the OpenAI, Anthropic and Ollama stream decoders at
//! fuzzer-chosen chunk boundaries, and through the whole-body decoders. Events (and the
//! error that stops them) must not depend on the chunking, and decoded events must keep the
//! order `StreamEvent` documents.
//!
//! Input: format (index into `Format::ALL`), the chunk pattern, then the body.

use switchboard_wire::ids::IdSource;
use switchboard_wire::{CollectError, DecodeError, Format, StreamEvent, collect, decode_body};

use crate::chunks::{self, PATTERN_LEN};
use crate::{Finding, repo};

const HEADER: usize = 1 + PATTERN_LEN;

/// Ids are generated for calls without one; the same seed in both decodes keeps them equal.
const ID_SEED: u64 = 1;

pub(crate) fn check(data: &[u8]) -> Result<(), Finding> {
    let (header, body) = chunks::header::<HEADER>(data);
    let format = Format::ALL[usize::from(header[0]) % Format::ALL.len()];
    let what = || format!("{} stream decoder", format.name());

    let whole = decode(format, std::iter::once(0..body.len()), body);
    let pieces = chunks::pieces(&header[1..], body.len(), |_| true);
    let chunked = decode(format, pieces.into_iter(), body);
    if whole != chunked {
        return Err(Finding::Chunking {
            what: what(),
            whole: format!("{whole:?}"),
            chunked: format!("{chunked:?}"),
        });
    }
    if let (events, Ok(())) = &whole {
        check_order(events).map_err(|problem| Finding::broken(what(), problem))?;
    }
    // The whole-body decoders (non-streaming answers, captured bodies) must only ever
    // answer or refuse; their results have no streamed twin to compare with.
    let _ = format.body_events(body, IdSource::seeded(ID_SEED));
    let _ = decode_body(format, body, IdSource::seeded(ID_SEED));
    Ok(())
}

/// The events decoded from `body` fed in these pieces, and how the decode ended.
fn decode(
    format: Format,
    pieces: impl Iterator<Item = std::ops::Range<usize>>,
    body: &[u8],
) -> (Vec<StreamEvent>, Result<(), DecodeError>) {
    let mut decoder = format.stream_decoder(IdSource::seeded(ID_SEED));
    let mut events = Vec::new();
    let mut outcome = Ok(());
    for piece in pieces {
        outcome = decoder.feed(&body[piece], &mut events);
        if outcome.is_err() {
            break;
        }
    }
    if outcome.is_ok() {
        outcome = decoder.finish(&mut events);
    }
    (events, outcome)
}

/// `StreamEvent`'s promise: call indices dense and in order of appearance, arguments and
/// ends only for a started call that has not ended. (A stream may still end with a call open
/// or without a finish reason; consumers report those.)
fn check_order(events: &[StreamEvent]) -> Result<(), String> {
    match collect(events) {
        Err(
            error @ (CollectError::OutOfOrder { .. }
            | CollectError::Unknown { .. }
            | CollectError::AfterEnd { .. }),
        ) => Err(error.to_string()),
        _ => Ok(()),
    }
}

fn input(format: Format, pattern: [u8; PATTERN_LEN], body: &[u8]) -> Vec<u8> {
    let index = Format::ALL
        .iter()
        .position(|known| *known == format)
        .unwrap_or_default();
    let mut input = vec![u8::try_from(index).unwrap_or_default()];
    input.extend(pattern);
    input.extend(body);
    input
}

/// Every wire fixture (streams and JSON bodies) under its own format, fed a byte at a time
/// and in uneven pieces.
pub(crate) fn seeds() -> std::io::Result<Vec<Vec<u8>>> {
    let mut seeds = Vec::new();
    for path in repo::files("crates/switchboard-wire/tests/fixtures", "")? {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(format) = Format::ALL
            .into_iter()
            .find(|format| name.starts_with(format.name()))
        else {
            continue;
        };
        let body = std::fs::read(&path)?;
        for pattern in [[0; PATTERN_LEN], [0, 6, 2, 30]] {
            seeds.push(input(format, pattern, &body));
        }
    }
    Ok(seeds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_wire::FinishReason;

    #[test]
    fn the_order_check_refuses_what_the_event_model_forbids() {
        let start = |index| StreamEvent::ToolCallStart {
            index,
            id: "a".into(),
            name: "f".into(),
        };
        assert!(
            check_order(&[start(1)])
                .unwrap_err()
                .contains("out of order")
        );
        assert!(
            check_order(&[StreamEvent::ToolCallEnd { index: 0 }])
                .unwrap_err()
                .contains("never started")
        );
        assert!(
            check_order(&[
                start(0),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallEnd { index: 0 }
            ])
            .unwrap_err()
            .contains("after it ended")
        );
        // An unfinished answer is the consumer's to report, not a broken order.
        assert_eq!(check_order(&[start(0)]), Ok(()));
        assert_eq!(
            check_order(&[StreamEvent::Finish(FinishReason::Stop)]),
            Ok(())
        );
    }

    #[test]
    fn every_format_has_seeds() {
        let seeds = seeds().unwrap();
        for index in 0..Format::ALL.len() {
            assert!(
                seeds.iter().any(|seed| usize::from(seed[0]) == index),
                "no seed for {:?}",
                Format::ALL[index]
            );
        }
    }
}
