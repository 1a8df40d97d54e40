-- The webhook list pages oldest first by (created_at, id): an index in that
-- order makes each page read its own rows, not the whole table.
CREATE INDEX webhooks_by_creation ON webhooks (created_at, id);
