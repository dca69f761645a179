-- toolgate schema 16 (PostgreSQL): knowledge bases. A base belongs to a tenant; its
-- documents keep their source and content hash; their chunks keep text, section and
-- position, an embedding (little-endian f32s) when the base has a model, and a
-- tsvector (English: the text weighted A, the section B) under a GIN index.

CREATE TABLE knowledge_bases (
    id          BIGSERIAL PRIMARY KEY,
    tenant      TEXT NOT NULL,
    name        TEXT NOT NULL,
    embeddings  TEXT,
    dims        BIGINT,
    chunk_size  BIGINT NOT NULL,
    overlap     BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE knowledge_documents (
    id        BIGSERIAL PRIMARY KEY,
    base_id   BIGINT NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    source    TEXT NOT NULL,
    hash      TEXT NOT NULL,
    bytes     BIGINT NOT NULL,
    added_at  BIGINT NOT NULL,
    UNIQUE (base_id, source)
);

CREATE TABLE knowledge_chunks (
    id            BIGSERIAL PRIMARY KEY,
    document_id   BIGINT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    base_id       BIGINT NOT NULL,
    ordinal       BIGINT NOT NULL,
    section       TEXT,
    start_offset  BIGINT NOT NULL,
    end_offset    BIGINT NOT NULL,
    text          TEXT NOT NULL,
    embedding     BYTEA,
    tsv           tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', text), 'A')
        || setweight(to_tsvector('english', coalesce(section, '')), 'B')
    ) STORED
);
CREATE INDEX knowledge_chunks_base ON knowledge_chunks (base_id);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (document_id);
CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING GIN (tsv);
