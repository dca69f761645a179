//! Every integration test in one binary (one link instead of one per file): a module
//! per area, and the launch helpers they share. `sandbox` and `logs` stay binaries of
//! their own: they set process-wide state (the environment, the global log
//! subscriber) that the other tests must not see.
#![allow(clippy::too_many_lines, reason = "scenario tests read best whole")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The parser's case corpus, read by `common` (relative to this package).
const CORPUS: &str = "crates/toolgate-parse/tests/corpus";

// Shared helpers: the test databases (they open the store) here, the rest in the
// toolgate-test-support crate, named at the root so that `crate::serving` and the
// like reach them.
mod common;
mod databases;
mod rows;
use toolgate_test_support::{fake_anthropic, fake_openai, launching, serving};

// The areas.
mod agent_openai;
mod allow_lists;
mod anthropic_api;
mod approval_deadlines;
mod approval_policy;
mod budgets;
mod cancel;
mod catalogue_checks;
mod cli_parse;
mod cli_pipes;
mod cli_runs;
mod cli_runs_postgres;
mod cli_store;
mod cli_subagents;
mod cli_tools;
mod container;
mod context_budget;
mod credential_checks;
mod credentials;
mod dashboards;
mod deadlines_store;
mod dialect_runs;
mod dialects_cli;
mod dify_tools;
mod docs;
mod docs_reference;
mod engine;
mod file_errors;
mod file_results;
mod final_hidden;
mod hook_sandbox;
mod hot_reload;
mod identities;
mod identity_keys;
mod identity_rules;
mod images;
mod inbox_api;
mod inbox_browser;
mod keys_api;
mod knowledge;
mod knowledge_agent;
mod knowledge_corpus;
mod knowledge_http;
mod limits_process;
mod local_models;
mod mcp_clients;
mod mcp_gateway;
mod mcp_servers;
mod mcp_tasks;
mod mcp_tenants;
mod metrics;
mod model_settings;
mod network;
mod newcomer;
mod notify;
mod oauth;
mod openai_node_sdk;
mod openai_sdk;
mod openapi_clients;
mod openapi_tools;
mod otel;
mod permissions;
mod process_groups;
mod python_parse;
mod reasoning_runs;
mod responses_http;
mod responses_store;
mod sandbox_settings;
mod scaffold;
mod scenarios;
mod schema_unions;
mod secrets;
mod secrets_api;
mod server_api;
mod server_attacks;
mod server_connections;
mod server_document;
mod server_subagents;
mod shell_integration;
mod snapshots_cli;
mod store;
mod store_postgres;
mod store_runs;
mod store_workers;
mod streamed_output;
mod subagents;
mod takeup;
mod tenant_walls;
mod tenants_sdk;
mod tool_cache;
mod tool_files;
mod tool_retries;
mod tool_runtime;
mod tool_validation;
mod totals;
mod wal_upkeep;
mod web_fetch;
mod web_search;
mod workers_pg;
mod workflows;
mod workspace_confinement;
