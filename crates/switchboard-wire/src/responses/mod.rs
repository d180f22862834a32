//! OpenAI's Responses API (`/v1/responses`), the format the Codex CLI and the OpenAI Agents
//! SDK speak: its request, items, response object and stream events as our own types; the
//! conversion of a request (and the stored conversation it continues) into our request
//! model, its tools into plain functions; and the encoder from our stream events back into
//! Responses events and the response object.

mod conversation;
mod convert;
mod custom_input;
mod encode;
mod events;
mod items;
mod request;
mod response;
mod tools;

pub use conversation::McpApproval;
pub use convert::{Converted, parse_input, to_chat};
pub use encode::Encoder;
pub use events::{Event, Sequenced, sse, write_sse};
pub use items::{
    ContentPart, Execution, InputItem, Item, MessageContent, Role, TextPart, ToolOutput,
    value_slot_bytes,
};
pub use request::{Input, ReasoningConfig, ResponsesRequest, TextConfig};
pub use response::{
    EchoedTools, IncompleteDetails, InputTokensDetails, OutputTokensDetails, Response,
    ResponseError, ResponseUsage, Status,
};
pub use tools::{
    CallKind, DEFAULT_NAMESPACE, Loadable, McpChoice, OfferedTools, ToolSearchTool, loaded_tools,
    model_name,
};
