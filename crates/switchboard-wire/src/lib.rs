//! The three wire formats Switchboard speaks (OpenAI Chat Completions, Anthropic Messages,
//! Ollama `/api/chat`) reduced to one request model and one stream event model, so that
//! everything above this crate handles tool calls the same way whatever the backend; and
//! OpenAI's Responses API, which the gateway also serves, translated to and from them.
//!
//! Pure code: no I/O. Decoders are incremental state machines fed bytes in any chunking;
//! encoders turn events back into each format's stream; conversions go both ways.
//!
//! It must not know HTTP, backends, tool execution or the gateway: bytes in, events out.

pub mod anthropic;
mod calls;
mod decoder;
mod error;
mod event;
pub mod ids;
mod lines;
pub mod mcp;
pub mod ollama;
pub mod openai;
pub mod path;
mod request;
mod response;
pub mod responses;
pub mod secrets;
mod size;
mod sse;

pub use decoder::{Format, StreamDecoder, decode_body};
pub use error::{BodyError, ConvertError, DecodeError, DecodeErrorKind, EncodeError};
pub use event::{FinishReason, StreamEvent, Usage};
pub use lines::MAX_EVENT_BYTES;
pub use request::{ChatRequest, REASONING_EFFORTS, ToolChoice};
pub use response::{ChatResponse, CollectError, Collector, collect};
pub use size::json_len;
