//! Tool calls written as text by a model whose family is not known (a server that serves it
//! as `coder`, an Ollama tag, a llama.cpp alias). Only markups that prose cannot produce are
//! recognised: each family's opening marker, and what must follow it, decide the family;
//! then that family's own parser reads the rest, so the calls are exactly those the family
//! would give. A call is taken only when it names a tool the request offered; anything
//! else, near misses included, stays text. Streamed or whole, the decision waits for the
//! same bytes, so both give the same result.

use crate::out::Out;
use crate::tools::Tools;
use crate::{Family, ParseEvent, ParseOptions, ToolCallParser, families};

/// How far a name may run while deciding whether a marker opens a call: longer is prose.
const LONGEST_NAME: usize = 64;

/// What the text at a marker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A call in this family's markup: its parser reads from the marker on.
    Family(Family),
    /// The text so far cannot tell; wait for more.
    More,
    /// Text: the marker is written out and reading goes on after it.
    Text,
}

/// A marker that may open a call, and how the text from it decides the family.
struct Opener {
    marker: &'static str,
    decide: Decide,
}

enum Decide {
    /// The marker alone: a special token of one family that prose does not contain.
    Certain(Family),
    /// What follows the marker decides.
    By(fn(after: &str) -> Verdict),
}

impl Decide {
    fn verdict(&self, after: &str) -> Verdict {
        match self {
            Decide::Certain(family) => Verdict::Family(*family),
            Decide::By(decide) => decide(after),
        }
    }
}

/// The openers, each unmistakable for prose once what follows it is seen. Llama 3's bare
/// JSON object is handled apart: it is a call only as the whole output's start.
const OPENERS: &[Opener] = &[
    // Hermes and Qwen 2.5/3 write JSON, Qwen3-Coder XML, GLM a bare name then `<arg_key>`.
    Opener {
        marker: "<tool_call>",
        decide: Decide::By(|after| {
            let after = after.trim_start();
            match after.chars().next() {
                None => Verdict::More,
                Some('{') => Verdict::Family(Family::Hermes),
                Some('<') => expect(after, "<function=", Family::Qwen3Coder),
                // A bare name alone (`<tool_call>NAME</tool_call>`) reads as prose about
                // the tag; GLM's calls with arguments cannot.
                Some(_) => named(after, &["<arg_key>"], Family::Glm45, true),
            }
        }),
    },
    // Mistral v3/v7 `[{…}]`, v11+ `NAME[ARGS]{…}` or `NAME[CALL_ID]…`.
    Opener {
        marker: "[TOOL_CALLS]",
        decide: Decide::By(|after| {
            let after = after.trim_start();
            match after.chars().next() {
                None => Verdict::More,
                Some('[') => expect(after, "[{", Family::Mistral),
                Some(_) => named(after, &["[ARGS]", "[CALL_ID]"], Family::Mistral, false),
            }
        }),
    },
    Opener {
        marker: "<|python_tag|>",
        decide: Decide::Certain(Family::Llama3Json),
    },
    // DeepSeek V3 names the call's type first (`function<｜tool▁sep｜>NAME`), V3.1 the name.
    Opener {
        marker: "<｜tool▁calls▁begin｜>",
        decide: Decide::By(|after| {
            let after = after.trim_start();
            const CALL: &str = "<｜tool▁call▁begin｜>";
            if after.len() < CALL.len() {
                return if CALL.starts_with(after) {
                    Verdict::More
                } else {
                    Verdict::Text
                };
            }
            let Some(call) = after.strip_prefix(CALL) else {
                return Verdict::Text;
            };
            const TYPED: &str = "function<｜tool▁sep｜>";
            match expect(call, TYPED, Family::DeepseekV3) {
                Verdict::Text => named(call, &["<｜tool▁sep｜>"], Family::DeepseekV31, false),
                verdict => verdict,
            }
        }),
    },
    Opener {
        marker: "<|tool_calls_section_begin|>",
        decide: Decide::Certain(Family::KimiK2),
    },
    Opener {
        marker: "<｜DSML｜function_calls>",
        decide: Decide::Certain(Family::DeepseekV32),
    },
    Opener {
        marker: "<｜DSML｜tool_calls>",
        decide: Decide::Certain(Family::DeepseekV4),
    },
    Opener {
        marker: "<｜DSML｜ calls>",
        decide: Decide::Certain(Family::DeepseekV41),
    },
    Opener {
        marker: "<|tool_call>call:",
        decide: Decide::Certain(Family::Gemma4),
    },
];

/// `text` must begin with `prefix` for `family`.
fn expect(text: &str, prefix: &str, family: Family) -> Verdict {
    if text.starts_with(prefix) {
        Verdict::Family(family)
    } else if prefix.starts_with(text) {
        Verdict::More
    } else {
        Verdict::Text
    }
}

/// `text` must be a tool name followed by one of `next` (newlines between them allowed
/// when `lines`) for `family`.
fn named(text: &str, next: &[&str], family: Family, lines: bool) -> Verdict {
    let name_end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(text.len());
    if name_end == 0 || name_end > LONGEST_NAME {
        return Verdict::Text;
    }
    let rest = &text[name_end..];
    let rest = if lines {
        rest.trim_start_matches(['\n', '\r'])
    } else {
        rest
    };
    if rest.is_empty() {
        return Verdict::More;
    }
    next.iter()
        .map(|next| expect(rest, next, family))
        .find(|verdict| *verdict != Verdict::Text)
        .unwrap_or(Verdict::Text)
}

/// Whether a whole output that begins with `text` (blanks trimmed) is Llama 3's JSON call.
fn llama_start(text: &str) -> Verdict {
    let Some(object) = text.strip_prefix('{') else {
        return Verdict::Text;
    };
    expect(object.trim_start(), "\"name\"", Family::Llama3Json)
}

enum State {
    /// Reading text for an opener. `start` is set while nothing but blanks was read.
    Looking { held: String, start: bool },
    /// A family's parser reads the rest. Its events wait in `pending` (with the text fed to
    /// it in `raw`) until its first call shows whether the name is one the request offered.
    Reading {
        family: Family,
        parser: Box<dyn ToolCallParser>,
        pending: Option<(Vec<ParseEvent>, String)>,
    },
    /// What looked like a call was not one: the rest is text.
    Text,
}

/// The parser for an unknown family.
pub(crate) struct Detect {
    tools: Tools,
    state: State,
    /// The text channel (newlines around markup are glue, as in every family).
    out: Out,
}

impl Detect {
    pub(crate) fn new(tools: Tools) -> Self {
        Self {
            out: Out::new(tools.clone()),
            tools,
            state: State::Looking {
                held: String::new(),
                start: true,
            },
        }
    }

    fn feed_text(&mut self, chunk: &str, last: bool) -> Vec<ParseEvent> {
        let mut events = Vec::new();
        let mut chunk = chunk.to_owned();
        loop {
            match &mut self.state {
                State::Looking { held, start } => {
                    held.push_str(&chunk);
                    let (held, start) = (std::mem::take(held), *start);
                    match look(&held, start, last) {
                        Found::Undecided { text_until } => {
                            self.out.content(&held[..text_until]);
                            let start = start && held[..text_until].trim().is_empty();
                            self.state = State::Looking {
                                held: held[text_until..].to_owned(),
                                start,
                            };
                            break;
                        }
                        Found::Call { at, family } => {
                            self.out.content(&held[..at]);
                            let parser = families::build(
                                family,
                                Out::new(self.tools.clone()),
                                ParseOptions::default(),
                            );
                            self.state = State::Reading {
                                family,
                                parser,
                                pending: Some((Vec::new(), String::new())),
                            };
                            chunk = held[at..].to_owned();
                        }
                    }
                }
                State::Reading {
                    parser, pending, ..
                } => {
                    let fed = parser.feed(&chunk);
                    let Some((waiting, raw)) = pending else {
                        events.extend(fed);
                        break;
                    };
                    raw.push_str(&chunk);
                    waiting.extend(fed);
                    match first_call(waiting) {
                        None => break,
                        Some(true) => {
                            events.extend(std::mem::take(waiting));
                            *pending = None;
                            break;
                        }
                        Some(false) => {
                            let raw = std::mem::take(raw);
                            self.out.content(&raw);
                            self.state = State::Text;
                            break;
                        }
                    }
                }
                State::Text => {
                    self.out.content(&chunk);
                    break;
                }
            }
        }
        let mut all = self.out.take_events();
        all.extend(events);
        all
    }
}

/// Whether the events so far hold a call: `Some(known)` at its start; `Some(true)` too for
/// a call reported broken, which is an attempt at a call, not prose.
fn first_call(events: &[ParseEvent]) -> Option<bool> {
    events.iter().find_map(|event| match event {
        ParseEvent::ToolCallStart { known, .. } => Some(*known),
        ParseEvent::Invalid { .. } => Some(true),
        _ => None,
    })
}

enum Found {
    /// Text up to `text_until` is decided as text; the rest may still open a call.
    Undecided {
        text_until: usize,
    },
    Call {
        at: usize,
        family: Family,
    },
}

/// Finds the first call opener in `text`. `start`: nothing but blanks came before it.
/// `last`: no more text will come, so an undecided opener is text.
fn look(text: &str, start: bool, last: bool) -> Found {
    if start {
        let body = text.trim_start();
        if !body.is_empty() || last {
            match llama_start(body) {
                Verdict::Family(family) => return Found::Call { at: 0, family },
                Verdict::More if !last => return Found::Undecided { text_until: 0 },
                _ => {}
            }
        } else {
            return Found::Undecided { text_until: 0 };
        }
    }
    let mut from = 0;
    while let Some(offset) = text[from..].find(['<', '[']) {
        let at = from + offset;
        let rest = &text[at..];
        for opener in OPENERS {
            if let Some(after) = rest.strip_prefix(opener.marker) {
                match opener.decide.verdict(after) {
                    Verdict::Family(family) => return Found::Call { at, family },
                    Verdict::More if !last => return Found::Undecided { text_until: at },
                    _ => {}
                }
            } else if !last && opener.marker.starts_with(rest) {
                return Found::Undecided { text_until: at };
            }
        }
        from = at + 1;
    }
    Found::Undecided {
        text_until: text.len(),
    }
}

impl ToolCallParser for Detect {
    fn feed(&mut self, chunk: &str) -> Vec<ParseEvent> {
        self.feed_text(chunk, false)
    }

    fn finish(&mut self) -> Vec<ParseEvent> {
        let mut events = self.feed_text("", true);
        if let State::Reading {
            parser, pending, ..
        } = &mut self.state
        {
            let fed = parser.finish();
            match pending.take() {
                None => events.extend(fed),
                Some((mut waiting, raw)) => {
                    waiting.extend(fed);
                    if first_call(&waiting) == Some(false) {
                        self.out.content(&raw);
                    } else {
                        // No call at all (an object that was content): its own events say so.
                        events.extend(waiting);
                    }
                }
            }
        }
        self.out.finish();
        let mut all = self.out.take_events();
        all.extend(events);
        all
    }

    fn family(&self) -> Option<Family> {
        match &self.state {
            State::Reading { family, .. } => Some(*family),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_tools::{ToolCall, ToolDefinition};

    use crate::{Markup, Parsed, collect, markup_parser, render_tool_calls};

    use super::*;

    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition::function(
            "get_weather",
            "weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )]
    }

    /// A parser holds the request's tools as they are, shared: one copy however many family
    /// parsers the detector tries.
    #[test]
    fn the_tools_are_shared_not_copied() {
        let tools: std::sync::Arc<[ToolDefinition]> = tools().into();
        let mut parser = markup_parser(Markup::Unknown, std::sync::Arc::clone(&tools));
        let text =
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
        let _ = parser.feed(text);
        assert!(std::sync::Arc::strong_count(&tools) >= 2);
        let _ = parser.finish();
        drop(parser);
        assert_eq!(std::sync::Arc::strong_count(&tools), 1);
    }

    /// Parses `text` fed `piece` characters at a time; the family found.
    fn parse(markup: Markup, text: &str, piece: usize) -> (Parsed, Option<Family>) {
        let mut parser = markup_parser(markup, tools());
        let mut events = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(piece.max(1)) {
            events.extend(parser.feed(&chunk.iter().collect::<String>()));
        }
        events.extend(parser.finish());
        (collect(events), parser.family())
    }

    #[test]
    fn each_unmistakable_markup_is_read_as_its_own_family_would_read_it() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"}).to_string(),
        };
        for family in [
            Family::Hermes,
            Family::Qwen3Coder,
            Family::Glm45,
            Family::Glm47,
            Family::Mistral,
            Family::Llama3Json,
            Family::DeepseekV3,
            Family::DeepseekV31,
            Family::DeepseekV32,
            Family::DeepseekV4,
            Family::DeepseekV41,
            Family::KimiK2,
            Family::Gemma4,
        ] {
            let markup = render_tool_calls(family, std::slice::from_ref(&call));
            // Llama 3's object is a call only as the whole output.
            let text = if family == Family::Llama3Json {
                markup
            } else {
                format!("Let me check.\n{markup}")
            };
            let (known, _) = parse(Markup::Family(family), &text, text.len());
            assert_eq!(known.tool_calls.len(), 1, "{family}: {text}");
            for piece in [1, 2, 5, text.len()] {
                let (found, detected) = parse(Markup::Unknown, &text, piece);
                assert_eq!(found, known, "{family}, {piece} at a time: {text}");
                let expected = match family {
                    Family::Glm47 => Family::Glm45,
                    other => other,
                };
                assert_eq!(detected, Some(expected), "{family}: {text}");
            }
        }
    }

    #[test]
    fn prose_that_mentions_markup_or_tools_stays_prose() {
        for text in [
            "Wrap calls in <tool_call> tags, like <tool_call>this</tool_call>.",
            "The [TOOL_CALLS] token starts a list: [TOOL_CALLS] [1, 2].",
            "Call get_weather with {\"city\": \"Paris\"}.",
            "{\"city\": \"Paris\", \"name\": \"get_weather\"}",
            "{\"name\": \"get_weather\"} is the tool I would use.",
            "<tool_call>{\"name\": \"delete_everything\", \"arguments\": {}}</tool_call>",
            "Name the tool: <tool_call>get_weather</tool_call>.",
            "{\"name\": \"delete_everything\", \"parameters\": {}}",
            "Use <tool_call",
            "a < b and [x] [TOOL",
        ] {
            for piece in [1, 3, text.len()] {
                let (parsed, _) = parse(Markup::Unknown, text, piece);
                assert_eq!(parsed.tool_calls, [], "{piece}: {text}");
                assert_eq!(parsed.issues, [], "{piece}: {text}");
                assert_eq!(parsed.content.as_deref(), Some(text), "{piece}: {text}");
            }
        }
    }

    #[test]
    fn text_around_a_call_is_kept_and_a_second_markup_is_the_same_family() {
        let text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
        for piece in [1, 4, text.len()] {
            let (parsed, family) = parse(Markup::Unknown, text, piece);
            assert_eq!(parsed.content.as_deref(), Some("Sure."));
            assert_eq!(parsed.tool_calls.len(), 2, "{parsed:?}");
            assert_eq!(parsed.tool_calls[1].arguments, json!({"city": "Rome"}));
            assert_eq!(family, Some(Family::Hermes));
        }
    }
}
