-- toolgate's schema on PostgreSQL: the same tables as SQLite's schema 14, in
-- PostgreSQL's types (BIGINT for integers and unix milliseconds, DOUBLE PRECISION for
-- durations, BOOLEAN for flags). JSON stays TEXT: it is written and read whole.

CREATE TABLE tool_calls (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- the record id
    call_id         TEXT    NOT NULL,
    run_id          TEXT,
    conversation_id TEXT    NOT NULL,
    agent           TEXT,
    caller          TEXT    NOT NULL,      -- agent | user | workflow
    tool            TEXT    NOT NULL,
    arguments       TEXT    NOT NULL,      -- JSON, secret parameters sealed
    result          TEXT,                  -- capped; result_size is the full size
    result_size     BIGINT  NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL,      -- succeeded | failed | denied | timeout | cancelled | client
    error_kind      TEXT,
    error_message   TEXT,
    started_at      BIGINT  NOT NULL,      -- unix milliseconds
    duration_ms     DOUBLE PRECISION NOT NULL,
    replaced        BOOLEAN NOT NULL DEFAULT FALSE,
    -- The writing transaction's id: the running totals fold the records of transactions
    -- that have all ended (ids commit out of order across workers; transactions below
    -- every open one's cannot add records any more).
    xact            BIGINT  NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
);
CREATE INDEX tool_calls_conversation ON tool_calls (conversation_id, tool, status, started_at, duration_ms);
CREATE INDEX tool_calls_run ON tool_calls (run_id, xact) WHERE run_id IS NOT NULL;
CREATE INDEX tool_calls_started ON tool_calls (started_at);
CREATE INDEX tool_calls_xact ON tool_calls (xact);

CREATE TABLE runs (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    status          TEXT    NOT NULL,      -- in_progress | requires_action | completed | failed | cancelled | incomplete
    state           TEXT    NOT NULL,      -- the run's state as JSON
    iteration       BIGINT  NOT NULL DEFAULT 0,
    last_error      TEXT,
    lease_owner     TEXT,                  -- the process continuing the run, if any
    lease_until     BIGINT,                -- unix milliseconds
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL,
    parent_run_id   TEXT,                  -- NULL for a top run
    parent_call_id  TEXT,
    depth           BIGINT  NOT NULL DEFAULT 0,
    tenant          TEXT    NOT NULL DEFAULT 'default',
    started_by      TEXT,
    prompt_tokens         BIGINT NOT NULL DEFAULT 0,
    completion_tokens     BIGINT NOT NULL DEFAULT 0,
    total_tokens          BIGINT NOT NULL DEFAULT 0,
    model_calls           BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens     BIGINT NOT NULL DEFAULT 0,
    cache_creation_tokens BIGINT NOT NULL DEFAULT 0,
    compactions           BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_status ON runs (status, updated_at);
CREATE INDEX runs_conversation ON runs (conversation_id, created_at);
CREATE UNIQUE INDEX runs_parent_call ON runs (parent_run_id, parent_call_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_tenant ON runs (tenant, created_at);

CREATE TABLE pending (
    run_id         TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id        TEXT    NOT NULL,
    kind           TEXT    NOT NULL,       -- approval | submit_tool_output
    tool           TEXT    NOT NULL,
    arguments      TEXT    NOT NULL,       -- exactly as shown to the person
    decision       TEXT,                   -- JSON once decided
    state          TEXT    NOT NULL DEFAULT 'waiting',  -- waiting | decided | executing | done
    decided_at     BIGINT,
    decided_by     TEXT,
    requested_at   BIGINT,
    reason         TEXT,
    expires_at     BIGINT,
    on_timeout     TEXT,
    warned_at      BIGINT,
    policy         TEXT,
    decided_by_key TEXT,
    decided_as     TEXT,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX pending_waiting ON pending (state) WHERE state = 'waiting';
CREATE INDEX pending_expires ON pending (expires_at) WHERE expires_at IS NOT NULL AND state = 'waiting';

CREATE TABLE standing_decisions (
    conversation_id TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    decision        TEXT    NOT NULL,
    created_at      BIGINT  NOT NULL,
    policy          TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (conversation_id, agent, tool)
);

CREATE TABLE messages (
    conversation_id TEXT    NOT NULL,
    seq             BIGINT  NOT NULL,      -- position in the conversation, from 0
    run_id          TEXT    NOT NULL,      -- the run that added it
    message         TEXT    NOT NULL,      -- JSON: role, content, tool_calls, tool_call_id
    PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE responses (
    id           TEXT    PRIMARY KEY,      -- resp_...
    run_id       TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step         BIGINT  NOT NULL,         -- 0, 1, 2, ... within the run
    previous_id  TEXT,                     -- the previous_response_id it continued
    status       TEXT    NOT NULL,
    body         TEXT    NOT NULL,         -- the response object, JSON
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    input        TEXT    NOT NULL DEFAULT '[]',  -- JSON array of items
    UNIQUE (run_id, step)
);

CREATE TABLE secrets (
    tenant      TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    sealed      TEXT    NOT NULL,          -- [[tgsecret:v1:...]]
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE api_keys (
    id          TEXT    PRIMARY KEY,           -- key_...
    name        TEXT    NOT NULL UNIQUE,
    hash        TEXT    NOT NULL UNIQUE,       -- hex SHA-256 of the key
    role        TEXT    NOT NULL,              -- client | approver | admin
    tenant      TEXT    NOT NULL,
    groups      TEXT    NOT NULL DEFAULT '[]', -- JSON array of group names
    created_at  BIGINT  NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT
);

-- Running totals over tool_calls (summaries read these plus the records not yet folded,
-- in one statement: one snapshot).
CREATE TABLE totals_mark (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    folded_to BIGINT  NOT NULL,            -- records with xact below it are in the totals
    conversations BIGINT NOT NULL DEFAULT 0  -- rows of conversation_totals
);
INSERT INTO totals_mark (id, folded_to) VALUES (1, 0);

CREATE TABLE tool_totals (
    tool   TEXT    NOT NULL,
    status TEXT    NOT NULL,
    calls  BIGINT  NOT NULL,
    PRIMARY KEY (tool, status)
);

CREATE TABLE duration_totals (
    tool   TEXT    NOT NULL,
    bucket BIGINT  NOT NULL,               -- microseconds, three significant digits
    calls  BIGINT  NOT NULL,
    PRIMARY KEY (tool, bucket)
);

CREATE TABLE conversation_totals (
    conversation_id TEXT    PRIMARY KEY,
    calls           BIGINT  NOT NULL
);

CREATE TABLE run_totals (
    run_id   TEXT    NOT NULL,
    tool     TEXT    NOT NULL,
    status   TEXT    NOT NULL,
    calls    BIGINT  NOT NULL,
    total_ms DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, tool, status)
);

-- Runs, leases and the change feed (the part of the schema runs.rs, decisions.rs and
-- the change feed's listener rely on).

-- The order pending items were added in (SQLite's rowid): a turn's items in the order
-- the model asked for them.
ALTER TABLE pending ADD COLUMN added BIGINT GENERATED ALWAYS AS IDENTITY;
CREATE INDEX pending_run_added ON pending (run_id, added);

-- Runs found by a prefix of their id (byte-wise, whatever the database's collation).
CREATE INDEX runs_id_prefix ON runs (id text_pattern_ops);

-- Runs a worker may take up: in progress at the top of their tree, by last change.
CREATE INDEX runs_unheld ON runs (updated_at) WHERE status = 'in_progress' AND depth = 0;

-- The change feed (SQLite's schema 13, without its table): every change to a run is sent
-- with NOTIFY on channel `toolgate_changes` by triggers, in the transaction that makes
-- it, so each worker's listener hears it when (and only if) that transaction commits,
-- in commit order. The payload is the change itself, as JSON: {seq, run_id, tenant,
-- kind (created | status | saved | pending_added | decided), status (the run's status
-- after the change), origin (the lease owner driving the run then, if any)}. `seq`
-- comes from a sequence: unique and increasing in the order changes are made (they
-- commit in another order, so nothing reads changes back by it). Lease renewals change
-- nothing here.
CREATE SEQUENCE toolgate_change_seq;

CREATE FUNCTION toolgate_change(run_id TEXT, tenant TEXT, kind TEXT, status TEXT, origin TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolgate_changes', json_build_object(
        'seq', nextval('toolgate_change_seq'), 'run_id', run_id, 'tenant', tenant,
        'kind', kind, 'status', status, 'origin', origin)::text);
END
$$;

CREATE FUNCTION toolgate_run_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM toolgate_change(NEW.id, NEW.tenant, 'created', NEW.status, NEW.lease_owner);
    RETURN NULL;
END
$$;
CREATE TRIGGER changes_run_created AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION toolgate_run_created();

CREATE FUNCTION toolgate_run_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM toolgate_change(NEW.id, NEW.tenant,
        CASE WHEN OLD.status IS DISTINCT FROM NEW.status THEN 'status' ELSE 'saved' END,
        NEW.status, COALESCE(NEW.lease_owner, OLD.lease_owner));
    RETURN NULL;
END
$$;
CREATE TRIGGER changes_run_updated AFTER UPDATE ON runs
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.updated_at IS DISTINCT FROM NEW.updated_at)
    EXECUTE FUNCTION toolgate_run_updated();

CREATE FUNCTION toolgate_pending_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM toolgate_change(r.id, r.tenant,
        CASE WHEN TG_OP = 'INSERT' THEN 'pending_added' ELSE 'decided' END,
        r.status, r.lease_owner)
    FROM runs r WHERE r.id = NEW.run_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER changes_pending_added AFTER INSERT ON pending
    FOR EACH ROW EXECUTE FUNCTION toolgate_pending_changed();
CREATE TRIGGER changes_pending_decided AFTER UPDATE ON pending
    FOR EACH ROW
    WHEN (OLD.decision IS DISTINCT FROM NEW.decision)
    EXECUTE FUNCTION toolgate_pending_changed();

-- Call records' summaries and run lists (postgres/totals.rs, summary.rs, lists.rs, tree.rs).
-- The order runs were added in (SQLite's rowid), for lists (pending.added is above).
ALTER TABLE runs ADD COLUMN added BIGINT GENERATED ALWAYS AS IDENTITY;

-- A duration's histogram bucket, as store/summary.rs's `bucket` computes it: microseconds
-- (rounded half away from zero), exact below one millisecond and to three significant
-- digits from there; 0 for what is not a positive finite number.
CREATE FUNCTION toolgate_bucket(ms DOUBLE PRECISION) RETURNS BIGINT
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE
        WHEN us IS NULL OR us <= 0 THEN 0
        WHEN us < 1000 THEN us
        ELSE (us + scale / 2) / scale * scale
    END
    FROM (SELECT us, (10::bigint ^ (length(us::text) - 3))::bigint AS scale
          FROM (SELECT CASE
                    WHEN ms IN ('NaN', 'Infinity', '-Infinity') THEN NULL
                    ELSE least(trunc(ms * 1000) + CASE WHEN abs(ms * 1000 - trunc(ms * 1000)) >= 0.5
                                                        THEN sign(ms * 1000) ELSE 0 END,
                               1e15)::bigint
                END AS us) r) s
$$;

-- The records not folded into the running totals yet, in the calling statement's snapshot
-- (STABLE). A function of its own so that the planner expects a tail (ROWS), not a third
-- of the records: sized for a third, a summary's hash tables cost a millisecond to set up.
CREATE FUNCTION toolgate_tail()
RETURNS TABLE (tool TEXT, status TEXT, duration_ms DOUBLE PRECISION, conversation_id TEXT)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 1000 AS $$
BEGIN
    RETURN QUERY SELECT c.tool, c.status, c.duration_ms, c.conversation_id FROM tool_calls c
        WHERE c.xact >= (SELECT folded_to FROM totals_mark WHERE id = 1);
END
$$;
