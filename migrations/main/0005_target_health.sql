-- Endpoint health (docs/receiver-outages.md).
--   disabled_reason/at: set by the engine when a receiver answers 410 Gone
--     ('gone') or kept failing for disable_after_ms ('failing'); deliveries
--     wait until an operator (or an auto_resume probe) enables it again.
--   ordering: 'parallel' (up to max_concurrency at once) or 'fifo' (one at a
--     time, in the order the events were received).
--   auto_resume / probe_interval_ms: a target disabled for 'failing' is
--     probed with its oldest waiting delivery and enabled when that succeeds.
ALTER TABLE targets ADD COLUMN disabled_reason TEXT CHECK (disabled_reason IN ('gone', 'failing'));
ALTER TABLE targets ADD COLUMN disabled_at TEXT;
ALTER TABLE targets ADD COLUMN ordering TEXT NOT NULL DEFAULT 'parallel'
  CHECK (ordering IN ('parallel', 'fifo'));
ALTER TABLE targets ADD COLUMN disable_after_ms INTEGER NOT NULL DEFAULT 432000000
  CHECK (disable_after_ms >= 60000);
ALTER TABLE targets ADD COLUMN auto_resume INTEGER NOT NULL DEFAULT 0 CHECK (auto_resume IN (0, 1));
ALTER TABLE targets ADD COLUMN probe_interval_ms INTEGER NOT NULL DEFAULT 3600000
  CHECK (probe_interval_ms >= 1000);

-- What the engine knows of a receiver's health, so a restart does not forget
-- it: the circuit breaker (state, when it opened, consecutive retryable
-- failures) and since when attempts have failed without a success.
CREATE TABLE target_health (
  target_id            TEXT PRIMARY KEY REFERENCES targets(id) ON DELETE CASCADE,
  breaker_state        TEXT NOT NULL DEFAULT 'closed'
                       CHECK (breaker_state IN ('closed', 'open', 'half_open')),
  breaker_opened_at    TEXT,
  consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  failing_since        TEXT,
  updated_at           TEXT NOT NULL
);
