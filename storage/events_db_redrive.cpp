// EventsDb: redrive — retrying a dead letter, redelivering an event, bulk
// replay. Each is one IMMEDIATE transaction (the write lock is taken before
// the rows are checked), so a refused request writes nothing and a replay
// resets exactly the rows it counted.
#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/events_db.h"
#include "storage/sql_conditions.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

// A new attempt series: the retry budget counts from series_start, the
// results of earlier series stay.
constexpr const char* kRestartSeries =
    "UPDATE deliveries SET status = 'pending', failure_reason = NULL, next_attempt_at = NULL, "
    "series_start = attempts, updated_at = ? WHERE id = ?";

}  // namespace

Result<UnfinishedDelivery> EventsDb::retryDelivery(const std::string& deliveryId) {
  const std::string now = formatTime(clock_.now());
  MutexLock lock(dbMutex_);
  try {
    SQLite::Transaction txn(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_, "SELECT event_id, target_id, status, attempts FROM deliveries "
                              "WHERE id = ?");
    q.bind(1, deliveryId);
    if (!q.executeStep()) return makeError(error_code::kNotFound, "no delivery " + deliveryId);
    const DeliveryStatus status = storage::statusColumn(q.getColumn(2));
    if (status != DeliveryStatus::kFailed)
      return makeError(error_code::kConflict, "delivery " + deliveryId + " is " +
                                                  storage::statusText(status) +
                                       "; only failed deliveries can be retried");
    UnfinishedDelivery d;
    d.id = deliveryId;
    d.eventId = q.getColumn(0).getString();
    d.targetId = q.getColumn(1).getString();
    d.status = DeliveryStatus::kPending;
    d.attempts = q.getColumn(3).getInt();
    d.seriesStart = d.attempts;
    SQLite::Statement update(*db_, kRestartSeries);
    update.bind(1, now);
    update.bind(2, deliveryId);
    update.exec();
    txn.commit();
    return d;
  } catch (const std::exception& e) {
    return storage::storageError("retry delivery", e);
  }
}

Result<std::vector<UnfinishedDelivery>> EventsDb::redeliverEvent(
    const std::string& eventId, const std::vector<std::string>& targetIds) {
  const std::string now = formatTime(clock_.now());
  MutexLock lock(dbMutex_);
  try {
    SQLite::Transaction txn(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement exists(*db_, "SELECT 1 FROM events WHERE id = ?");
    exists.bind(1, eventId);
    if (!exists.executeStep()) return makeError(error_code::kNotFound, "no event " + eventId);
    SQLite::Statement insert(*db_,
                             "INSERT INTO deliveries (id, event_id, target_id, status, attempts, "
                             "created_at, updated_at) VALUES (?, ?, ?, 'pending', 0, ?, ?)");
    std::vector<UnfinishedDelivery> out;
    for (const std::string& targetId : targetIds) {
      UnfinishedDelivery d;
      d.id = newTimeOrderedUuid();
      d.eventId = eventId;
      d.targetId = targetId;
      d.status = DeliveryStatus::kPending;
      insert.bind(1, d.id);
      insert.bind(2, eventId);
      insert.bind(3, targetId);
      insert.bind(4, now);
      insert.bind(5, now);
      insert.exec();
      insert.reset();
      out.push_back(std::move(d));
    }
    txn.commit();
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("redeliver event", e);
  }
}

Result<ReplayOutcome> EventsDb::replay(const ReplayRequest& request) {
  storage::SqlConditions where;
  where.addDeliveryMatch(request.filter);
  where.addEventMatch(request.filter);
  if (request.targetIds.empty()) where.add("0");  // no live target: nothing to replay
  else where.add("d.target_id IN (" + storage::placeholders(request.targetIds.size()) + ")",
                 request.targetIds);
  const std::string from = "FROM deliveries d JOIN events e ON e.id = d.event_id WHERE " +
                           where.joined();
  const std::string now = formatTime(clock_.now());

  MutexLock lock(dbMutex_);
  try {
    ReplayOutcome out;
    if (request.dryRun) {
      SQLite::Statement count(*db_, "SELECT COUNT(*) " + from);
      where.bind(count);
      count.executeStep();
      out.count = count.getColumn(0).getInt64();
      return out;
    }
    SQLite::Transaction txn(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // Oldest events first, so a replay delivers in the order they arrived.
    SQLite::Statement select(*db_, "SELECT d.id, d.event_id, d.target_id, d.attempts " + from +
                                       " ORDER BY e.received_at, d.created_at, d.rowid");
    where.bind(select);
    while (select.executeStep()) {
      UnfinishedDelivery d;
      d.id = select.getColumn(0).getString();
      d.eventId = select.getColumn(1).getString();
      d.targetId = select.getColumn(2).getString();
      d.status = DeliveryStatus::kPending;
      d.attempts = select.getColumn(3).getInt();
      d.seriesStart = d.attempts;
      out.reset.push_back(std::move(d));
    }
    SQLite::Statement update(*db_, kRestartSeries);
    for (const UnfinishedDelivery& d : out.reset) {
      update.bind(1, now);
      update.bind(2, d.id);
      update.exec();
      update.reset();
    }
    txn.commit();
    out.count = static_cast<int64_t>(out.reset.size());
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("replay", e);
  }
}

}  // namespace webhooker
