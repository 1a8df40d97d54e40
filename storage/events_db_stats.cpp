// EventsDb: statistics for the admin API and the console — counts by status,
// each target's latest failure and hour-by-hour activity. Read-only.
#include <algorithm>
#include <map>

#include "base/time_format.h"
#include "storage/events_db.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

// "2026-11-29T17" of a stored time: the hour it falls in.
constexpr size_t kHourPrefix = 13;

void addCount(DeliveryCounts& counts, DeliveryStatus status, int64_t n) {
  switch (status) {
    case DeliveryStatus::kPending: counts.pending += n; break;
    case DeliveryStatus::kRetrying: counts.retrying += n; break;
    case DeliveryStatus::kDelivered: counts.delivered += n; break;
    case DeliveryStatus::kFailed: counts.failed += n; break;
  }
}

// Counts per hour prefix, for the rows of `sql` (hour prefix, count) at or
// after `since`.
std::map<std::string, int64_t> countByHour(SQLite::Database& db, const char* sql,
                                           const std::string& since) {
  SQLite::Statement q(db, sql);
  q.bind(1, since);
  std::map<std::string, int64_t> out;
  while (q.executeStep()) out[q.getColumn(0).getString()] = q.getColumn(1).getInt64();
  return out;
}

// The entry of `targetId` among the targets counted, or null (a target with
// no delivery).
TargetActivity* activityOf(WebhookStats& stats, const std::string& targetId) {
  const auto it = std::find_if(stats.targets.begin(), stats.targets.end(),
                               [&](const TargetActivity& t) { return t.targetId == targetId; });
  return it == stats.targets.end() ? nullptr : &*it;
}

// The first of the `hours` hours up to `now`'s.
TimePoint firstHourOf(TimePoint now, int hours) {
  return std::chrono::floor<std::chrono::hours>(now) - std::chrono::hours(std::max(hours, 1) - 1);
}

// The `hours` hours up to `now`'s, oldest first, with the counts found per
// hour prefix.
std::vector<HourlyCount> hourly(TimePoint now, int hours,
                                const std::map<std::string, int64_t>& received,
                                const std::map<std::string, int64_t>& failed) {
  std::vector<HourlyCount> out;
  const auto currentHour = std::chrono::floor<std::chrono::hours>(now);
  for (TimePoint h = firstHourOf(now, hours); h <= currentHour; h += std::chrono::hours(1)) {
    HourlyCount count{formatTime(h), 0, 0};
    const std::string key = count.hour.substr(0, kHourPrefix);
    if (auto it = received.find(key); it != received.end()) count.received = it->second;
    if (auto it = failed.find(key); it != failed.end()) count.failed = it->second;
    out.push_back(std::move(count));
  }
  return out;
}

// What stats() answers, read on `db` (throws what SQLite throws).
WebhookStats readStats(SQLite::Database& db, TimePoint now, int hours) {
  const std::string since = formatTime(firstHourOf(now, hours));
  WebhookStats stats;
  stats.events = db.execAndGet("SELECT COUNT(*) FROM events").getInt64();

  // deliveries_by_status covers this: no table rows are read.
  SQLite::Statement counts(db,
                           "SELECT target_id, status, COUNT(*) FROM deliveries "
                           "GROUP BY target_id, status ORDER BY target_id");
  while (counts.executeStep()) {
    const std::string targetId = counts.getColumn(0).getString();
    if (stats.targets.empty() || stats.targets.back().targetId != targetId)
      stats.targets.push_back(TargetActivity{targetId, {}, {}, {}, {}});
    const DeliveryStatus status = storage::statusColumn(counts.getColumn(1));
    const int64_t n = counts.getColumn(2).getInt64();
    addCount(stats.targets.back().deliveries, status, n);
    addCount(stats.deliveries, status, n);
  }

  // The newest failed attempt per target: the highest result id, as
  // results are only ever appended.
  SQLite::Statement failures(
      db,
      "SELECT d.target_id, d.id, d.event_id, r.created_at, r.status_code, r.error "
      "FROM delivery_results r JOIN deliveries d ON d.id = r.delivery_id "
      "WHERE r.id IN (SELECT MAX(r2.id) FROM delivery_results r2 "
      "JOIN deliveries d2 ON d2.id = r2.delivery_id WHERE r2.success = 0 GROUP BY d2.target_id)");
  while (failures.executeStep()) {
    TargetActivity* t = activityOf(stats, failures.getColumn(0).getString());
    if (!t) continue;
    LastFailure f;
    f.deliveryId = failures.getColumn(1).getString();
    f.eventId = failures.getColumn(2).getString();
    f.at = failures.getColumn(3).getString();
    if (!failures.getColumn(4).isNull()) f.statusCode = failures.getColumn(4).getInt();
    if (!failures.getColumn(5).isNull()) f.error = failures.getColumn(5).getString();
    t->lastFailure = std::move(f);
  }

  // Each target's oldest waiting delivery (deliveries_waiting_by_target).
  SQLite::Statement oldest(
      db,
      "SELECT target_id, id, event_id, status, attempts, next_attempt_at FROM "
      "(SELECT target_id, id, event_id, status, attempts, next_attempt_at, ROW_NUMBER() "
      "OVER (PARTITION BY target_id ORDER BY created_at, rowid) AS n FROM deliveries "
      "WHERE status IN ('pending', 'retrying')) WHERE n = 1");
  while (oldest.executeStep()) {
    TargetActivity* t = activityOf(stats, oldest.getColumn(0).getString());
    if (!t) continue;
    OldestWaiting w;
    w.deliveryId = oldest.getColumn(1).getString();
    w.eventId = oldest.getColumn(2).getString();
    w.status = storage::statusColumn(oldest.getColumn(3));
    w.attempts = oldest.getColumn(4).getInt();
    if (!oldest.getColumn(5).isNull()) w.nextAttemptAt = oldest.getColumn(5).getString();
    t->oldestWaiting = std::move(w);
  }
  SQLite::Statement due(
      db,
      "SELECT target_id, MIN(created_at) FROM deliveries "
      "WHERE status IN ('pending', 'retrying') "
      "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) GROUP BY target_id");
  due.bind(1, formatTime(now));
  while (due.executeStep()) {
    TargetActivity* t = activityOf(stats, due.getColumn(0).getString());
    const auto createdAt = parseTime(due.getColumn(1).getString());
    if (t && createdAt)
      t->oldestDueAgeSeconds = std::chrono::duration<double>(now - *createdAt).count();
  }

  const auto received = countByHour(
      db,
      "SELECT substr(received_at, 1, 13), COUNT(*) FROM events WHERE received_at >= ? "
      "GROUP BY 1",
      since);
  // A failed delivery was last updated when it failed.
  const auto failed = countByHour(db,
                                  "SELECT substr(updated_at, 1, 13), COUNT(*) FROM deliveries "
                                  "WHERE status = 'failed' AND updated_at >= ? GROUP BY 1",
                                  since);
  stats.hours = hourly(now, hours, received, failed);
  return stats;
}

}  // namespace

Result<WebhookStats> EventsDb::stats(int hours) {
  auto snapshot = openSnapshot();
  if (!snapshot) return snapshot.error();
  try {
    return readStats(*snapshot.value(), clock_.now(), hours);
  } catch (const std::exception& e) {
    return storage::storageError("read statistics", e);
  }
}

std::optional<WebhookStats> EventsDb::statsOfFileAlone(const std::filesystem::path& file,
                                                       TimePoint now, int hours) {
  const auto db = openCurrentAlone(file);
  if (!db) return std::nullopt;
  try {
    return readStats(*db, now, hours);
  } catch (const std::exception&) {
    return std::nullopt;  // read again otherwise, which reports what is wrong
  }
}

WebhookStats EventsDb::statsOfNoEvents(TimePoint now, int hours) {
  WebhookStats stats;
  stats.hours = hourly(now, hours, {}, {});
  return stats;
}

}  // namespace webhooker
