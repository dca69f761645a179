-- Who made each decision on a paused item (a name, `cli:USER`, or `api`), beside when.
ALTER TABLE pending ADD COLUMN decided_by TEXT;
