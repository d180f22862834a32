//! OpenAI Chat Completions, the format vLLM, llama.cpp, mistral.rs, OpenRouter and OpenAI
//! speak, and the one the gateway serves.

mod convert;
mod decode;
mod encode;
mod types;

pub use convert::{build_request, parse_request};
pub use decode::{Decoder, body_events};
pub use encode::{ChunkEncoder, DONE, completion};
pub use types::*;
