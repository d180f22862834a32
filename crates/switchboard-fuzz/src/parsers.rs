//! Target `parsers`: model text through each family's streaming parser, and through the one
//! that finds the family itself (`Markup::Unknown`), at fuzzer-chosen chunk boundaries. The
//! parsed result must not depend on the chunking (the crate's central promise), and the
//! events must keep the protocol `ParseEvent` documents.
//!
//! Input: family (index into `ALL_FAMILIES`, one past its end for an unknown family), flags
//! (bit 0: the output starts in reasoning; bit 1: the parser knows the fixture tools), the
//! chunk pattern, then the text (lossy UTF-8).

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};
use switchboard_parsers::{
    ALL_FAMILIES, Family, Markup, ParseEvent, ParseOptions, ToolCallParser, collect, markup_parser,
    parser_with,
};
use switchboard_tools::ToolDefinition;

use crate::chunks::{self, PATTERN_LEN};
use crate::{Finding, repo};

const HEADER: usize = 2 + PATTERN_LEN;
const STARTS_IN_REASONING: u8 = 1;
const WITH_TOOLS: u8 = 2;

/// The tools of the parser fixtures (their header line), which type bare-text values.
static TOOLS: LazyLock<Vec<ToolDefinition>> = LazyLock::new(|| {
    let fixtures = include_str!("../../switchboard-parsers/tests/fixtures/own.jsonl");
    let header = fixtures.lines().next().unwrap_or_default();
    #[allow(clippy::expect_used)] // a fixture of this repository, read by every seed replay
    let header: Value = serde_json::from_str(header).expect("the parser fixtures' header");
    #[allow(clippy::expect_used)]
    serde_json::from_value(header["tools"].clone()).expect("the parser fixtures' tools")
});

pub(crate) fn check(data: &[u8]) -> Result<(), Finding> {
    let (header, text) = chunks::header::<HEADER>(data);
    let markup = ALL_FAMILIES
        .get(usize::from(header[0]) % (ALL_FAMILIES.len() + 1))
        .map_or(Markup::Unknown, |family| Markup::Family(*family));
    let options = ParseOptions {
        starts_in_reasoning: header[1] & STARTS_IN_REASONING != 0,
    };
    let tools: &[ToolDefinition] = if header[1] & WITH_TOOLS != 0 {
        &TOOLS
    } else {
        &[]
    };
    let text = String::from_utf8_lossy(text);
    let what = || format!("{markup:?} parser (options {options:?})");
    let make = || -> Box<dyn ToolCallParser> {
        match markup {
            Markup::Family(family) => parser_with(family, tools, options),
            Markup::Unknown => markup_parser(markup, tools),
        }
    };

    let mut once = make();
    let mut whole = once.feed(&text);
    whole.extend(once.finish());
    let whole = collect(whole);
    let mut parser = make();
    let mut events = Vec::new();
    for piece in chunks::pieces(&header[2..], text.len(), |at| text.is_char_boundary(at)) {
        events.extend(parser.feed(&text[piece]));
    }
    events.extend(parser.finish());
    check_protocol(&events).map_err(|problem| Finding::broken(what(), problem))?;
    let chunked = collect(events);
    if chunked != whole {
        return Err(Finding::Chunking {
            what: what(),
            whole: format!("{whole:?}"),
            chunked: format!("{chunked:?}"),
        });
    }
    Ok(())
}

/// What `ParseEvent` promises about a finished parse: arguments, ends and invalidations
/// name a call that was started and is still open, an ended call's arguments concatenate to
/// one JSON object, and `finish` leaves no call open.
fn check_protocol(events: &[ParseEvent]) -> Result<(), String> {
    let mut open: HashMap<usize, String> = HashMap::new();
    let mut started = Vec::new();
    for event in events {
        match event {
            ParseEvent::ToolCallStart { index, .. } => {
                if started.contains(index) {
                    return Err(format!("call {index} started twice"));
                }
                started.push(*index);
                open.insert(*index, String::new());
            }
            ParseEvent::ToolCallArguments { index, delta } => open
                .get_mut(index)
                .ok_or_else(|| format!("arguments for call {index}, which is not open"))?
                .push_str(delta),
            ParseEvent::ToolCallEnd { index } => {
                let arguments = open
                    .remove(index)
                    .ok_or_else(|| format!("end of call {index}, which is not open"))?;
                if serde_json::from_str::<Map<String, Value>>(&arguments).is_err() {
                    return Err(format!(
                        "call {index} ended with arguments that are not a JSON object: {arguments:?}"
                    ));
                }
            }
            ParseEvent::Invalid {
                index: Some(index), ..
            } => {
                open.remove(index)
                    .ok_or_else(|| format!("call {index} invalidated but not open"))?;
            }
            ParseEvent::Invalid { index: None, .. }
            | ParseEvent::Content { .. }
            | ParseEvent::Reasoning { .. } => {}
        }
    }
    match open.keys().min() {
        Some(index) => Err(format!("call {index} is still open after finish")),
        None => Ok(()),
    }
}

/// An input for `check`.
fn input(markup: Markup, flags: u8, pattern: [u8; PATTERN_LEN], text: &str) -> Vec<u8> {
    let index = match markup {
        Markup::Family(family) => ALL_FAMILIES
            .iter()
            .position(|known| *known == family)
            .unwrap_or_default(),
        Markup::Unknown => ALL_FAMILIES.len(),
    };
    let mut input = vec![u8::try_from(index).unwrap_or_default(), flags];
    input.extend(pattern);
    input.extend(text.as_bytes());
    input
}

/// Every parser fixture, with its tools, cut into uneven pieces: read as its family, and as
/// a family to be found.
pub(crate) fn seeds() -> std::io::Result<Vec<Vec<u8>>> {
    let fixtures = repo::parser_fixtures()?;
    Ok(fixtures
        .iter()
        .skip(1)
        .filter_map(|case| {
            let family = Family::from_name(case["family"].as_str()?)?;
            let mut flags = WITH_TOOLS;
            if case["starts_in_reasoning"].as_bool() == Some(true) {
                flags |= STARTS_IN_REASONING;
            }
            let raw = case["raw"].as_str()?;
            Some([
                input(Markup::Family(family), flags, [0, 6, 2, 30], raw),
                input(Markup::Unknown, WITH_TOOLS, [0, 6, 2, 30], raw),
            ])
        })
        .flatten()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(index: usize) -> ParseEvent {
        ParseEvent::ToolCallStart {
            index,
            name: "f".into(),
            known: true,
        }
    }

    fn arguments(index: usize, delta: &str) -> ParseEvent {
        ParseEvent::ToolCallArguments {
            index,
            delta: delta.into(),
        }
    }

    #[test]
    fn the_protocol_check_accepts_a_well_formed_parse() {
        let events = [
            start(0),
            arguments(0, "{\"a\":"),
            arguments(0, "1}"),
            ParseEvent::ToolCallEnd { index: 0 },
            start(1),
            ParseEvent::Invalid {
                index: Some(1),
                reason: "cut".into(),
                text: String::new(),
            },
        ];
        assert_eq!(check_protocol(&events), Ok(()));
    }

    #[test]
    fn the_protocol_check_names_each_broken_rule() {
        let cases: [(&[ParseEvent], &str); 4] = [
            (&[arguments(0, "{}")], "not open"),
            (
                &[
                    start(0),
                    arguments(0, "[1]"),
                    ParseEvent::ToolCallEnd { index: 0 },
                ],
                "not a JSON object",
            ),
            (&[start(0)], "still open"),
            (
                &[
                    start(0),
                    ParseEvent::Invalid {
                        index: Some(0),
                        reason: String::new(),
                        text: String::new(),
                    },
                    start(0),
                ],
                "twice",
            ),
        ];
        for (events, expected) in cases {
            let error = check_protocol(events).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn a_seed_decodes_to_its_family_and_text() {
        let data = input(
            Markup::Family(Family::Glm47),
            WITH_TOOLS,
            [1, 2, 3, 4],
            "<tool_call>x",
        );
        assert_eq!(ALL_FAMILIES[usize::from(data[0])], Family::Glm47);
        assert_eq!(&data[HEADER..], b"<tool_call>x");
        assert_eq!(check(&data), Ok(()));
        let unknown = input(Markup::Unknown, WITH_TOOLS, [1, 2, 3, 4], "<tool_call>x");
        assert_eq!(usize::from(unknown[0]), ALL_FAMILIES.len());
        assert_eq!(check(&unknown), Ok(()));
    }
}
