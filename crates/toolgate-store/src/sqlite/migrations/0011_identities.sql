-- toolgate schema 11: identities and tenants. Keys toolgate issued (only the SHA-256 of
-- each key is kept), the tenant every run belongs to (its calls, pending items,
-- responses and summaries follow their run), who started each run, the key id beside
-- `decided_by` with any typed display name, and secrets scoped to a tenant ('' is the
-- shared scope every tenant falls back to).

CREATE TABLE api_keys (
    id          TEXT    PRIMARY KEY,           -- key_...
    name        TEXT    NOT NULL UNIQUE,
    hash        TEXT    NOT NULL UNIQUE,       -- hex SHA-256 of the key
    role        TEXT    NOT NULL,              -- client | approver | admin
    tenant      TEXT    NOT NULL,
    groups      TEXT    NOT NULL DEFAULT '[]', -- JSON array of group names
    created_at  INTEGER NOT NULL,              -- unix milliseconds
    expires_at  INTEGER,
    revoked_at  INTEGER
);

ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE runs ADD COLUMN started_by TEXT;
CREATE INDEX runs_tenant ON runs (tenant, created_at);

ALTER TABLE pending ADD COLUMN decided_by_key TEXT;
ALTER TABLE pending ADD COLUMN decided_as TEXT;

CREATE TABLE secrets_scoped (
    tenant      TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    sealed      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
);
INSERT INTO secrets_scoped (tenant, name, sealed, created_at, updated_at)
    SELECT '', name, sealed, created_at, updated_at FROM secrets;
DROP TABLE secrets;
ALTER TABLE secrets_scoped RENAME TO secrets;
