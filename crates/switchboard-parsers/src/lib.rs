//! Tool calls out of raw model text, one parser per model family, identical streamed and
//! whole. Many self-hosted setups hand Switchboard raw text (no server-side tool parser, a
//! raw completions endpoint, or a server parser that loses arguments while streaming), so
//! Switchboard reads the calls itself: one incremental pass, whatever the chunking.
//!
//! Every parser is a state machine fed by [`split::Splitter`], which cuts the stream into
//! text and the family's markers. Parsing a whole text is feeding it once and finishing:
//! there is no second code path.
//!
//! The other direction serves models without native tool calling: [`tool_prompt`] teaches
//! the family's markup in the system prompt, [`render_tool_calls`] and
//! [`render_tool_results`] rewrite history into it, and what they write parses back into the
//! same calls.
//!
//! It must not know HTTP, backends or the gateway: text in, events out.

mod detect;
mod event;
mod families;
mod family;
mod json_scan;
mod out;
mod render;
mod split;
mod tools;

pub use event::{ParseEvent, ParseIssue, Parsed, ParsedCall, collect};
pub use family::{ALL_FAMILIES, Family, family_for_model};
pub use render::{
    ToolRequirement, corrective_message, render_tool_calls, render_tool_results, tool_prompt,
};

use std::sync::Arc;

use out::Out;
use split::{Piece, Splitter};
use switchboard_tools::ToolDefinition;

/// Reads one model output as it streams.
pub trait ToolCallParser: Send {
    /// Feeds the next chunk of output and returns what can be decided so far.
    fn feed(&mut self, chunk: &str) -> Vec<ParseEvent>;
    /// Ends the output: held-back text is decided and a call still open is reported invalid.
    fn finish(&mut self) -> Vec<ParseEvent>;
    /// The family whose markup was found, where the parser had to find it (see [`Markup`]).
    fn family(&self) -> Option<Family> {
        None
    }
}

/// Which markup a model's text is read in: one family's, or, where the family is not
/// known, any markup that prose cannot produce (Hermes/Qwen `<tool_call>`, Qwen3-Coder XML,
/// GLM, Mistral `[TOOL_CALLS]`, Llama 3's `{"name": …}` as the whole output or after
/// `<|python_tag|>`, DeepSeek, DSML, Kimi K2, Gemma 4), taken only for tools the request
/// offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    Family(Family),
    Unknown,
}

/// A parser for text in `markup`. `tools` are the request's tools, held by the parser as
/// they are (an `Arc` is shared, a slice or a `Vec` copied once).
pub fn markup_parser(
    markup: Markup,
    tools: impl Into<Arc<[ToolDefinition]>>,
) -> Box<dyn ToolCallParser> {
    let tools = tools::Tools::new(tools);
    match markup {
        Markup::Family(family) => families::build(family, Out::new(tools), ParseOptions::default()),
        Markup::Unknown => Box::new(detect::Detect::new(tools)),
    }
}

/// How the output begins, which the family's markup alone cannot tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// The generation prompt opened a reasoning block, so the output starts inside it.
    pub starts_in_reasoning: bool,
}

impl ParseOptions {
    /// Options for an output that follows `generation_prompt` (the text the chat template
    /// appended to the conversation).
    pub fn for_prompt(family: Family, generation_prompt: &str) -> Self {
        Self {
            starts_in_reasoning: family.prompt_opens_reasoning(generation_prompt),
        }
    }
}

/// A parser for `family`; `tools` are the request's tools (names are checked against them,
/// and their schemas type bare-text values).
pub fn parser(family: Family, tools: &[ToolDefinition]) -> Box<dyn ToolCallParser> {
    parser_with(family, tools, ParseOptions::default())
}

/// [`parser`] with options.
pub fn parser_with(
    family: Family,
    tools: &[ToolDefinition],
    options: ParseOptions,
) -> Box<dyn ToolCallParser> {
    families::build(family, Out::new(tools::Tools::new(tools)), options)
}

/// Parses a whole output: feeds it as one chunk and finishes.
pub fn parse_whole(family: Family, tools: &[ToolDefinition], text: &str) -> Parsed {
    parse_whole_with(family, tools, ParseOptions::default(), text)
}

/// [`parse_whole`] with options.
pub fn parse_whole_with(
    family: Family,
    tools: &[ToolDefinition],
    options: ParseOptions,
    text: &str,
) -> Parsed {
    let mut parser = parser_with(family, tools, options);
    let mut events = parser.feed(text);
    events.extend(parser.finish());
    collect(events)
}

/// A family's state machine: it sees text and markers in order and reports to [`Out`].
pub(crate) trait Machine: Send {
    /// The markers the splitter cuts on; `marker` receives indexes into this list.
    fn markers(&self) -> &'static [&'static str];
    fn text(&mut self, out: &mut Out, text: &str);
    /// A marker; `literal` is its text, for states where it is just text (inside a string).
    fn marker(&mut self, out: &mut Out, marker: usize, literal: &'static str);
    /// End of output.
    fn end(&mut self, out: &mut Out);
}

/// Connects a splitter, a family's machine and the sink; the one [`ToolCallParser`] type.
pub(crate) struct Driver<M> {
    split: Splitter,
    machine: M,
    out: Out,
}

impl<M: Machine> Driver<M> {
    pub(crate) fn new(machine: M, out: Out) -> Self {
        Self {
            split: Splitter::new(machine.markers()),
            machine,
            out,
        }
    }
}

impl<M: Machine> ToolCallParser for Driver<M> {
    fn feed(&mut self, chunk: &str) -> Vec<ParseEvent> {
        let Self {
            split,
            machine,
            out,
        } = self;
        let markers = machine.markers();
        split.push(chunk, |piece| match piece {
            Piece::Text(text) => machine.text(out, text),
            Piece::Marker(index) => {
                machine.marker(out, index, markers.get(index).copied().unwrap_or(""))
            }
        });
        out.take_events()
    }

    fn finish(&mut self) -> Vec<ParseEvent> {
        let Self {
            split,
            machine,
            out,
        } = self;
        let markers = machine.markers();
        split.finish(|piece| match piece {
            Piece::Text(text) => machine.text(out, text),
            Piece::Marker(index) => {
                machine.marker(out, index, markers.get(index).copied().unwrap_or(""))
            }
        });
        machine.end(out);
        out.finish();
        out.take_events()
    }
}
