#include "storage/events_db.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <array>
#include <map>
#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/group_commit.h"
#include "storage/sqlite_database.h"
#include "storage/statement_cache.h"

namespace webhooker {

namespace {

// Page cache of each connection, KiB. SQLite's default (2 MB) fills with
// what the writer wrote: 512 MB over 1,000 open files. The writer keeps the
// right-hand path of each b-tree it appends to; a reader's pages go stale
// with the next commit anyway. Dirty pages beyond it spill to the WAL
// (cache_spill, on by default).
constexpr int kWriterCacheKiB = 64;
constexpr int kReaderCacheKiB = 32;

// Pages of a new events DB. A commit of one event (a quiet webhook's, the
// many-tenant node's usual) appends a WAL frame for every page it touches:
// the row's leaf and overflow, a leaf of each index, the interior page,
// page 1 and the pointer map. At 4 KB that is 33 KB of WAL for a 7 KB body;
// at 2 KB, 21 KB. A busy file's groups share their pages either way (9 KB
// an event). See docs/decisions.md.
constexpr int kPageSize = 2048;

}  // namespace

EventsDb::EventsDb(std::unique_ptr<SQLite::Database> db, const std::filesystem::path& file,
                   const DbOptions& options, const Clock& clock)
    : clock_(clock),
      file_(file),
      options_(options),
      db_(std::move(db)),
      statements_(std::make_unique<storage::StatementCache>(*db_)),
      writes_(std::make_unique<storage::GroupCommit>(
          *db_, dbMutex_, *statements_, options.sync, storage::GroupCommit::kLinger,
          storage::CommitThreads::shared(), file.filename().string())) {}

EventsDb::~EventsDb() = default;

Result<std::shared_ptr<EventsDb>> EventsDb::open(const std::filesystem::path& file,
                                                 const DbOptions& options, const Clock& clock) {
  auto db = openFile(file, options);
  if (!db) return db.error();
  if (auto sized = limitCache(*db.value(), kWriterCacheKiB); !sized) return sized.error();
  return std::shared_ptr<EventsDb>(new EventsDb(std::move(db.value()), file, options, clock));
}

Result<std::unique_ptr<SQLite::Database>> EventsDb::openFile(const std::filesystem::path& file,
                                                             const DbOptions& options) {
  DbOptions made = options;
  made.pageSize = kPageSize;
  return storage::openDatabase(file, made, eventsMigrations());
}

Result<void> EventsDb::applyJournal(const std::filesystem::path& file, const DbOptions& options,
                                    const std::vector<storage::CommitJournal::Record>& records) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  auto db = openFile(file, options);
  if (!db) return db.error();
  return storage::CommitJournal::applyJournal(*db.value(), records);
}

namespace {

// The bytes of a new, empty events DB of this binary's schema (in WAL mode,
// its WAL empty), made once per process by SQLite in a scratch file in
// `dir` (openDatabase's fresh path writes the whole schema into the file
// itself). Copying them costs one file, one write and one flush where
// making each file with SQLite cost ~3.6 ms of CPU (parsing the schema,
// two journal files made and deleted).
struct FreshFile {
  Mutex mutex;
  std::optional<std::string> bytes GUARDED_BY(mutex);
};

Result<std::string> freshFileBytes(const std::filesystem::path& dir, const DbOptions& options) {
  static FreshFile* const fresh = new FreshFile;  // never destroyed: used until exit
  MutexLock lock(fresh->mutex);
  if (fresh->bytes) return *fresh->bytes;
  const std::filesystem::path scratch = dir / (".events-template-" + newUuid() + ".tmp");
  const auto removeScratch = [&] {
    (void)storage::deleteDatabaseFiles(scratch, {"", "-wal", "-shm", "-journal"});
  };
  {
    auto db = EventsDb::openFile(scratch, options);
    if (!db) {
      removeScratch();
      return db.error();
    }
  }
  std::ifstream in(scratch, std::ios::binary);
  std::string read((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool whole = in.good() || in.eof();
  removeScratch();
  if (!whole || read.size() < 100)
    return makeError(error_code::kStorageError, "storage create failed: the new file cannot be read");
  fresh->bytes = std::move(read);
  return *fresh->bytes;
}

Error fileError(const std::filesystem::path& file, const char* what, int err) {
  return makeError(err == ENOSPC ? error_code::kStorageUnavailable : error_code::kStorageError,
                   fmt::format("storage create failed: {} {}: {}", what, file.string(),
                               std::strerror(err)));
}

}  // namespace

Result<void> EventsDb::create(const std::filesystem::path& file, const DbOptions& options) {
  auto bytes = freshFileBytes(file.parent_path(), options);
  if (!bytes) return bytes.error();
  // Written whole and flushed under another name, then linked in: a crash
  // at any point leaves `file` missing or whole, never torn. O_TRUNC: the
  // leftover of a crash before the link is written again.
  const std::filesystem::path writing = file.string() + kWritingSuffix;
  const int fd = ::open(writing.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fileError(file, "creating", errno);
  int err = 0;
  for (size_t done = 0; done < bytes->size() && err == 0;) {
    const ssize_t n = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  // The one flush: the bytes are on disk before the name points at them.
  // The name itself is flushed with the folder by the first flush of the
  // file's new WAL (SQLite flushes the folder of a WAL it opens to create),
  // before any write to the file is acknowledged.
  if (err == 0 && ::fdatasync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  // link(), unlike rename(), keeps a file already there (made meanwhile by
  // another program): that one is opened instead.
  if (err == 0 && ::link(writing.c_str(), file.c_str()) != 0 && errno != EEXIST) err = errno;
  std::error_code ignored;
  std::filesystem::remove(writing, ignored);
  if (err != 0) return fileError(file, "writing", err);
  return {};
}

int EventsDb::schemaVersion() {
  MutexLock lock(dbMutex_);
  return storage::schemaVersion(*db_);
}

Result<bool> EventsDb::checkpointWal(Wait wait) {
  MutexLock lock(dbMutex_);
  return storage::checkpointWal(*db_, options_, wait == Wait::kForOthers);
}

std::uintmax_t EventsDb::walBytes() const {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file_.string() + "-wal", ec);
  return ec ? 0 : size;
}

namespace {

// The ingest write: the idempotency check, the event and its deliveries.
// Runs inside the group's transaction, after the writes queued before it, so
// an earlier event of the same group with the same key is seen here. Fills
// `out`; its inputs must live until the write has run.
Result<void> writeIngest(storage::StatementCache& sql, const InboundEvent& event,
                         const std::vector<std::string>& targetIds, const std::string& headers,
                         const std::string& windowStart, const std::string& receivedAt,
                         IngestOutcome& out) {
  out = IngestOutcome{};
  out.receivedAt = receivedAt;
  if (event.idempotencyKey) {
    auto seen = sql.get(
        "SELECT id, received_at FROM events WHERE idempotency_key = ? AND received_at >= ? "
        "ORDER BY received_at LIMIT 1");
    seen->bind(1, *event.idempotencyKey);
    seen->bind(2, windowStart);
    if (seen->executeStep()) {
      out.eventId = seen->getColumn(0).getString();
      out.receivedAt = seen->getColumn(1).getString();
      out.duplicate = true;
      auto deliveries =
          sql.get("SELECT id, target_id FROM deliveries WHERE event_id = ? ORDER BY rowid");
      deliveries->bind(1, out.eventId);
      while (deliveries->executeStep())
        out.deliveries.push_back({deliveries->getColumn(0).getString(),
                                  deliveries->getColumn(1).getString()});
      return {};  // nothing written
    }
  }

  out.eventId = newTimeOrderedUuid();
  auto insert = sql.get(
      "INSERT INTO events (id, entrypoint_id, method, path, query, headers, content_type, body, "
      "body_size, remote_addr, idempotency_key, received_at, event_type) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert->bind(1, out.eventId);
  insert->bind(2, event.entrypointId);
  insert->bind(3, event.method);
  insert->bind(4, event.path);
  insert->bind(5, event.query);
  insert->bindNoCopy(6, headers);
  insert->bind(7, event.contentType);
  insert->bindNoCopy(8, event.body.data(), static_cast<int>(event.body.size()));
  insert->bind(9, static_cast<int64_t>(event.body.size()));
  insert->bind(10, event.remoteAddr);
  if (event.idempotencyKey) insert->bind(11, *event.idempotencyKey);
  insert->bind(12, out.receivedAt);
  if (event.eventType) insert->bind(13, *event.eventType);
  insert->exec();

  auto delivery = sql.get(
      "INSERT INTO deliveries (id, event_id, target_id, status, attempts, created_at, "
      "updated_at) VALUES (?, ?, ?, 'pending', 0, ?, ?)");
  for (const std::string& targetId : targetIds) {
    StoredDelivery d{newTimeOrderedUuid(), targetId};
    delivery->bind(1, d.id);
    delivery->bind(2, out.eventId);
    delivery->bind(3, d.targetId);
    delivery->bind(4, out.receivedAt);
    delivery->bind(5, out.receivedAt);
    delivery->exec();
    delivery->reset();
    out.deliveries.push_back(std::move(d));
  }
  return {};
}

// The headers column: a JSON array of [name, value] pairs. Header values are
// whatever the sender put there; never fail on bad UTF-8.
std::string headersJson(const HeaderList& list) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [name, value] : list) pairs.push_back({name, value});
  return pairs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Result<IngestOutcome> EventsDb::ingest(const InboundEvent& event,
                                       const std::vector<std::string>& targetIds,
                                       std::chrono::milliseconds idempotencyWindow) {
  const TimePoint now = clock_.now();
  const std::string windowStart = formatTime(now - idempotencyWindow);
  const std::string receivedAt = formatTime(now);
  const std::string headers = headersJson(event.headers);
  IngestOutcome out;
  const auto write = [&](storage::StatementCache& sql) {
    return writeIngest(sql, event, targetIds, headers, windowStart, receivedAt, out);
  };
  if (auto written = writes_->run("ingest", write, event.body.size()); !written)
    return written.error();
  return out;
}

void EventsDb::ingestAsync(InboundEvent event, std::vector<std::string> targetIds,
                           std::chrono::milliseconds idempotencyWindow, IngestDone then) {
  // What the write and its callback share; the Work and the Done each hold it.
  struct Pending {
    InboundEvent event;
    std::vector<std::string> targetIds;
    std::string headers, windowStart, receivedAt;
    IngestOutcome out;
    IngestDone then;
  };
  const TimePoint now = clock_.now();
  auto pending = std::make_shared<Pending>();
  pending->headers = headersJson(event.headers);
  pending->event = std::move(event);
  pending->targetIds = std::move(targetIds);
  pending->windowStart = formatTime(now - idempotencyWindow);
  pending->receivedAt = formatTime(now);
  pending->then = std::move(then);
  const size_t bytes = pending->event.body.size();
  writes_->submit(
      "ingest",
      [pending](storage::StatementCache& sql) {
        return writeIngest(sql, pending->event, pending->targetIds, pending->headers,
                           pending->windowStart, pending->receivedAt, pending->out);
      },
      [pending](Result<void> written) {
        if (!written) return pending->then(written.error(), pending->event);
        pending->then(std::move(pending->out), pending->event);
      },
      bytes);
}

}  // namespace webhooker

namespace webhooker {

namespace {

std::optional<TimePoint> timeColumn(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return parseTime(c.getString());
}

// The write of one attempt: its delivery_results row and the delivery's new
// state. Owns its inputs, so it may run after its caller has gone on.
storage::GroupCommit::Work attemptWrite(AttemptRecord a, std::string now) {
  return [a = std::move(a), now = std::move(now)](storage::StatementCache& sql) -> Result<void> {
    auto update = sql.get(
        "UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, "
        "last_status_code = COALESCE(?, last_status_code), failure_reason = ?, updated_at = ? "
        "WHERE id = ? AND attempts = ?");
    update->bind(1, storage::statusText(a.newStatus));
    update->bind(2, a.attempt);
    if (a.nextAttemptAt) update->bind(3, formatTime(*a.nextAttemptAt));
    if (a.statusCode) update->bind(4, *a.statusCode);
    if (a.failureReason) update->bind(5, failureReasonWord(*a.failureReason));
    update->bind(6, now);
    update->bind(7, a.deliveryId);
    update->bind(8, a.attempt - 1);
    if (update->exec() == 0) {
      auto exists = sql.get("SELECT attempts FROM deliveries WHERE id = ?");
      exists->bind(1, a.deliveryId);
      if (!exists->executeStep())
        return makeError(error_code::kNotFound, "delivery " + a.deliveryId + " is gone");
      // Attempt numbers follow each other: a second copy of an attempt (two
      // tasks for one delivery) must not record it twice.
      return makeError(error_code::kConflict, "delivery " + a.deliveryId + " has " +
                                       std::to_string(exists->getColumn(0).getInt()) +
                                       " attempts recorded; attempt " +
                                       std::to_string(a.attempt) + " does not follow");
    }

    auto result = sql.get(
        "INSERT INTO delivery_results (delivery_id, attempt, status_code, response_body, error, "
        "duration_ms, success, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    result->bind(1, a.deliveryId);
    result->bind(2, a.attempt);
    if (a.statusCode) result->bind(3, *a.statusCode);
    result->bindNoCopy(4, a.responseBody);
    if (!a.error.empty()) result->bindNoCopy(5, a.error);
    result->bind(6, a.durationMs);
    result->bind(7, a.success ? 1 : 0);
    result->bind(8, now);
    result->exec();
    return {};
  };
}

}  // namespace

Result<void> EventsDb::recordAttempt(const AttemptRecord& attempt) {
  return writes_->run("record attempt", attemptWrite(attempt, formatTime(clock_.now())));
}

void EventsDb::recordAttemptAsync(AttemptRecord attempt, std::function<void(Result<void>)> then) {
  const size_t bytes = attempt.responseBody.size();
  // Buffered: losing a result to a power cut only sends its delivery again
  // (at least once), and a flush per result would bound deliveries per
  // second by the disk, per events DB.
  writes_->submit("record attempt", attemptWrite(std::move(attempt), formatTime(clock_.now())),
                  std::move(then), bytes, storage::Durability::kBuffered);
}

size_t EventsDb::writesWaiting() const { return writes_->waiting(); }

Result<void> EventsDb::failWithoutAttempt(const std::string& deliveryId, FailureReason reason) {
  const std::string now = formatTime(clock_.now());
  return writes_->run("fail delivery", [&](storage::StatementCache& sql) -> Result<void> {
    auto q = sql.get(
        "UPDATE deliveries SET status = 'failed', failure_reason = ?, next_attempt_at = NULL, "
        "updated_at = ? WHERE id = ?");
    q->bind(1, failureReasonWord(reason));
    q->bind(2, now);
    q->bind(3, deliveryId);
    if (q->exec() == 0) return makeError(error_code::kNotFound, "delivery " + deliveryId + " is gone");
    return {};
  });
}

Result<void> EventsDb::deferDelivery(const std::string& deliveryId, TimePoint nextAttemptAt) {
  const std::string now = formatTime(clock_.now());
  return writes_->run("defer delivery", [&](storage::StatementCache& sql) -> Result<void> {
    auto q = sql.get("UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE id = ?");
    q->bind(1, formatTime(nextAttemptAt));
    q->bind(2, now);
    q->bind(3, deliveryId);
    if (q->exec() == 0) return makeError(error_code::kNotFound, "delivery " + deliveryId + " is gone");
    return {};
  });
}

Result<void> EventsDb::limitCache(SQLite::Database& db, int kib) {
  try {
    db.exec("PRAGMA cache_size = -" + std::to_string(kib));
    return {};
  } catch (const std::exception& e) {
    return storage::storageError("size the page cache", e);
  }
}

Result<std::unique_ptr<SQLite::Database>> EventsDb::openSnapshot() const {
  auto reader = storage::openReader(file_, options_);
  if (!reader) return reader.error();
  if (auto sized = limitCache(*reader.value(), kReaderCacheKiB); !sized) return sized.error();
  try {
    reader.value()->exec("BEGIN");
  } catch (const std::exception& e) {
    return storage::storageError("begin a read", e);
  }
  return reader;
}

Result<void> EventsDb::openIfClosed(ReadConnection& connection) const {
  if (connection.db) return {};
  auto opened = storage::openReader(file_, options_);
  if (!opened) return opened.error();
  if (auto sized = limitCache(*opened.value(), kReaderCacheKiB); !sized) return sized.error();
  connection.db = std::move(opened.value());
  connection.statements = std::make_unique<storage::StatementCache>(*connection.db);
  return {};
}

namespace {

// The row loadPayload() forwards, read with `sql`'s connection; the headers
// as stored (JSON), parsed outside the connection's lock.
Result<void> readPayloadRow(storage::StatementCache& sql, const std::string& eventId,
                            EventPayload& p, std::string& headersText) {
  auto q = sql.get(
      "SELECT method, headers, content_type, body, received_at, event_type FROM events "
      "WHERE id = ?");
  q->bind(1, eventId);
  if (!q->executeStep()) return makeError(error_code::kNotFound, "event " + eventId + " is gone");
  p.method = q->getColumn(0).getString();
  headersText = q->getColumn(1).getString();
  p.contentType = q->getColumn(2).getString();
  const SQLite::Column body = q->getColumn(3);
  p.body.assign(static_cast<const char*>(body.getBlob()), static_cast<size_t>(body.getBytes()));
  p.receivedAt = q->getColumn(4).getString();
  if (!q->getColumn(5).isNull()) p.eventType = q->getColumn(5).getString();
  return {};
}

}  // namespace

Result<EventPayload> EventsDb::loadPayload(const std::string& eventId) {
  EventPayload p;
  std::string headersText;
  {
    // Every worker of this webhook reads here: only the row's copy is done
    // under the lock. A file without a reader open yet is read on the
    // writing connection unless a long commit runs on it (one that flushes,
    // or a busy file's large group; a commit queued meanwhile waits for one
    // row's copy, and a read waits for a small group of buffered results): a
    // quiet webhook's deliveries need no second connection, whose open and
    // schema read cost more than its reads. Once a read would have waited
    // for a long commit, the reader is opened and every later read goes there.
    MutexLock lock(readMutex_);
    try {
      Result<void> read;
      if (!reader_.db && !writes_->committingLong()) {
        MutexLock writer(dbMutex_);
        read = readPayloadRow(*statements_, eventId, p, headersText);
      } else {
        if (auto opened = openIfClosed(reader_); !opened) return opened.error();
        read = readPayloadRow(*reader_.statements, eventId, p, headersText);
      }
      if (!read) return read.error();
    } catch (const std::exception& e) {
      return storage::storageError("load payload", e);
    }
  }
  const auto headers = nlohmann::json::parse(headersText, nullptr, false);
  if (headers.is_array())
    for (const auto& pair : headers)
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string())
        p.headers.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  return p;
}

namespace {

// Whether any delivery waits (deliveries_by_status).
constexpr const char* kAnyWaiting =
    "SELECT 1 FROM deliveries WHERE status IN ('pending', 'retrying') LIMIT 1";

// Counts the waiting deliveries a chunk at a time, then finds each
// target's oldest due one. With a large backlog the whole count takes
// hundreds of ms, and an open DB's count holds its scan connection, so a
// refill of a lane waits for one chunk at most. Over several chunks
// the count is not one snapshot: a delivery that changes state between two
// of them may be counted twice or missed. It is a gauge, read again the
// next pass; a backlog within one chunk is counted exactly.
//
// The count reads deliveries_by_status alone (status, target_id, rowid):
// no row of the table. Only the search for the oldest due delivery reads
// rows (its next attempt time), in created_at order from the oldest, and
// it stops at the first due one: usually the first it reads. A target
// whose deliveries all wait for a later time (a receiver down) is read
// whole, a chunk at a time.
class BacklogScan {
 public:
  // ?1 status; the rest of the current target's rows (?2, after rowid ?3),
  // then the targets after it, in one merge.
  static constexpr const char* kCountChunk =
      "SELECT target_id, rowid FROM deliveries WHERE status = ?1 AND target_id = ?2 AND rowid > ?3 "
      "UNION ALL "
      "SELECT target_id, rowid FROM deliveries WHERE status = ?1 AND target_id > ?2 "
      "ORDER BY 1, 2 LIMIT ?4";
  // ?1 target, ?2 now (which decides what is due), after (?3 created_at,
  // ?4 rowid); deliveries_waiting_by_target gives the order.
  static constexpr const char* kOldestDueChunk =
      "SELECT created_at, rowid, status, next_attempt_at IS NULL OR next_attempt_at <= ?2 "
      "FROM deliveries WHERE target_id = ?1 AND status IN ('pending', 'retrying') "
      "AND (created_at, rowid) > (?3, ?4) ORDER BY created_at, rowid LIMIT ?5";

  explicit BacklogScan(TimePoint now) : now_(formatTime(now)) {}

  // Reads the next chunk; false once everything is read.
  bool readChunk(SQLite::Statement& countChunk, SQLite::Statement& oldestDueChunk) {
    if (statusIndex_ < kWaiting.size()) return readCounts(countChunk) || !groups_.empty();
    return readOldestDue(oldestDueChunk);
  }

  std::vector<EventsDb::BacklogCount> counts() const {
    std::vector<EventsDb::BacklogCount> out;
    out.reserve(groups_.size());
    for (const Group& g : groups_) {
      out.push_back({g.targetId, g.status, g.count, std::nullopt});
      if (!g.oldestDue.empty()) out.back().oldestDueCreatedAt = parseTime(g.oldestDue);
    }
    return out;
  }

 private:
  struct Group {
    std::string targetId;
    DeliveryStatus status;
    int64_t count = 0;
    std::string oldestDue;  // created_at of the target's oldest due one; empty: not this group
  };

  // False once both statuses are counted.
  bool readCounts(SQLite::Statement& q) {
    const DeliveryStatus status = kWaiting[statusIndex_];
    q.bind(1, std::string(statusWord(status)));
    q.bind(2, afterTarget_);
    q.bind(3, afterRowid_);
    q.bind(4, kChunkRows);
    int rows = 0;
    while (q.executeStep()) {
      ++rows;
      const char* target = q.getColumn(0).getText();
      if (groups_.empty() || groups_.back().status != status || groups_.back().targetId != target)
        groups_.push_back({target, status, 0, {}});
      ++groups_.back().count;
      afterRowid_ = q.getColumn(1).getInt64();
    }
    q.reset();
    if (rows > 0) afterTarget_ = groups_.back().targetId;
    if (rows == kChunkRows) return true;
    afterTarget_.clear();
    afterRowid_ = 0;
    if (++statusIndex_ < kWaiting.size()) return true;
    for (const Group& g : groups_) targets_.push_back(g.targetId);
    std::sort(targets_.begin(), targets_.end());
    targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
    return false;
  }

  // False once every target's oldest due delivery is found (or it has none).
  bool readOldestDue(SQLite::Statement& q) {
    if (targetIndex_ == targets_.size()) return false;
    const std::string& target = targets_[targetIndex_];
    q.bind(1, target);
    q.bind(2, now_);
    q.bind(3, afterCreated_);
    q.bind(4, afterCreatedRowid_);
    q.bind(5, kChunkRows);
    int rows = 0;
    bool found = false;
    while (!found && q.executeStep()) {
      ++rows;
      afterCreated_ = q.getColumn(0).getString();
      afterCreatedRowid_ = q.getColumn(1).getInt64();
      if (q.getColumn(3).getInt() == 0) continue;
      found = true;
      const auto status = parseDeliveryStatus(q.getColumn(2).getText());
      for (Group& g : groups_)
        if (g.targetId == target && g.status == status) g.oldestDue = afterCreated_;
    }
    q.reset();
    if (!found && rows == kChunkRows) return true;
    afterCreated_.clear();
    afterCreatedRowid_ = 0;
    return ++targetIndex_ < targets_.size();
  }

  static constexpr int kChunkRows = 1000;
  static constexpr std::array kWaiting = {DeliveryStatus::kPending, DeliveryStatus::kRetrying};

  const std::string now_;
  size_t statusIndex_ = 0;
  std::string afterTarget_;  // where the next count chunk starts (exclusive)
  int64_t afterRowid_ = 0;
  std::vector<Group> groups_;
  std::vector<std::string> targets_;  // every target with a group, once
  size_t targetIndex_ = 0;            // whose oldest due one is searched
  std::string afterCreated_;          // where the next search chunk starts (exclusive)
  int64_t afterCreatedRowid_ = 0;
};

}  // namespace

Result<bool> EventsDb::nothingWaitsUnscanned() {
  {
    MutexLock lock(scanMutex_);
    if (scanner_.db) return false;
  }
  MutexLock lock(dbMutex_);
  try {
    return !statements_->get(kAnyWaiting)->executeStep();
  } catch (const std::exception& e) {
    return storage::storageError("look for waiting deliveries", e);
  }
}

Result<std::vector<EventsDb::BacklogCount>> EventsDb::backlogByTarget() {
  auto quiet = nothingWaitsUnscanned();
  if (!quiet) return quiet.error();
  if (quiet.value()) return std::vector<BacklogCount>();
  BacklogScan scan(clock_.now());
  try {
    for (bool more = true; more;) {
      MutexLock lock(scanMutex_);
      if (auto opened = openIfClosed(scanner_); !opened) return opened.error();
      more = scan.readChunk(*scanner_.statements->get(BacklogScan::kCountChunk),
                            *scanner_.statements->get(BacklogScan::kOldestDueChunk));
      if (!more) sqlite3_db_release_memory(scanner_.db->getHandle());
    }
    return scan.counts();
  } catch (const std::exception& e) {
    return storage::storageError("count backlog", e);
  }
}

Result<std::vector<EventsDb::BacklogCount>> EventsDb::backlogOnWriter() {
  BacklogScan scan(clock_.now());
  MutexLock lock(dbMutex_);
  try {
    // The connection closes next, with what it prepared: a file with nothing
    // waiting (most of a node's many quiet ones) is told by one small
    // statement rather than by the scan's two (~6 against ~50 µs to prepare).
    if (!statements_->get(kAnyWaiting)->executeStep()) return std::vector<BacklogCount>();
    auto countChunk = statements_->get(BacklogScan::kCountChunk);
    auto oldestDueChunk = statements_->get(BacklogScan::kOldestDueChunk);
    for (bool more = true; more;) more = scan.readChunk(*countChunk, *oldestDueChunk);
    return scan.counts();
  } catch (const std::exception& e) {
    return storage::storageError("count backlog", e);
  }
}

Result<std::vector<EventsDb::BacklogCount>> EventsDb::backlogOfFile(
    const std::filesystem::path& file, TimePoint now) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return makeError(error_code::kNotFound, file.string() + " does not exist");
  try {
    SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
    SQLite::Statement countChunk(db, BacklogScan::kCountChunk);
    SQLite::Statement oldestDueChunk(db, BacklogScan::kOldestDueChunk);
    BacklogScan scan(now);
    for (bool more = true; more;) more = scan.readChunk(countChunk, oldestDueChunk);
    return scan.counts();
  } catch (const std::exception& e) {
    return storage::storageError("count backlog", e);
  }
}

std::optional<std::vector<EventsDb::BacklogCount>> EventsDb::backlogOfFileAlone(
    const std::filesystem::path& file, TimePoint now) {
  const auto db = openCurrentAlone(file);
  if (!db) return std::nullopt;
  try {
    SQLite::Statement countChunk(*db, BacklogScan::kCountChunk);
    SQLite::Statement oldestDueChunk(*db, BacklogScan::kOldestDueChunk);
    BacklogScan scan(now);
    for (bool more = true; more;) more = scan.readChunk(countChunk, oldestDueChunk);
    return scan.counts();
  } catch (const std::exception&) {
    return std::nullopt;  // read again otherwise, which reports what is wrong
  }
}

Result<std::optional<std::string>> EventsDb::nextWaitingTarget(const std::string& after) {
  auto quiet = nothingWaitsUnscanned();
  if (!quiet) return quiet.error();
  if (quiet.value()) return std::optional<std::string>();
  MutexLock lock(scanMutex_);
  try {
    if (auto opened = openIfClosed(scanner_); !opened) return opened.error();
    auto q = scanner_.statements->get(
        "SELECT target_id FROM deliveries WHERE status IN ('pending', 'retrying') "
        "AND target_id > ? ORDER BY target_id LIMIT 1");
    q->bind(1, after);
    if (!q->executeStep()) return std::optional<std::string>();
    return std::optional<std::string>(q->getColumn(0).getString());
  } catch (const std::exception& e) {
    return storage::storageError("next waiting target", e);
  }
}

namespace {

// Counts deliveries as readUnfinished reads them, oldest first, the way
// BacklogScan counts them: per target and status, with each target's
// oldest due delivery (of either status) on the group of its status.
class BacklogOfRows {
 public:
  explicit BacklogOfRows(TimePoint now) : now_(now) {}

  void add(const UnfinishedDelivery& d, const char* createdAt) {
    auto target = targets_.find(d.targetId);  // a key is copied once per target, not per row
    if (target == targets_.end()) target = targets_.emplace(d.targetId, Target{}).first;
    EventsDb::BacklogCount& group =
        d.status == DeliveryStatus::kPending ? target->second.pending : target->second.retrying;
    ++group.count;
    const bool due = !d.nextAttemptAt || *d.nextAttemptAt <= now_;
    if (due && !target->second.dueFound) {
      target->second.dueFound = true;
      group.oldestDueCreatedAt = parseTime(createdAt);
    }
  }

  std::vector<EventsDb::BacklogCount> counts() const {
    std::vector<EventsDb::BacklogCount> out;
    for (const auto& [id, target] : targets_) {
      for (EventsDb::BacklogCount group : {target.pending, target.retrying}) {
        if (group.count == 0) continue;
        group.targetId = id;
        out.push_back(std::move(group));
      }
    }
    return out;
  }

 private:
  struct Target {
    EventsDb::BacklogCount pending{{}, DeliveryStatus::kPending, 0, std::nullopt};
    EventsDb::BacklogCount retrying{{}, DeliveryStatus::kRetrying, 0, std::nullopt};
    bool dueFound = false;  // its oldest due delivery is set on one of the two
  };

  const TimePoint now_;
  std::map<std::string, Target> targets_;
};

// unfinishedDeliveries() on `db`; counted into `backlog` too if given.
// Throws SQLite::Exception.
std::vector<UnfinishedDelivery> readUnfinished(SQLite::Database& db, const std::string* targetId,
                                               std::optional<int> limit, DeliveryPosition* cursor,
                                               BacklogOfRows* backlog = nullptr) {
  SQLite::Statement q(
      db, std::string("SELECT id, event_id, target_id, status, attempts, next_attempt_at, "
                      "series_start, CASE status WHEN 'retrying' THEN "
                      "(SELECT created_at FROM delivery_results r WHERE r.delivery_id = d.id "
                      "ORDER BY attempt DESC, r.id DESC LIMIT 1) END, created_at, d.rowid "
                      "FROM deliveries d WHERE status IN ('pending', 'retrying') ") +
              (targetId ? "AND target_id = ?1 " : "") +
              (cursor ? "AND (created_at, d.rowid) > (?3, ?4) " : "") +
              "ORDER BY created_at, d.rowid" + (limit ? " LIMIT ?2" : ""));
  if (targetId) q.bind(1, *targetId);
  if (limit) q.bind(2, *limit);
  if (cursor) {
    q.bind(3, cursor->createdAt);
    q.bind(4, cursor->rowid);
  }
  std::vector<UnfinishedDelivery> out;
  while (q.executeStep()) {
    UnfinishedDelivery d;
    d.id = q.getColumn(0).getString();
    d.eventId = q.getColumn(1).getString();
    d.targetId = q.getColumn(2).getString();
    d.status = storage::statusColumn(q.getColumn(3));
    d.attempts = q.getColumn(4).getInt();
    d.nextAttemptAt = timeColumn(q.getColumn(5));
    d.seriesStart = q.getColumn(6).getInt();
    d.lastAttemptAt = timeColumn(q.getColumn(7));
    if (backlog) backlog->add(d, q.getColumn(8).getText());
    out.push_back(std::move(d));
    if (cursor) {
      cursor->createdAt.assign(q.getColumn(8).getText());
      cursor->rowid = q.getColumn(9).getInt64();
    }
  }
  return out;
}

}  // namespace

Result<std::vector<UnfinishedDelivery>> EventsDb::unfinishedDeliveries(
    const std::string* targetId, std::optional<int> limit, DeliveryPosition* cursor) {
  MutexLock lock(scanMutex_);
  try {
    if (auto opened = openIfClosed(scanner_); !opened) return opened.error();
    auto out = readUnfinished(*scanner_.db, targetId, limit, cursor);
    // With every webhook's DB open at once (see EventsDbPool) cached pages
    // add up: a recovery of 100,000 retrying over 1,000 webhooks peaked at
    // about 210 MB with them cached, 130-155 MB without.
    sqlite3_db_release_memory(scanner_.db->getHandle());
    return out;
  } catch (const std::exception& e) {
    return storage::storageError("unfinished deliveries", e);
  }
}

std::unique_ptr<SQLite::Database> EventsDb::openCurrentAlone(const std::filesystem::path& file) {
  auto db = storage::openAlone(file);  // fails on a missing file: it never creates one
  if (!db) return nullptr;
  try {
    // An older file is migrated by open() first; a newer one refused there.
    if (!storage::atSchemaVersion(*db.value(), eventsMigrations().back().version)) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  return std::move(db.value());
}

std::optional<EventsDb::UnfinishedOfFile> EventsDb::unfinishedOfFileAlone(
    const std::filesystem::path& file, TimePoint now, std::optional<int> mostRows) {
  const auto db = openCurrentAlone(file);
  if (!db) return std::nullopt;
  try {
    BacklogOfRows backlog(now);
    auto rows = readUnfinished(*db, nullptr, mostRows ? std::optional(*mostRows + 1) : std::nullopt,
                               nullptr, &backlog);
    if (mostRows && rows.size() > static_cast<size_t>(*mostRows)) return std::nullopt;
    return UnfinishedOfFile{std::move(rows), backlog.counts()};
  } catch (const std::exception&) {
    return std::nullopt;  // open() reads it again, and reports what is wrong
  }
}

std::optional<std::vector<EventsDb::WaitingTarget>> EventsDb::waitingTargetsOfFileAlone(
    const std::filesystem::path& file, TimePoint now, int mostRows) {
  const auto db = openCurrentAlone(file);
  if (!db) return std::nullopt;
  try {
    SQLite::Statement q(*db,
                        "SELECT target_id, MAX(due), COUNT(*) FROM ("
                        "SELECT target_id, next_attempt_at IS NULL OR next_attempt_at <= ?1 AS due "
                        "FROM deliveries WHERE status IN ('pending', 'retrying') LIMIT ?2) "
                        "GROUP BY target_id");
    q.bind(1, formatTime(now));
    q.bind(2, mostRows + 1);
    std::vector<WaitingTarget> targets;
    int64_t rows = 0;
    while (q.executeStep()) {
      targets.push_back({q.getColumn(0).getString(), q.getColumn(1).getInt() != 0});
      rows += q.getColumn(2).getInt64();
    }
    if (rows > mostRows) return std::nullopt;
    return targets;
  } catch (const std::exception&) {
    return std::nullopt;  // open() reads it again, and reports what is wrong
  }
}

}  // namespace webhooker
