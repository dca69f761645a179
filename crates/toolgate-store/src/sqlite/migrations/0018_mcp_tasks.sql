-- toolgate schema (SQLite): MCP tasks (protocol 2025-11-25). A task names the
-- single-call run a task-augmented `tools/call` started; its status is read from that
-- run, so only the mapping, its owner and its lifetime are kept here.

CREATE TABLE mcp_tasks (
    id         TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    agent      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    ttl_ms     INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX mcp_tasks_listed ON mcp_tasks (tenant, agent, created_at, id);
CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at);
