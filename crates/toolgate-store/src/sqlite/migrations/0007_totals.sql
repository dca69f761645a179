-- toolgate schema 7: running totals of the call records, so that the global, per-tool
-- and per-run summaries read a few rows rather than every record. The writer folds
-- new records in off the hot path (when it is idle); records above `folded_to` are not
-- in the totals yet, and every summary adds those itself, so it is always exact.
-- Durations are kept as a histogram: microseconds, to three significant digits from
-- one millisecond up (exact below).

CREATE TABLE totals_mark (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    folded_to INTEGER NOT NULL             -- the last record id in the totals
);
INSERT INTO totals_mark (id, folded_to) VALUES (1, 0);

CREATE TABLE tool_totals (
    tool   TEXT    NOT NULL,
    status TEXT    NOT NULL,
    calls  INTEGER NOT NULL,
    PRIMARY KEY (tool, status)
) WITHOUT ROWID;

CREATE TABLE duration_totals (
    tool   TEXT    NOT NULL,
    bucket INTEGER NOT NULL,               -- microseconds, three significant digits
    calls  INTEGER NOT NULL,
    PRIMARY KEY (tool, bucket)
) WITHOUT ROWID;

CREATE TABLE conversation_totals (
    conversation_id TEXT    PRIMARY KEY,
    calls           INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE run_totals (
    run_id   TEXT    NOT NULL,
    tool     TEXT    NOT NULL,
    status   TEXT    NOT NULL,
    calls    INTEGER NOT NULL,
    total_ms REAL    NOT NULL,
    PRIMARY KEY (run_id, tool, status)
) WITHOUT ROWID;
