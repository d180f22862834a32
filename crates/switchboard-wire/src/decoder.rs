//! The decoder interface shared by the three formats, and whole-body decoding for callers
//! holding a captured body (the `decode` command, non-streaming backend calls).

use crate::ids::IdSource;
use crate::{
    BodyError, ChatResponse, DecodeError, StreamEvent, anthropic, collect, ollama, openai,
};

/// An incremental decoder: bytes in any chunking → events, as early as each is complete.
pub trait StreamDecoder: Send + std::fmt::Debug {
    /// Consumes the next bytes of the body and appends the events they complete.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<(), DecodeError>;

    /// The body has ended: flushes what is pending and fails if the format's terminator
    /// never came, so a cut stream is never mistaken for a short answer.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError>;
}

/// The wire formats Switchboard speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::Ollama];
    pub const NAMES: [&str; 3] = ["openai", "anthropic", "ollama"];

    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Ollama => "ollama",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// A decoder for this format's stream (SSE, or NDJSON for Ollama).
    pub fn stream_decoder(self, ids: IdSource) -> Box<dyn StreamDecoder> {
        match self {
            Format::OpenAi => Box::new(openai::Decoder::new(ids)),
            Format::Anthropic => Box::new(anthropic::Decoder::new(ids)),
            Format::Ollama => Box::new(ollama::Decoder::new(ids)),
        }
    }

    /// The events of a non-streaming JSON body, normalised as the stream would be.
    pub fn body_events(self, body: &[u8], ids: IdSource) -> Result<Vec<StreamEvent>, DecodeError> {
        match self {
            Format::OpenAi => openai::body_events(body, ids),
            Format::Anthropic => anthropic::body_events(body, ids),
            Format::Ollama => ollama::body_events(body, ids),
        }
    }

    /// The events of a whole body, streamed or not. An SSE body never starts with `{`, so
    /// one that does is a JSON answer (and a cut one is reported as such); an NDJSON body
    /// does, so for Ollama only a body that is exactly one JSON value is taken as whole.
    pub fn decode_events(
        self,
        body: &[u8],
        ids: IdSource,
    ) -> Result<Vec<StreamEvent>, DecodeError> {
        let whole = match self {
            Format::Ollama => serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok(),
            Format::OpenAi | Format::Anthropic => {
                body.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{')
            }
        };
        if whole {
            return self.body_events(body, ids);
        }
        let mut decoder = self.stream_decoder(ids);
        let mut events = Vec::new();
        decoder.feed(body, &mut events)?;
        decoder.finish(&mut events)?;
        Ok(events)
    }
}

/// A captured body (stream or JSON) of `format`, collected into one answer.
pub fn decode_body(format: Format, body: &[u8], ids: IdSource) -> Result<ChatResponse, BodyError> {
    Ok(collect(&format.decode_events(body, ids)?)?)
}
