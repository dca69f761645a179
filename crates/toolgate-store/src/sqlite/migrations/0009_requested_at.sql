-- toolgate schema 9: when each pending item was requested, for the time a decision
-- took and the age of the oldest approval still waiting (metrics). Items from before
-- have none (their run's last update stands in). The index keeps the scrape-time count
-- of waiting items cheap however many decided ones the table holds.
ALTER TABLE pending ADD COLUMN requested_at INTEGER;
CREATE INDEX pending_waiting ON pending (state) WHERE state = 'waiting';
