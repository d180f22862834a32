//! The backends behind the gateway: routes (a client's model name resolved to a backend
//! client and the way tool calls are made through it) and whether each backend answers.

mod health;
mod route;
mod table;

pub use health::Health;
pub use route::Route;
pub use table::RouteTable;
