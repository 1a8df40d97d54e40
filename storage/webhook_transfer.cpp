#include "storage/webhook_transfer.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

// A piece's delivery replaces the copy's when it is a later state of the
// same row. Times have millisecond precision, and a delivery can be
// ingested and delivered within one millisecond: at an equal time, the row
// with more attempts is later, and at equal attempts a final status is
// later than a waiting one (nothing moves a delivery back to waiting while
// its webhook moves: writes to it are refused).
constexpr const char* kLaterDeliveryState =
    "(excluded.updated_at, excluded.attempts, excluded.status IN ('delivered', 'failed')) > "
    "(deliveries.updated_at, deliveries.attempts, deliveries.status IN ('delivered', 'failed'))";

// A file in `scratch` that is removed when this goes.
class ScratchFile {
 public:
  explicit ScratchFile(const std::filesystem::path& scratch) {
    std::random_device random;
    path_ = scratch / ("transfer-" + std::to_string(random()) + std::to_string(::getpid()) + ".db");
  }
  ~ScratchFile() {
    std::error_code ec;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  // Makes the file with `bytes` in it (none: an empty SQLite file).
  Result<void> write(const std::string& bytes) const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return makeError(error_code::kStorageError, "cannot write " + path_.string());
    const bool written =
        ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    if (!written) return makeError(error_code::kStorageError, "cannot write " + path_.string());
    return {};
  }

 private:
  std::filesystem::path path_;
};

std::string joined(const std::vector<std::string>& columns, const std::string& prefix = "") {
  std::string out;
  for (const std::string& c : columns) out += (out.empty() ? "" : ", ") + prefix + c;
  return out;
}

// `piece` attached to `db` as "piece" while this lives: a connection that
// outlives the merge (the pool's) must not keep a scratch file attached.
class Attached {
 public:
  Attached(SQLite::Database& db, const std::filesystem::path& piece) : db_(db) {
    SQLite::Statement attach(db, "ATTACH DATABASE ? AS piece");
    attach.bind(1, piece.string());
    attach.exec();
  }
  ~Attached() { db_.tryExec("DETACH DATABASE piece"); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  SQLite::Database& db_;
};

// `file` opened for a read that never makes it: null when it does not
// exist. Read-write all the same: a file attached to it (the piece) is
// opened with its flags.
std::unique_ptr<SQLite::Database> openIfExists(const std::filesystem::path& file,
                                               int busyTimeoutMs) {
  try {
    return std::make_unique<SQLite::Database>(file.string(), SQLite::OPEN_READWRITE, busyTimeoutMs);
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_CANTOPEN && !std::filesystem::exists(file)) return nullptr;
    throw;
  }
}

Result<std::string> readFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return makeError(error_code::kStorageError, "cannot read " + file.string());
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

Result<TransferPiece> readTransferPiece(const std::filesystem::path& eventsDb,
                                        const std::filesystem::path& scratch,
                                        const TransferCursor& cursor, size_t bodyBudget,
                                        const DbOptions& options, const std::string& now) {
  ScratchFile piece(scratch);
  // Made here: the source is opened without OPEN_CREATE, and so is the
  // file attached to it.
  if (auto made = piece.write(""); !made) return made.error();
  // A webhook with no event has no file yet (nor has one deleted since the
  // caller looked): its piece is read from a new, empty events DB in
  // `scratch`, so that reading it makes none.
  std::optional<ScratchFile> empty;
  TransferPiece out;
  try {
    std::unique_ptr<SQLite::Database> source = openIfExists(eventsDb, options.busyTimeoutMs);
    if (!source) {
      empty.emplace(scratch);
      auto made = EventsDb::openFile(empty->path(), options);
      if (!made) return made.error();
      source = std::move(made.value());
    }
    SQLite::Database& db = *source;
    const Attached attached(db, piece.path());
    // One read of the source: everything below is of the same moment.
    SQLite::Transaction snapshot(db);
    const int version = storage::schemaVersion(db);
    db.exec("CREATE TABLE piece.events AS SELECT rowid AS source_rowid, * FROM main.events WHERE 0");
    db.exec("CREATE TABLE piece.deliveries AS SELECT rowid AS source_rowid, * FROM main.deliveries "
            "WHERE 0");
    db.exec("CREATE TABLE piece.delivery_results AS SELECT * FROM main.delivery_results WHERE 0");
    // Events in rowid order until the budget of bodies is spent.
    SQLite::Statement events(db, "SELECT rowid, body_size FROM main.events WHERE rowid > ? "
                                 "ORDER BY rowid");
    events.bind(1, cursor.afterEvent);
    int64_t last = cursor.afterEvent;
    size_t bytes = 0;
    while (events.executeStep()) {
      if (last != cursor.afterEvent && bytes >= bodyBudget) {
        out.more = true;
        break;
      }
      last = events.getColumn(0).getInt64();
      bytes += static_cast<size_t>(events.getColumn(1).getInt64());
    }
    events.reset();
    SQLite::Statement copyEvents(db, "INSERT INTO piece.events SELECT rowid, * FROM main.events "
                                     "WHERE rowid > ? AND rowid <= ?");
    copyEvents.bind(1, cursor.afterEvent);
    copyEvents.bind(2, last);
    copyEvents.exec();
    // Deliveries of later events come with their events, in a later piece.
    SQLite::Statement copyDeliveries(
        db, "INSERT INTO piece.deliveries SELECT rowid, * FROM main.deliveries "
            "WHERE event_id IN (SELECT id FROM piece.events) OR (updated_at >= ?1 AND event_id "
            "IN (SELECT id FROM main.events WHERE rowid <= ?2))");
    if (cursor.changedSince) copyDeliveries.bind(1, *cursor.changedSince);
    copyDeliveries.bind(2, last);
    copyDeliveries.exec();  // ?1 unbound: NULL, which no time is at or after
    db.exec("INSERT INTO piece.delivery_results SELECT * FROM main.delivery_results "
            "WHERE delivery_id IN (SELECT id FROM piece.deliveries)");
    db.exec("CREATE TABLE piece.transfer (schema_version INTEGER NOT NULL)");
    db.exec("INSERT INTO piece.transfer VALUES (" + std::to_string(version) + ")");
    snapshot.commit();
    out.lastEvent = last;
  } catch (const std::exception& e) {
    return storage::storageError("read a transfer piece", e);
  }
  auto bytes = readFile(piece.path());
  if (!bytes) return bytes.error();
  out.bytes = std::move(bytes.value());
  out.sourceTime = now;
  return out;
}

namespace {

// Writes `bytes` to `piece`, checked to be a piece before any events DB is
// opened: a body that is none creates nothing.
Result<void> writePiece(const ScratchFile& piece, const std::string& bytes) {
  if (auto written = piece.write(bytes); !written) return written.error();
  const auto invalid = [] {
    return makeError(error_code::kInvalidTransfer, "the body is not a piece of an events database");
  };
  try {
    SQLite::Database check(piece.path().string(), SQLite::OPEN_READONLY);
    if (check.execAndGet("SELECT count(*) FROM sqlite_master WHERE name IN "
                         "('events', 'deliveries', 'delivery_results', 'transfer')")
            .getInt() != 4)
      return invalid();
  } catch (const std::exception&) {
    return invalid();
  }
  return {};
}

// Merges the written `piece` into `db` in one transaction.
Result<void> mergePiece(SQLite::Database& db, const std::filesystem::path& piece,
                        DeliveryMerge deliveryMerge) {
  try {
    const Attached attached(db, piece);
    if (db.execAndGet("SELECT schema_version FROM piece.transfer").getInt() !=
        storage::schemaVersion(db))
      return makeError(error_code::kSchemaMismatch,
                       "the source's events database has another schema version: run the same "
                       "webhooker version on both nodes");
    SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
    const auto events = storage::tableColumns(db, "events");
    db.exec("INSERT OR IGNORE INTO main.events (" + joined(events) + ") SELECT " + joined(events) +
            " FROM piece.events ORDER BY source_rowid");
    const auto deliveries = storage::tableColumns(db, "deliveries");
    std::string updates;
    for (const std::string& c : deliveries)
      if (c != "id") updates += (updates.empty() ? "" : ", ") + c + " = excluded." + c;
    const std::string onConflict =
        deliveryMerge == DeliveryMerge::kNewerWins
            ? " ON CONFLICT(id) DO UPDATE SET " + updates + " WHERE " + kLaterDeliveryState
            : " ON CONFLICT(id) DO NOTHING";
    db.exec("INSERT INTO main.deliveries (" + joined(deliveries) + ") SELECT " + joined(deliveries) +
            " FROM piece.deliveries WHERE true ORDER BY source_rowid" + onConflict);
    const auto results = storage::tableColumns(db, "delivery_results");
    db.exec("INSERT OR IGNORE INTO main.delivery_results (" + joined(results) + ") SELECT " +
            joined(results) + " FROM piece.delivery_results ORDER BY id");
    txn.commit();
  } catch (const std::exception& e) {
    return storage::storageError("merge a transfer piece", e);
  }
  return {};
}

}  // namespace

Result<void> EventsDb::mergeTransferPiece(const std::filesystem::path& piece,
                                          DeliveryMerge deliveries) {
  MutexLock lock(dbMutex_);
  return mergePiece(*db_, piece, deliveries);
}

Result<void> mergeTransferPiece(const std::filesystem::path& eventsDb,
                                const std::filesystem::path& scratch, const std::string& bytes,
                                DeliveryMerge deliveries, const DbOptions& options) {
  ScratchFile piece(scratch);
  if (auto written = writePiece(piece, bytes); !written) return written.error();
  auto opened = EventsDb::openFile(eventsDb, options);
  if (!opened) return opened.error();
  return mergePiece(*opened.value(), piece.path(), deliveries);
}

Result<void> mergeTransferPiece(EventsDbPool& pool, const std::string& webhookId,
                                const std::string& bytes, DeliveryMerge deliveries) {
  ScratchFile piece(pool.pathFor(webhookId).parent_path());
  if (auto written = writePiece(piece, bytes); !written) return written.error();
  auto db = pool.get(webhookId);
  if (!db) return db.error();
  return db.value()->mergeTransferPiece(piece.path(), deliveries);
}

Result<void> adoptIncoming(const std::filesystem::path& incoming,
                           const std::filesystem::path& eventsDb, const DbOptions& options) {
  {
    auto opened = EventsDb::openFile(incoming, options);
    if (!opened) return opened.error();
    try {
      opened.value()->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch (const std::exception& e) {
      return storage::storageError("write back a copied events database", e);
    }
  }
  // SQLite would read a WAL left under the new name (a crash between a
  // removal's deletes) as this file's: its frames carry no file identity.
  if (auto deleted = storage::deleteDatabaseFiles(eventsDb, {"-wal", "-shm"}); !deleted)
    return deleted.error();
  std::error_code ec;
  std::filesystem::rename(incoming, eventsDb, ec);
  if (ec)
    return makeError(error_code::kStorageError, "cannot rename " + incoming.string() + ": " +
                                                    ec.message());
  for (const char* suffix : {"-wal", "-shm"})
    std::filesystem::remove(incoming.string() + suffix, ec);
  return {};
}

}  // namespace webhooker
