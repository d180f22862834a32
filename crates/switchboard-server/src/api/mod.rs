//! The APIs the gateway serves, one front-end per folder. Each parses its own request
//! format into the pipeline's [`GatewayRequest`](crate::pipeline::GatewayRequest), and
//! renders the pipeline's outputs and errors in its own format, whole or streamed. What
//! every front-end needs the same way lives beside them: reading the body, the SSE driver,
//! the request log.

mod body;
pub mod characters;
pub mod chat;
mod fields;
mod log;
pub mod messages;
pub mod ops;
pub mod playground;
pub mod responses;
mod sse;

/// The id the request-id middleware gave this request.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);
