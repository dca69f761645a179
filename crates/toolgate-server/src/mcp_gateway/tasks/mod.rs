//! MCP tasks (protocol 2025-11-25) on the gateway: a `tools/call` that carries `task`
//! answers at once with a task, whose status follows its single-call run
//! (`input_required` while the call waits for a person, `working` while it runs, then
//! `completed`, `failed` or `cancelled`); `tasks/get`, `tasks/result` (which waits for
//! the end, telling the client of each status on the way), `tasks/list` and
//! `tasks/cancel` read and end it. Tasks live in the store: they survive a restart,
//! are answered by any worker on the same database, belong to a tenant and an agent,
//! and expire by their TTL (a call still waiting then is cancelled).
//!
//! rmcp speaks a later draft of tasks, so these messages are answered here, at the
//! JSON-RPC level, before rmcp sees them (`front.rs` sorts them and adds the task
//! capability to rmcp's `initialize` and `tools/list` answers). Clients that declare no
//! task keep the timed hold and elicitation (`hold.rs`).

mod door;
mod expiry;
mod follow;
mod front;
mod wire;

pub use door::{Notes, Tasks};
pub use expiry::reap;
pub use front::{Inbound, Patch, classify, patch};
pub use wire::{RpcError, answer as answer_message};
