-- toolgate schema 9: approval that fits the risk. A pending item says which rule asked
-- for a person and when its approval expires (and what then); `warned_at` marks the
-- `approval.expiring` notice as sent, so a restart does not send it twice. A standing
-- approval keeps the fingerprint of the tool's policy it was given under: a change of
-- that policy (a stricter word, new rules or hooks) ends it. Standing approvals from
-- before this schema have no fingerprint and are asked about again, never run unasked.
-- A call record says when an after_result hook replaced the result the model saw.

ALTER TABLE pending ADD COLUMN reason TEXT;
ALTER TABLE pending ADD COLUMN expires_at INTEGER;
ALTER TABLE pending ADD COLUMN on_timeout TEXT;
ALTER TABLE pending ADD COLUMN warned_at INTEGER;
ALTER TABLE pending ADD COLUMN policy TEXT;
CREATE INDEX pending_expires ON pending (expires_at) WHERE expires_at IS NOT NULL AND state = 'waiting';

ALTER TABLE standing_decisions ADD COLUMN policy TEXT NOT NULL DEFAULT '';

ALTER TABLE tool_calls ADD COLUMN replaced INTEGER NOT NULL DEFAULT 0;
