//! The backends behind the gateway: routes (a client's model name resolved to its
//! replicas and the way tool calls are made through it), how a request gets an answer from
//! a route's replicas, and whether each replica answers.

mod health;
mod pool;
mod replica;
mod request;
mod route;
mod settings;
mod table;

pub use health::Health;
pub use request::{PoolError, RetryReason, SendOptions, UpstreamRecord};
pub use route::{Route, ToolLoopSettings};
pub use settings::{Balance, RouteConfig, ToolCallPolicy, ToolCalling, check_routes};
pub use table::RouteTable;
