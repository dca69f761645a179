//! The `Store`'s operations, each answered by its backend: runs and their items
//! (`runs.rs`), decisions and deadlines (`decisions.rs`), call records and their
//! summaries (`records.rs`), knowledge bases (`knowledge.rs`), keys, secrets and
//! stored responses (`accounts.rs`).

mod accounts;
mod decisions;
mod key_budgets;
mod knowledge;
mod mcp_tasks;
mod oauth;
mod records;
mod runs;
mod spend;
mod tool_cache;
mod validations;
