-- toolgate schema 1: call records, runs, pending items, standing decisions.

CREATE TABLE tool_calls (
    id              INTEGER PRIMARY KEY,   -- the record id
    call_id         TEXT    NOT NULL,
    run_id          TEXT,
    conversation_id TEXT    NOT NULL,
    agent           TEXT,
    caller          TEXT    NOT NULL,      -- agent | user | workflow
    tool            TEXT    NOT NULL,
    arguments       TEXT    NOT NULL,      -- JSON, secret parameters redacted
    result          TEXT,                  -- capped; result_size is the full size
    result_size     INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL,      -- succeeded | failed | denied | timeout | cancelled | client
    error_kind      TEXT,
    error_message   TEXT,
    started_at      INTEGER NOT NULL,      -- unix milliseconds
    duration_ms     REAL    NOT NULL
);
-- Covers everything a conversation summary reads: counts by tool and status, first
-- and last call, durations.
CREATE INDEX tool_calls_conversation ON tool_calls (conversation_id, tool, status, started_at, duration_ms);
-- Covers a tool's statistics.
CREATE INDEX tool_calls_tool ON tool_calls (tool, status, duration_ms);
CREATE INDEX tool_calls_run ON tool_calls (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX tool_calls_started ON tool_calls (started_at);

CREATE TABLE runs (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    status          TEXT    NOT NULL,      -- in_progress | requires_action | completed | failed | cancelled
    state           TEXT    NOT NULL,      -- the run's state as JSON
    iteration       INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    lease_owner     TEXT,                  -- the process continuing the run, if any
    lease_until     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX runs_status ON runs (status, updated_at);
CREATE INDEX runs_conversation ON runs (conversation_id, created_at);

CREATE TABLE pending (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id     TEXT    NOT NULL,
    kind        TEXT    NOT NULL,          -- approval | submit_tool_output
    tool        TEXT    NOT NULL,
    arguments   TEXT    NOT NULL,          -- exactly as shown to the person
    decision    TEXT,                      -- JSON once decided
    state       TEXT    NOT NULL DEFAULT 'waiting',  -- waiting | decided | executing | done
    decided_at  INTEGER,
    PRIMARY KEY (run_id, call_id)
);

CREATE TABLE standing_decisions (
    conversation_id TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    decision        TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, tool)
);
