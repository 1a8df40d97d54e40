-- Routing: the type of each event, worked out at ingest from its
-- entrypoint's rule (NULL when the rule found none). Indexed for the history
-- filter (exact or prefix.*, both answered by a range on the index) and the
-- replay selection.
ALTER TABLE events ADD COLUMN event_type TEXT;
CREATE INDEX events_by_event_type ON events(event_type, received_at)
  WHERE event_type IS NOT NULL;

-- delivery_history shows the type too; a view cannot be altered.
DROP VIEW delivery_history;
CREATE VIEW delivery_history AS
SELECT
  e.id               AS event_id,
  e.received_at      AS received_at,
  e.event_type       AS event_type,
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
