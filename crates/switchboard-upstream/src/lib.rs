//! The backends behind the gateway: routes (a client's model name resolved to its
//! replicas and the way tool calls are made through it), how a request gets an answer from
//! a route's replicas (balancing, retries with one back-off, ejection, the record of what
//! was tried), and whether each replica answers.
//!
//! It owns the one retry loop of a gateway request: a route's replica clients make no
//! retries of their own. It must not know the gateway's HTTP front-ends, its pipeline, its
//! traces exporter or its access control: what the gateway puts around each replica's
//! client (trace headers, spans) comes in as [`ClientHooks`].

mod health;
mod pool;
mod replica;
mod request;
mod route;
mod settings;
mod table;

pub use health::Health;
pub use pool::PoolBackend;
pub use request::{PoolError, RetryReason, SendOptions, UpstreamRecord};
pub use route::{ClientHooks, Route, ToolLoopSettings, WrapClient};
pub use settings::{
    Balance, CHARACTER_PREFIX, RouteConfig, ToolCallPolicy, ToolCalling, check_routes,
};
pub use table::RouteTable;
