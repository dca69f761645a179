-- toolgate schema 5: sub-agent runs. A sub-agent call is a child run linked to the
-- call that started it; at most one child per (parent run, call), so that starting a
-- child is safe to repeat after a crash (the second start finds the first child).

ALTER TABLE runs ADD COLUMN parent_run_id  TEXT;   -- NULL for a top run
ALTER TABLE runs ADD COLUMN parent_call_id TEXT;
ALTER TABLE runs ADD COLUMN depth          INTEGER NOT NULL DEFAULT 0;  -- 0 for a top run
CREATE UNIQUE INDEX runs_parent_call ON runs (parent_run_id, parent_call_id) WHERE parent_run_id IS NOT NULL;
