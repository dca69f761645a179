-- toolgate schema: each run's token usage in columns of its own (issue 25), written with
-- every save; until now it was read out of the run's state JSON. Existing runs are
-- filled from that JSON here.

ALTER TABLE runs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN compactions INTEGER NOT NULL DEFAULT 0;

UPDATE runs SET
    prompt_tokens = COALESCE(json_extract(state, '$.usage.prompt_tokens'), 0),
    completion_tokens = COALESCE(json_extract(state, '$.usage.completion_tokens'), 0),
    total_tokens = COALESCE(json_extract(state, '$.usage.total_tokens'), 0),
    model_calls = COALESCE(json_extract(state, '$.usage.model_calls'), 0),
    cache_read_tokens = COALESCE(json_extract(state, '$.usage.cache_read_tokens'), 0),
    cache_creation_tokens = COALESCE(json_extract(state, '$.usage.cache_creation_tokens'), 0),
    compactions = COALESCE(json_extract(state, '$.usage.compactions'), 0)
WHERE json_valid(state) AND json_type(state, '$.usage') = 'object';
