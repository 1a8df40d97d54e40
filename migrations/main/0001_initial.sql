-- Main database: tenants (webhooks), their inbound URLs (entrypoints), where
-- their events go (targets), and daemon settings. Times are ISO-8601 UTC
-- text with milliseconds.

CREATE TABLE webhooks (
  id             TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  description    TEXT NOT NULL DEFAULT '',
  retention_days INTEGER NOT NULL DEFAULT 30 CHECK (retention_days > 0),
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL
);

CREATE TABLE entrypoints (
  id         TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  active     INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX entrypoints_by_webhook ON entrypoints(webhook_id);

-- Targets are soft-deleted (deleted_at set) so that old deliveries in the
-- events databases still resolve to a type and a name.
CREATE TABLE targets (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  type            TEXT NOT NULL CHECK (type IN ('http', 'slack', 'database', 'log')),
  active          INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  max_concurrency INTEGER NOT NULL DEFAULT 4 CHECK (max_concurrency > 0),
  config          TEXT NOT NULL DEFAULT '{}',
  max_retries     INTEGER NOT NULL DEFAULT 5 CHECK (max_retries >= 0),
  base_delay_ms   INTEGER NOT NULL DEFAULT 2000 CHECK (base_delay_ms > 0),
  max_delay_ms    INTEGER NOT NULL DEFAULT 300000 CHECK (max_delay_ms >= base_delay_ms),
  jitter          REAL NOT NULL DEFAULT 0.2 CHECK (jitter >= 0 AND jitter < 1),
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  deleted_at      TEXT
);
CREATE INDEX targets_by_webhook ON targets(webhook_id, deleted_at);

CREATE TABLE settings (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
