-- toolgate schema 13: the change feed. Every change a process (or a person, through
-- any process) makes to a run is a row here, written by triggers in the same
-- transaction: its status moving, a save of its state (with the step's call records),
-- pending items added or decided. Each process follows the rows after the last one it
-- saw (`Store::watch`), so that what happens in one process is seen by every other.
-- Lease renewals change nothing here. Old rows are pruned by the upkeep.

CREATE TABLE changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id  TEXT    NOT NULL,
    tenant  TEXT    NOT NULL,
    kind    TEXT    NOT NULL,   -- created | status | saved | pending_added | decided
    status  TEXT    NOT NULL,   -- the run's status after the change
    origin  TEXT                -- the lease owner driving the run then, if any
);

CREATE TRIGGER changes_run_created AFTER INSERT ON runs BEGIN
    INSERT INTO changes (run_id, tenant, kind, status, origin)
    VALUES (NEW.id, NEW.tenant, 'created', NEW.status, NEW.lease_owner);
END;

CREATE TRIGGER changes_run_updated AFTER UPDATE ON runs
WHEN OLD.status IS NOT NEW.status OR OLD.updated_at IS NOT NEW.updated_at BEGIN
    INSERT INTO changes (run_id, tenant, kind, status, origin)
    VALUES (NEW.id, NEW.tenant,
            CASE WHEN OLD.status IS NOT NEW.status THEN 'status' ELSE 'saved' END,
            NEW.status, COALESCE(NEW.lease_owner, OLD.lease_owner));
END;

CREATE TRIGGER changes_pending_added AFTER INSERT ON pending BEGIN
    INSERT INTO changes (run_id, tenant, kind, status, origin)
    SELECT id, tenant, 'pending_added', status, lease_owner FROM runs WHERE id = NEW.run_id;
END;

CREATE TRIGGER changes_pending_decided AFTER UPDATE ON pending
WHEN OLD.decision IS NOT NEW.decision BEGIN
    INSERT INTO changes (run_id, tenant, kind, status, origin)
    SELECT id, tenant, 'decided', status, lease_owner FROM runs WHERE id = NEW.run_id;
END;
