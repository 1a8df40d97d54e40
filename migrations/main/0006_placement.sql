-- Placement: which webhooks (and entrypoints) this node owns, as a cluster's
-- router reads them (GET /api/v1/placement). The version moves in the same
-- transaction as any change of that set, so a router that saw a version has
-- seen every change before it.
CREATE TABLE placement (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);
INSERT INTO placement (id, version) VALUES (1, 1);

CREATE TRIGGER placement_webhook_added AFTER INSERT ON webhooks
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER placement_webhook_removed AFTER DELETE ON webhooks
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER placement_entrypoint_added AFTER INSERT ON entrypoints
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER placement_entrypoint_removed AFTER DELETE ON entrypoints
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
