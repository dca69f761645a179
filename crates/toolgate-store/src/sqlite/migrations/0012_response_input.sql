-- toolgate schema: the input items of each response of the Responses endpoint, as the
-- request sent them (ids added), for GET /v1/responses/{id}/input_items.

ALTER TABLE responses ADD COLUMN input TEXT NOT NULL DEFAULT '[]';  -- JSON array of items
