-- Events database, one file per webhook: what arrived, where it must go, and
-- every attempt. It never holds a target's config or credentials: deliveries
-- name their target by id only.

CREATE TABLE events (
  id              TEXT PRIMARY KEY,
  entrypoint_id   TEXT NOT NULL,
  method          TEXT NOT NULL,
  path            TEXT NOT NULL,
  query           TEXT NOT NULL DEFAULT '',
  headers         TEXT NOT NULL DEFAULT '[]',  -- JSON array of [name, value], arrival order
  content_type    TEXT NOT NULL DEFAULT '',
  body            BLOB NOT NULL,               -- byte for byte as received
  body_size       INTEGER NOT NULL,
  remote_addr     TEXT NOT NULL DEFAULT '',
  idempotency_key TEXT,
  received_at     TEXT NOT NULL
);
CREATE INDEX events_by_received_at ON events(received_at);
CREATE INDEX events_by_idempotency_key ON events(idempotency_key, received_at)
  WHERE idempotency_key IS NOT NULL;

CREATE TABLE deliveries (
  id               TEXT PRIMARY KEY,
  event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  target_id        TEXT NOT NULL,
  status           TEXT NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'retrying', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT,
  last_status_code INTEGER,
  failure_reason   TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX deliveries_by_status ON deliveries(status, next_attempt_at);
CREATE INDEX deliveries_by_event ON deliveries(event_id);
CREATE INDEX deliveries_by_target ON deliveries(target_id, status);

CREATE TABLE delivery_results (
  id            INTEGER PRIMARY KEY,
  delivery_id   TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
  attempt       INTEGER NOT NULL,
  status_code   INTEGER,
  response_body TEXT,                          -- capped at 4 KiB
  error         TEXT,
  duration_ms   INTEGER NOT NULL DEFAULT 0,
  success       INTEGER NOT NULL CHECK (success IN (0, 1)),
  created_at    TEXT NOT NULL
);
CREATE INDEX delivery_results_by_delivery ON delivery_results(delivery_id, attempt);

-- One readable row per event x target with the latest attempt, for
-- `sqlite3 events-<uuid>.db 'select * from delivery_history'`. Events with
-- no target yet still show up, with NULL delivery columns.
CREATE VIEW delivery_history AS
SELECT
  e.id               AS event_id,
  e.received_at      AS received_at,
  e.method           AS method,
  e.content_type     AS content_type,
  e.body_size        AS body_size,
  CASE WHEN e.content_type LIKE 'text/%' OR e.content_type LIKE '%json%'
         OR e.content_type LIKE '%xml%' OR e.content_type LIKE '%x-www-form-urlencoded%'
       THEN substr(CAST(e.body AS TEXT), 1, 120) END AS body_preview,
  d.id               AS delivery_id,
  d.target_id        AS target_id,
  d.status           AS status,
  d.attempts         AS attempts,
  d.next_attempt_at  AS next_attempt_at,
  d.last_status_code AS last_status_code,
  d.failure_reason   AS failure_reason,
  r.created_at       AS last_attempt_at,
  r.error            AS last_error,
  r.duration_ms      AS last_duration_ms
FROM events e
LEFT JOIN deliveries d ON d.event_id = e.id
LEFT JOIN delivery_results r ON r.id = (
  SELECT id FROM delivery_results
  WHERE delivery_id = d.id ORDER BY attempt DESC, id DESC LIMIT 1);
