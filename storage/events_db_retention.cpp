// EventsDb: the retention pass's side — pruning, masking, giving space back.
#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/time_format.h"
#include "storage/body_masking.h"
#include "storage/events_db.h"
#include "storage/sqlite_database.h"
#include "storage/statement_cache.h"

namespace webhooker {

namespace {

// Small enough that an ingest waiting for the lock is held up for a few
// milliseconds only (secure_delete makes deleting cost a write of zeros).
constexpr int kPruneBatch = 500;
constexpr int kMaskBatch = 200;
constexpr size_t kMaskBatchBytes = 8 * 1024 * 1024;

constexpr const char* kHasUnfinishedDelivery =
    "EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id "
    "AND d.status IN ('pending', 'retrying'))";

// Events received before this are past a `retentionDays` window.
std::string retentionCutoff(TimePoint now, int retentionDays) {
  return formatTime(now - std::chrono::days(retentionDays));
}

// Where a scan through events, oldest first, has got to.
struct ScanPosition {
  std::string receivedAt;
  int64_t rowid = 0;
};

struct BatchResult {
  int64_t deleted = 0;
  bool exhausted = false;  // nothing left to look at
};

// Whether an event is older than the window or the events outnumber the cap.
constexpr const char* kMayNeedPruning =
    "SELECT EXISTS (SELECT 1 FROM events WHERE received_at < ?1) "
    "OR (SELECT COUNT(*) FROM events) > ?2";

bool mayNeedPruningOn(SQLite::Statement& q, const std::string& cutoff, int64_t maxEvents) {
  q.bind(1, cutoff);
  q.bind(2, maxEvents);
  q.executeStep();
  return q.getColumn(0).getInt() != 0;
}

// One transaction: looks at the next kPruneBatch events after `from` (only
// those received before `before`, when given) and deletes up to `budget` of
// them that have no unfinished delivery; cascades take their deliveries and
// results. Moves `from` past what it looked at.
BatchResult deleteFinishedBatch(SQLite::Database& db, const std::optional<std::string>& before,
                                int64_t budget, ScanPosition& from) {
  SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
  // The range on received_at keeps the scan on events_by_received_at.
  SQLite::Statement scan(
      db, fmt::format("SELECT e.rowid, e.received_at, {} FROM events e "
                      "WHERE e.received_at >= ?1 AND (e.received_at > ?1 OR e.rowid > ?2) {} "
                      "ORDER BY e.received_at, e.rowid LIMIT ?4",
                      kHasUnfinishedDelivery, before ? "AND e.received_at < ?3" : ""));
  scan.bind(1, from.receivedAt);
  scan.bind(2, from.rowid);
  if (before) scan.bind(3, *before);
  scan.bind(4, kPruneBatch);
  struct Row {
    int64_t rowid;
    std::string receivedAt;
    bool unfinished;
  };
  std::vector<Row> rows;
  while (scan.executeStep())
    rows.push_back({scan.getColumn(0).getInt64(), scan.getColumn(1).getString(),
                    scan.getColumn(2).getInt() != 0});
  scan.reset();  // deleting while the scan is open would be undefined

  BatchResult out;
  out.exhausted = rows.size() < static_cast<size_t>(kPruneBatch);
  SQLite::Statement remove(db, "DELETE FROM events WHERE rowid = ?");
  for (const Row& row : rows) {
    if (out.deleted >= budget) {
      out.exhausted = false;
      break;
    }
    from.receivedAt = row.receivedAt;
    from.rowid = row.rowid;
    if (row.unfinished) continue;
    remove.bind(1, row.rowid);
    remove.exec();
    remove.reset();
    ++out.deleted;
  }
  txn.commit();
  return out;
}

}  // namespace

Result<EventsDb::PruneCount> EventsDb::pruneEvents(int retentionDays, int64_t maxEvents) {
  const std::string cutoff = retentionCutoff(clock_.now(), retentionDays);
  PruneCount count;
  try {
    // Asked first, with a read: the deletes' write transaction would take
    // the file's write lock (holding up its commits) and parse their
    // statements for nothing (~140 us of CPU a file, once a pass).
    {
      MutexLock lock(dbMutex_);
      if (!mayNeedPruningOn(*statements_->get(kMayNeedPruning), cutoff, maxEvents)) return count;
    }
    // The lock is taken per batch so ingest and deliveries get in between.
    ScanPosition expired;
    for (bool more = true; more;) {
      MutexLock lock(dbMutex_);
      const BatchResult batch =
          deleteFinishedBatch(*db_, cutoff, std::numeric_limits<int64_t>::max(), expired);
      count.expired += batch.deleted;
      more = !batch.exhausted;
    }

    int64_t excess = 0;
    {
      MutexLock lock(dbMutex_);
      excess = db_->execAndGet("SELECT COUNT(*) FROM events").getInt64() - maxEvents;
    }
    ScanPosition oldest;
    while (excess > 0) {
      MutexLock lock(dbMutex_);
      const BatchResult batch = deleteFinishedBatch(*db_, std::nullopt, excess, oldest);
      count.overCap += batch.deleted;
      excess -= batch.deleted;
      if (batch.exhausted) break;
    }
    return count;
  } catch (const std::exception& e) {
    return storage::storageError("prune events", e);
  }
}

std::optional<bool> EventsDb::mayNeedPruningAlone(const std::filesystem::path& file, TimePoint now,
                                                  int retentionDays, int64_t maxEvents) {
  const auto db = openCurrentAlone(file);
  if (!db) return std::nullopt;
  try {
    SQLite::Statement q(*db, kMayNeedPruning);
    return mayNeedPruningOn(q, retentionCutoff(now, retentionDays), maxEvents);
  } catch (const std::exception&) {
    return std::nullopt;  // open() reads it again, and reports what is wrong
  }
}

Result<EventsDb::MaskCount> EventsDb::maskFinishedEvents(const std::vector<std::string>& pointers) {
  std::vector<JsonPointer> parsed;
  for (const std::string& text : pointers) {
    auto p = parseJsonPointer(text);
    if (!p) return makeError(error_code::kInvalidConfig, fmt::format("\"{}\" is not a JSON pointer", text));
    parsed.push_back(std::move(*p));
  }
  MaskCount count;
  try {
    int64_t after = 0;  // rowid: events left unmasked in this pass are not looked at again
    int64_t last = 0;   // events arriving during the pass wait for the next one
    {
      MutexLock lock(dbMutex_);
      last = db_->execAndGet("SELECT COALESCE(MAX(rowid), 0) FROM events").getInt64();
    }
    for (bool more = true; more;) {
      MutexLock lock(dbMutex_);
      SQLite::Transaction txn(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement scan(*db_, fmt::format("SELECT e.rowid, e.body FROM events e "
                                               "WHERE e.masked IS NULL AND e.rowid > ? "
                                               "AND e.rowid <= ? AND NOT {} "
                                               "ORDER BY e.rowid LIMIT ?",
                                               kHasUnfinishedDelivery));
      scan.bind(1, after);
      scan.bind(2, last);
      scan.bind(3, kMaskBatch);
      std::vector<std::pair<int64_t, std::string>> rows;
      size_t bytes = 0;
      more = false;
      while (scan.executeStep()) {
        const SQLite::Column body = scan.getColumn(1);
        rows.emplace_back(scan.getColumn(0).getInt64(),
                          std::string(static_cast<const char*>(body.getBlob()),
                                      static_cast<size_t>(body.getBytes())));
        bytes += rows.back().second.size();
        // Bounded by bytes too: a batch of 1 MiB bodies is parsed under the lock.
        more = rows.size() == static_cast<size_t>(kMaskBatch) || bytes >= kMaskBatchBytes;
        if (bytes >= kMaskBatchBytes) break;
      }
      scan.reset();

      SQLite::Statement setFlag(*db_, "UPDATE events SET masked = ? WHERE rowid = ?");
      SQLite::Statement setBody(*db_,
                                "UPDATE events SET body = ?, body_size = ?, masked = 1 "
                                "WHERE rowid = ?");
      for (const auto& [rowid, body] : rows) {
        after = rowid;
        const MaskedBody m = maskJsonBody(body, parsed);
        if (m.changed) {
          setBody.bind(1, m.body.data(), static_cast<int>(m.body.size()));
          setBody.bind(2, static_cast<int64_t>(m.body.size()));
          setBody.bind(3, rowid);
          setBody.exec();
          setBody.reset();
          ++count.masked;
        } else {
          setFlag.bind(1, m.json ? 1 : 0);
          setFlag.bind(2, rowid);
          setFlag.exec();
          setFlag.reset();
          ++(m.json ? count.unchanged : count.notJson);
        }
      }
      txn.commit();
    }
    return count;
  } catch (const std::exception& e) {
    return storage::storageError("mask events", e);
  }
}

Result<void> EventsDb::resetMasking() {
  MutexLock lock(dbMutex_);
  try {
    db_->exec("UPDATE events SET masked = NULL WHERE masked = 1");
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("reset masking", e);
  }
}

Result<bool> EventsDb::reclaimSpace() {
  {
    MutexLock lock(dbMutex_);
    try {
      db_->exec("PRAGMA incremental_vacuum");
    } catch (const std::exception& e) {
      return storage::storageError("reclaim space", e);
    }
  }
  return checkpointWal(Wait::kForOthers);
}

}  // namespace webhooker
