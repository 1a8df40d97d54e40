-- Receiving from any provider (docs/providers.md).
--   verification: none, "custom" or a preset's name (github, stripe, standard,
--     shopify, slack, …). The set lives in server/inbound_verifier.cpp, which
--     refuses requests for a word it does not know, so the column no longer
--     lists them: the table is rebuilt without that CHECK, its rows as they were.
--   inbound_settings: JSON, nothing secret: a custom scheme's parts, the
--     tolerance and public URL, the handshake's kind and the custom response.
--   inbound_secrets: JSON, never shown by the API: older secrets still honoured
--     while a new one rolls out, and Meta's verify token.
CREATE TABLE entrypoints_rebuilt (
  id                  TEXT PRIMARY KEY,
  webhook_id          TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  active              INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL,
  verification        TEXT NOT NULL DEFAULT 'none',
  verification_secret TEXT,
  event_type_rule     TEXT,
  name                TEXT NOT NULL DEFAULT '',
  inbound_settings    TEXT,
  inbound_secrets     TEXT
);
INSERT INTO entrypoints_rebuilt (id, webhook_id, active, created_at, updated_at, verification,
                                 verification_secret, event_type_rule, name)
  SELECT id, webhook_id, active, created_at, updated_at, verification, verification_secret,
         event_type_rule, name FROM entrypoints;
DROP TABLE entrypoints;
ALTER TABLE entrypoints_rebuilt RENAME TO entrypoints;
CREATE INDEX entrypoints_by_webhook ON entrypoints(webhook_id);
CREATE UNIQUE INDEX entrypoints_by_name ON entrypoints(webhook_id, name);
CREATE TRIGGER placement_entrypoint_added AFTER INSERT ON entrypoints
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER placement_entrypoint_removed AFTER DELETE ON entrypoints
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
