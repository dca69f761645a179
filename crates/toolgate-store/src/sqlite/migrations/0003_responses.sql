-- toolgate schema 3: responses of the OpenAI Responses-compatible endpoint. Each maps
-- to one run and one step of it: step 0 is the response that started the run, each
-- continuation (approvals, client outputs) the next one. The body is the response
-- object as last returned, so GET /v1/responses/{id} answers after a restart.

CREATE TABLE responses (
    id           TEXT    PRIMARY KEY,   -- resp_...
    run_id       TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step         INTEGER NOT NULL,      -- 0, 1, 2, ... within the run
    previous_id  TEXT,                  -- the previous_response_id it continued
    status       TEXT    NOT NULL,      -- in_progress | completed | incomplete | failed | cancelled
    body         TEXT    NOT NULL,      -- the response object, JSON
    created_at   INTEGER NOT NULL,      -- unix milliseconds
    updated_at   INTEGER NOT NULL,
    UNIQUE (run_id, step)
);
