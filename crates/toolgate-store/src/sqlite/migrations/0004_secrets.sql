-- toolgate schema 4: named secrets (credentials a tool file names, set with
-- `toolgate secrets set NAME`). The value is sealed with the key beside the database
-- (or TOOLGATE_SECRET_KEY) before it reaches this table; it is never stored in clear.

CREATE TABLE secrets (
    name        TEXT    PRIMARY KEY,
    sealed      TEXT    NOT NULL,      -- [[tgsecret:v1:...]]
    created_at  INTEGER NOT NULL,      -- unix milliseconds
    updated_at  INTEGER NOT NULL
);
