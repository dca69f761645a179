-- toolgate schema 2: a conversation's messages, appended one by one, so that saving a
-- run's step writes only what the step added (the run's state no longer holds them).

CREATE TABLE messages (
    conversation_id TEXT    NOT NULL,
    seq             INTEGER NOT NULL,      -- position in the conversation, from 0
    run_id          TEXT    NOT NULL,      -- the run that added it
    message         TEXT    NOT NULL,      -- JSON: role, content, tool_calls, tool_call_id
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
