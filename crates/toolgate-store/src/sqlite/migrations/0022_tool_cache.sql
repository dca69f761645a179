-- toolgate schema 22: kept results of read-only tools (`cache:`, issue 45), shared by
-- every process on the database. The key is SHA-256 over the tenant, the user (for a
-- tool acting for its user), the tool and the canonical arguments; the output is the
-- tool's JSON (text, JSON, links, inline images: never a secret argument unless the tool
-- declared it safe). Each call record says whether it was served from the cache.

CREATE TABLE tool_cache (
    key        TEXT    PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    tool       TEXT    NOT NULL,
    output     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,   -- unix milliseconds
    expires_at INTEGER NOT NULL    -- unix milliseconds
);
CREATE INDEX tool_cache_expires ON tool_cache (expires_at);
CREATE INDEX tool_cache_created ON tool_cache (created_at);

-- NULL: the tool keeps no results; 1: served from the cache; 0: the tool ran.
ALTER TABLE tool_calls ADD COLUMN cached INTEGER;
-- The calls of tools with a cache, for their hit rates (`stats`).
CREATE INDEX tool_calls_cached ON tool_calls (tool, cached) WHERE cached IS NOT NULL;
