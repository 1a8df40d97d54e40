#include "storage/events_db.h"

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/sqlite_database.h"

namespace webhooker {

EventsDb::EventsDb(std::unique_ptr<SQLite::Database> db, const Clock& clock)
    : clock_(clock), db_(std::move(db)) {}

EventsDb::~EventsDb() = default;

Result<std::shared_ptr<EventsDb>> EventsDb::open(const std::filesystem::path& file,
                                                 const DbOptions& options, const Clock& clock) {
  auto db = storage::openDatabase(file, options, eventsMigrations());
  if (!db) return db.error();
  return std::shared_ptr<EventsDb>(new EventsDb(std::move(db.value()), clock));
}

int EventsDb::schemaVersion() {
  std::lock_guard lock(dbMutex_);
  return storage::schemaVersion(*db_);
}

Result<IngestOutcome> EventsDb::ingest(const InboundEvent& event,
                                       const std::vector<std::string>& targetIds,
                                       std::chrono::milliseconds idempotencyWindow) {
  const TimePoint now = clock_.now();
  IngestOutcome out;
  out.receivedAt = formatTime(now);
  std::lock_guard lock(dbMutex_);
  try {
    SQLite::Transaction txn(*db_);
    if (event.idempotencyKey) {
      SQLite::Statement seen(*db_,
                             "SELECT id, received_at FROM events WHERE idempotency_key = ? "
                             "AND received_at >= ? ORDER BY received_at LIMIT 1");
      seen.bind(1, *event.idempotencyKey);
      seen.bind(2, formatTime(now - idempotencyWindow));
      if (seen.executeStep()) {
        out.eventId = seen.getColumn(0).getString();
        out.receivedAt = seen.getColumn(1).getString();
        out.duplicate = true;
        SQLite::Statement deliveries(*db_,
                                     "SELECT id, target_id FROM deliveries WHERE event_id = ? "
                                     "ORDER BY rowid");
        deliveries.bind(1, out.eventId);
        while (deliveries.executeStep())
          out.deliveries.push_back({deliveries.getColumn(0).getString(),
                                    deliveries.getColumn(1).getString()});
        return out;  // the transaction rolls back: nothing written
      }
    }

    nlohmann::json headers = nlohmann::json::array();
    for (const auto& [name, value] : event.headers) headers.push_back({name, value});

    out.eventId = newUuid();
    SQLite::Statement insert(*db_,
                             "INSERT INTO events (id, entrypoint_id, method, path, query, headers, "
                             "content_type, body, body_size, remote_addr, idempotency_key, "
                             "received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, out.eventId);
    insert.bind(2, event.entrypointId);
    insert.bind(3, event.method);
    insert.bind(4, event.path);
    insert.bind(5, event.query);
    // Header values are whatever the sender put there; never fail on bad UTF-8.
    insert.bind(6, headers.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    insert.bind(7, event.contentType);
    insert.bindNoCopy(8, event.body.data(), static_cast<int>(event.body.size()));
    insert.bind(9, static_cast<int64_t>(event.body.size()));
    insert.bind(10, event.remoteAddr);
    if (event.idempotencyKey) insert.bind(11, *event.idempotencyKey);
    insert.bind(12, out.receivedAt);
    insert.exec();

    SQLite::Statement delivery(*db_,
                               "INSERT INTO deliveries (id, event_id, target_id, status, attempts, "
                               "created_at, updated_at) VALUES (?, ?, ?, 'pending', 0, ?, ?)");
    for (const std::string& targetId : targetIds) {
      StoredDelivery d{newUuid(), targetId};
      delivery.bind(1, d.id);
      delivery.bind(2, out.eventId);
      delivery.bind(3, d.targetId);
      delivery.bind(4, out.receivedAt);
      delivery.bind(5, out.receivedAt);
      delivery.exec();
      delivery.reset();
      out.deliveries.push_back(std::move(d));
    }
    txn.commit();
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("ingest", e);
  }
}

}  // namespace webhooker
