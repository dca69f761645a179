-- toolgate schema 16: knowledge bases. A base belongs to a tenant; its documents keep
-- their source and content hash; their chunks keep text, section and position, and
-- an embedding (little-endian f32s) when the base has a model. `knowledge_fts` is an
-- FTS5 index over the chunks (BM25 ranking, Porter stemming), kept by triggers.

CREATE TABLE knowledge_bases (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT NOT NULL,
    name        TEXT NOT NULL,
    embeddings  TEXT,
    dims        INTEGER,
    chunk_size  INTEGER NOT NULL,
    overlap     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE knowledge_documents (
    id        INTEGER PRIMARY KEY,
    base_id   INTEGER NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    source    TEXT NOT NULL,
    hash      TEXT NOT NULL,
    bytes     INTEGER NOT NULL,
    added_at  INTEGER NOT NULL,
    UNIQUE (base_id, source)
);

CREATE TABLE knowledge_chunks (
    id            INTEGER PRIMARY KEY,
    document_id   INTEGER NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    base_id       INTEGER NOT NULL,
    ordinal       INTEGER NOT NULL,
    section       TEXT,
    start_offset  INTEGER NOT NULL,
    end_offset    INTEGER NOT NULL,
    text          TEXT NOT NULL,
    embedding     BLOB
);
CREATE INDEX knowledge_chunks_base ON knowledge_chunks (base_id);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (document_id);

CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
    text, section, content = 'knowledge_chunks', content_rowid = 'id',
    tokenize = 'porter unicode61'
);
CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (rowid, text, section) VALUES (new.id, new.text, new.section);
END;
CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, text, section)
        VALUES ('delete', old.id, old.text, old.section);
END;
