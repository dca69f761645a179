-- toolgate schema 8: a standing approval ("approve always") belongs to the agent whose
-- call was approved, not to every agent of the conversation. A standing approval of
-- schema 7 is kept where its conversation had one agent only (it was that agent's);
-- where several agents shared the conversation it cannot be told whose it was, and is
-- dropped: those calls are asked about again, never run unasked.

CREATE TABLE standing_decisions_v8 (
    conversation_id TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    decision        TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, agent, tool)
);
INSERT INTO standing_decisions_v8 (conversation_id, agent, tool, decision, created_at)
SELECT s.conversation_id, MIN(r.agent), s.tool, s.decision, s.created_at
FROM standing_decisions s JOIN runs r ON r.conversation_id = s.conversation_id
GROUP BY s.conversation_id, s.tool
HAVING COUNT(DISTINCT r.agent) = 1;
DROP TABLE standing_decisions;
ALTER TABLE standing_decisions_v8 RENAME TO standing_decisions;
