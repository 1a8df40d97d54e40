#include "storage/schema.h"

#include "storage/sqlite_database.h"

namespace webhooker {

Result<SchemaChange> migrateFile(const std::filesystem::path& file, DbKind kind,
                                 const DbOptions& options) {
  SchemaChange change;
  auto db = storage::openDatabase(file, options,
                                  kind == DbKind::kMain ? mainMigrations() : eventsMigrations(),
                                  &change.before);
  if (!db) return db.error();
  change.after = storage::schemaVersion(*db.value());
  return change;
}

std::string_view deliveryHistoryView() {
  return R"sql(CREATE TEMP VIEW IF NOT EXISTS delivery_history AS
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
)sql";
}

}  // namespace webhooker
