-- toolgate schema 2 (PostgreSQL): allow-lists on issued keys. Each a JSON array of
-- names (a name ending in `*` covers every name it begins); NULL is no limit, `[]`
-- allows nothing. Keys issued before keep no limit.

ALTER TABLE api_keys ADD COLUMN agents TEXT;
ALTER TABLE api_keys ADD COLUMN tools TEXT;
