// EventsDb: reading the history for the admin API — events, their
// deliveries and every attempt, newest first, a page at a time.
#include "storage/events_db.h"
#include "storage/sql_conditions.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

// A delivery with its event's time and its latest attempt (as the
// delivery_history view picks it).
constexpr const char* kDeliverySelect =
    "SELECT d.id, d.event_id, d.target_id, d.status, d.attempts, d.series_start, "
    "d.next_attempt_at, d.last_status_code, d.failure_reason, d.created_at, d.updated_at, "
    "e.received_at, r.created_at, r.error, e.event_type "
    "FROM deliveries d JOIN events e ON e.id = d.event_id "
    "LEFT JOIN delivery_results r ON r.id = (SELECT id FROM delivery_results "
    "WHERE delivery_id = d.id ORDER BY attempt DESC, id DESC LIMIT 1) ";

constexpr const char* kEventSelect =
    "SELECT e.id, e.entrypoint_id, e.method, e.path, e.query, e.content_type, e.body_size, "
    "e.remote_addr, e.idempotency_key, e.received_at, e.event_type FROM events e ";

std::optional<std::string> optionalText(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getString();
}

std::optional<int> optionalInt(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt();
}

DeliveryRecord readDelivery(SQLite::Statement& q) {
  DeliveryRecord d;
  d.id = q.getColumn(0).getString();
  d.eventId = q.getColumn(1).getString();
  d.targetId = q.getColumn(2).getString();
  d.status = storage::statusColumn(q.getColumn(3));
  d.attempts = q.getColumn(4).getInt();
  d.seriesStart = q.getColumn(5).getInt();
  d.nextAttemptAt = optionalText(q.getColumn(6));
  d.lastStatusCode = optionalInt(q.getColumn(7));
  d.failureReason = optionalText(q.getColumn(8));
  d.createdAt = q.getColumn(9).getString();
  d.updatedAt = q.getColumn(10).getString();
  d.eventReceivedAt = q.getColumn(11).getString();
  d.lastAttemptAt = optionalText(q.getColumn(12));
  d.lastError = optionalText(q.getColumn(13));
  d.eventType = optionalText(q.getColumn(14));
  return d;
}

EventRecord readEvent(SQLite::Statement& q) {
  EventRecord e;
  e.id = q.getColumn(0).getString();
  e.entrypointId = q.getColumn(1).getString();
  e.method = q.getColumn(2).getString();
  e.path = q.getColumn(3).getString();
  e.query = q.getColumn(4).getString();
  e.contentType = q.getColumn(5).getString();
  e.bodySize = q.getColumn(6).getInt64();
  e.remoteAddr = q.getColumn(7).getString();
  e.idempotencyKey = optionalText(q.getColumn(8));
  e.receivedAt = q.getColumn(9).getString();
  e.eventType = optionalText(q.getColumn(10));
  return e;
}

std::vector<AttemptRow> readAttempts(SQLite::Database& db, const std::string& deliveryId) {
  SQLite::Statement q(db,
                      "SELECT attempt, status_code, response_body, error, duration_ms, success, "
                      "created_at FROM delivery_results WHERE delivery_id = ? "
                      "ORDER BY attempt, id");
  q.bind(1, deliveryId);
  std::vector<AttemptRow> out;
  while (q.executeStep()) {
    AttemptRow a;
    a.attempt = q.getColumn(0).getInt();
    a.statusCode = optionalInt(q.getColumn(1));
    a.responseBody = q.getColumn(2).isNull() ? "" : q.getColumn(2).getString();
    a.error = optionalText(q.getColumn(3));
    a.durationMs = q.getColumn(4).getInt64();
    a.success = q.getColumn(5).getInt() != 0;
    a.createdAt = q.getColumn(6).getString();
    out.push_back(std::move(a));
  }
  return out;
}

// Runs a newest-first query of at most limit + 1 rows and keeps `limit`: the
// extra row only says that another page follows.
template <typename T, typename Read, typename KeyOf>
HistoryPage<T> readPage(SQLite::Statement& q, int limit, Read read, KeyOf keyOf) {
  HistoryPage<T> page;
  while (q.executeStep()) {
    if (static_cast<int>(page.items.size()) == limit) {
      page.next = keyOf(page.items.back());
      break;
    }
    page.items.push_back(read(q));
  }
  return page;
}

}  // namespace

Result<HistoryPage<EventRecord>> EventsDb::listEvents(const HistoryFilter& filter, int limit,
                                                      const std::optional<PageKey>& after) {
  storage::SqlConditions where;
  where.addEventMatch(filter);
  storage::SqlConditions match;
  match.addDeliveryMatch(filter);
  if (!match.empty())
    where.add("EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND " + match.joined() +
                  ")",
              match.params());
  if (after) where.addBefore(*after, "e.received_at", "e.id");

  auto snapshot = openSnapshot();
  if (!snapshot) return snapshot.error();
  SQLite::Database& db = *snapshot.value();
  try {
    SQLite::Statement q(db, std::string(kEventSelect) + "WHERE " + where.joined() +
                                " ORDER BY e.received_at DESC, e.id DESC LIMIT ?");
    q.bind(where.bind(q), limit + 1);
    auto page = readPage<EventRecord>(q, limit, readEvent, [](const EventRecord& e) {
      return PageKey{e.receivedAt, e.id};
    });
    SQLite::Statement deliveries(
        db, std::string(kDeliverySelect) + "WHERE d.event_id = ? ORDER BY d.created_at, d.rowid");
    for (EventRecord& e : page.items) {
      deliveries.bind(1, e.id);
      while (deliveries.executeStep()) e.deliveries.push_back(readDelivery(deliveries));
      deliveries.reset();
    }
    return page;
  } catch (const std::exception& e) {
    return storage::storageError("list events", e);
  }
}

Result<EventRecord> EventsDb::showEvent(const std::string& eventId) {
  // Headers and body as delivery reads them (the payload never changes
  // once stored, so a separate read is consistent enough for a view).
  auto payload = loadPayload(eventId);
  if (!payload) return payload.error();

  auto snapshot = openSnapshot();
  if (!snapshot) return snapshot.error();
  SQLite::Database& db = *snapshot.value();
  try {
    SQLite::Statement q(db, std::string(kEventSelect) + "WHERE e.id = ?");
    q.bind(1, eventId);
    if (!q.executeStep()) return makeError(error_code::kNotFound, "event " + eventId + " is gone");
    EventRecord event = readEvent(q);
    event.headers = std::move(payload->headers);
    event.body = std::move(payload->body);
    SQLite::Statement deliveries(
        db, std::string(kDeliverySelect) + "WHERE d.event_id = ? ORDER BY d.created_at, d.rowid");
    deliveries.bind(1, eventId);
    while (deliveries.executeStep()) event.deliveries.push_back(readDelivery(deliveries));
    for (DeliveryRecord& d : event.deliveries) d.attemptRows = readAttempts(db, d.id);
    return event;
  } catch (const std::exception& e) {
    return storage::storageError("show event", e);
  }
}

Result<HistoryPage<DeliveryRecord>> EventsDb::listDeliveries(const HistoryFilter& filter,
                                                             int limit,
                                                             const std::optional<PageKey>& after) {
  storage::SqlConditions where;
  where.addDeliveryMatch(filter);
  where.addEventMatch(filter);
  if (after) where.addBefore(*after, "d.created_at", "d.id");

  auto snapshot = openSnapshot();
  if (!snapshot) return snapshot.error();
  SQLite::Database& db = *snapshot.value();
  try {
    SQLite::Statement q(db, std::string(kDeliverySelect) + "WHERE " + where.joined() +
                                " ORDER BY d.created_at DESC, d.id DESC LIMIT ?");
    q.bind(where.bind(q), limit + 1);
    return readPage<DeliveryRecord>(q, limit, readDelivery, [](const DeliveryRecord& d) {
      return PageKey{d.createdAt, d.id};
    });
  } catch (const std::exception& e) {
    return storage::storageError("list deliveries", e);
  }
}

Result<DeliveryRecord> EventsDb::getDelivery(const std::string& deliveryId) {
  auto snapshot = openSnapshot();
  if (!snapshot) return snapshot.error();
  SQLite::Database& db = *snapshot.value();
  try {
    SQLite::Statement q(db, std::string(kDeliverySelect) + "WHERE d.id = ?");
    q.bind(1, deliveryId);
    if (!q.executeStep()) return makeError(error_code::kNotFound, "no delivery " + deliveryId);
    return readDelivery(q);
  } catch (const std::exception& e) {
    return storage::storageError("get delivery", e);
  }
}

}  // namespace webhooker
