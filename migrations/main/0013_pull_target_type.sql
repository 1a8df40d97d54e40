-- Pull targets: 'pull' joins the types a target may have (consumers lease
-- its deliveries over the API; nothing is sent). The table is made again
-- with the new CHECK constraint, as 0012 did, target_health's rows kept
-- aside and put back.
CREATE TEMP TABLE kept_target_health AS SELECT * FROM target_health;

CREATE TABLE targets_new (
  id                TEXT PRIMARY KEY,
  webhook_id        TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  type              TEXT NOT NULL CHECK (type IN ('http', 'slack', 'database', 'log',
                                                  'redis_stream', 'nats', 'amqp', 'pull')),
  active            INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  max_concurrency   INTEGER NOT NULL DEFAULT 4 CHECK (max_concurrency > 0),
  config            TEXT NOT NULL DEFAULT '{}',
  max_retries       INTEGER NOT NULL DEFAULT 5 CHECK (max_retries >= 0),
  base_delay_ms     INTEGER NOT NULL DEFAULT 2000 CHECK (base_delay_ms > 0),
  max_delay_ms      INTEGER NOT NULL DEFAULT 300000 CHECK (max_delay_ms >= base_delay_ms),
  jitter            REAL NOT NULL DEFAULT 0.2 CHECK (jitter >= 0 AND jitter < 1),
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  deleted_at        TEXT,
  routing           TEXT NOT NULL DEFAULT '{}',
  disabled_reason   TEXT CHECK (disabled_reason IN ('gone', 'failing')),
  disabled_at       TEXT,
  ordering          TEXT NOT NULL DEFAULT 'parallel' CHECK (ordering IN ('parallel', 'fifo')),
  disable_after_ms  INTEGER NOT NULL DEFAULT 432000000 CHECK (disable_after_ms >= 60000),
  auto_resume       INTEGER NOT NULL DEFAULT 0 CHECK (auto_resume IN (0, 1)),
  probe_interval_ms INTEGER NOT NULL DEFAULT 3600000 CHECK (probe_interval_ms >= 1000)
);
INSERT INTO targets_new (id, webhook_id, name, type, active, max_concurrency, config,
                         max_retries, base_delay_ms, max_delay_ms, jitter, created_at,
                         updated_at, deleted_at, routing, disabled_reason, disabled_at,
                         ordering, disable_after_ms, auto_resume, probe_interval_ms)
  SELECT id, webhook_id, name, type, active, max_concurrency, config, max_retries,
         base_delay_ms, max_delay_ms, jitter, created_at, updated_at, deleted_at, routing,
         disabled_reason, disabled_at, ordering, disable_after_ms, auto_resume,
         probe_interval_ms
  FROM targets;
DROP TABLE targets;
ALTER TABLE targets_new RENAME TO targets;
CREATE INDEX targets_by_webhook ON targets(webhook_id, deleted_at);

INSERT INTO target_health SELECT * FROM kept_target_health;
DROP TABLE kept_target_health;
