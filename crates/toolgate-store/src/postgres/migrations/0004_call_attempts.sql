-- toolgate schema 17 (PostgreSQL): the tries of a call its retry policy tried more than
-- once, as a JSON array of {attempt, outcome, error, duration_ms, wait_ms}; NULL for a
-- call tried once (the record is that try).

ALTER TABLE tool_calls ADD COLUMN attempts TEXT;
