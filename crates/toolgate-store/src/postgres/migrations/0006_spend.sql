-- toolgate schema: the model requests of runs with their tokens and price (issue 46,
-- budgets), so that spend sums per run, conversation, agent, tenant and key over any
-- period. The run's conversation, agent, tenant and starter are copied in when the row
-- is written, so that a budget's sum reads this table alone.

CREATE TABLE model_requests (
    id                    BIGSERIAL PRIMARY KEY,
    run_id                TEXT    NOT NULL,
    conversation_id       TEXT    NOT NULL,
    agent                 TEXT    NOT NULL,
    tenant                TEXT    NOT NULL,
    started_by            TEXT    NOT NULL DEFAULT '-',
    model                 TEXT    NOT NULL,
    prompt_tokens         BIGINT  NOT NULL,
    completion_tokens     BIGINT  NOT NULL,
    cache_read_tokens     BIGINT  NOT NULL,
    cache_creation_tokens BIGINT  NOT NULL,
    total_tokens          BIGINT  NOT NULL,
    cost_nanos            BIGINT  NOT NULL,   -- US dollars * 1e9
    at                    BIGINT  NOT NULL    -- unix milliseconds
);
CREATE INDEX model_requests_run ON model_requests (run_id);
CREATE INDEX model_requests_conversation ON model_requests (conversation_id);
CREATE INDEX model_requests_tenant ON model_requests (tenant, at);

-- Spend limits on issued keys (`keys create --budget`): a JSON array of budgets
-- ({per, tokens | usd, on_limit}); NULL is none.
ALTER TABLE api_keys ADD COLUMN budgets TEXT;
