-- toolgate schema: the last credential check of each tool (issue 45): `toolgate tools
-- validate`, `secrets set --validate`, `POST /v1/tools/{name}/validate`. The reason is
-- the upstream's, with every credential value masked; never a secret.

CREATE TABLE tool_validations (
    tenant     TEXT    NOT NULL DEFAULT '',
    tool       TEXT    NOT NULL,
    valid      INTEGER NOT NULL,   -- 1: accepted, 0: refused
    reason     TEXT,               -- the upstream's reason for a refusal
    checked_at INTEGER NOT NULL,   -- unix milliseconds
    PRIMARY KEY (tenant, tool)
);
