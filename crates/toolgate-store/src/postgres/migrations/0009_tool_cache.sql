-- toolgate schema 22 (PostgreSQL): kept results of read-only tools (`cache:`), shared by
-- every worker. The key is SHA-256 over the tenant, the user (for a tool acting for its
-- user), the tool and the canonical arguments. Each call record says whether it was
-- served from the cache.

CREATE TABLE tool_cache (
    key        TEXT   PRIMARY KEY,
    tenant     TEXT   NOT NULL,
    tool       TEXT   NOT NULL,
    output     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX tool_cache_expires ON tool_cache (expires_at);
CREATE INDEX tool_cache_created ON tool_cache (created_at);

-- NULL: the tool keeps no results; true: served from the cache; false: the tool ran.
ALTER TABLE tool_calls ADD COLUMN cached BOOLEAN;
-- The calls of tools with a cache, for their hit rates (`stats`).
CREATE INDEX tool_calls_cached ON tool_calls (tool, cached) WHERE cached IS NOT NULL;
