-- toolgate schema: per-user OAuth (issue 46). A user's tokens per tenant and provider,
-- sealed with the secrets' key (never in clear); and the consents under way, found by
-- the SHA-256 of their state (the state itself is never stored), each taken once.

CREATE TABLE oauth_tokens (
    tenant      TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    provider    TEXT    NOT NULL,
    sealed      TEXT    NOT NULL,
    scope       TEXT,
    expires_at  BIGINT,            -- unix milliseconds, when the server said
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant, user_id, provider)
);

CREATE TABLE oauth_consents (
    state_hash  TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    provider    TEXT    NOT NULL,
    run_id      TEXT,
    call_id     TEXT,
    verifier    TEXT    NOT NULL,   -- the PKCE verifier, sealed
    created_at  BIGINT NOT NULL
);
