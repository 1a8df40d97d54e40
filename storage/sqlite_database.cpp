#include "storage/sqlite_database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <optional>
#include <stdexcept>

#include "base/clock.h"
#include "base/time_format.h"
#include "storage/read_alone_vfs.h"
#include "storage/wal_append_vfs.h"

namespace webhooker::storage {

namespace {

// The first connection of the process to a file in WAL mode finds the
// file's WAL index (-shm) as the last one left it, possibly stale (a crash,
// a WAL since emptied), and SQLite's unix VFS resets it: it truncates the
// -shm to 3 bytes, then writes a byte into each 4 KiB page of the size it
// maps, so ext4 frees the file's blocks and allocates them again (8 pages
// for one 32 KiB map). A file the pool reopens goes through that on every
// reopen: ~50 of ~175 µs of CPU for the open and first read of a one-table
// file (perf: the truncate 9%, the writes 18%). The truncate is replaced
// here, for -shm files only, by writing zeros over the whole file, which is
// the content SQLite's truncate and writes leave (zero pages of the size it
// maps; a zero header makes the connection rebuild the index from the WAL),
// without giving back and taking again the blocks. Everything else about
// the reset, the lock under which it runs included, stays SQLite's.
sqlite3_syscall_ptr realFtruncate = nullptr;  // set once, before the replacements
sqlite3_syscall_ptr realOpen = nullptr;
std::atomic<uint64_t> shmResetsInPlace{0};

// The descriptor of the -shm this thread's last SQLite open opened, or -1
// if that open was of another file. SQLite resets a -shm right after
// opening it, on the same thread, with no open in between: a truncate of
// that descriptor is the reset. (Asking the kernel for the descriptor's
// name, a readlink of /proc/self/fd, cost ~4.6 µs a reopen.)
thread_local int lastShmOpened = -1;

int openNotingShm(const char* path, int flags, int mode) {
  const int fd = reinterpret_cast<int (*)(const char*, int, int)>(realOpen)(path, flags, mode);
  lastShmOpened = fd >= 0 && std::string_view(path).ends_with("-shm") ? fd : -1;
  return fd;
}

bool isShmFile(int fd) {
  if (fd < 0 || fd != lastShmOpened) return false;
  lastShmOpened = -1;  // one reset per open
  return true;
}

// Zeroes the first `size` bytes of `fd`; false if a write failed.
bool zeroFile(int fd, off_t size) {
  static const std::array<char, 32768> kZeros{};
  for (off_t done = 0; done < size;) {
    const size_t chunk = static_cast<size_t>(std::min<off_t>(size - done, kZeros.size()));
    const ssize_t n = ::pwrite(fd, kZeros.data(), chunk, done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += n;
  }
  return true;
}

// SQLite truncates a file to 3 bytes only to reset a -shm (its "deadman
// switch" reset in unixLockSharedMemory): database, WAL and journal sizes
// are whole pages or a journal_size_limit. Anything else, and a -shm
// smaller than one map (32 KiB) or not a whole number of maps, is
// truncated as SQLite asked.
int resetShmInPlace(int fd, off_t length) {
  if (length == 3) {
    struct stat st {};
    constexpr off_t kMap = 32768;
    if (::fstat(fd, &st) == 0 && st.st_size >= kMap && st.st_size % kMap == 0 && isShmFile(fd) &&
        zeroFile(fd, st.st_size)) {
      shmResetsInPlace.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
  }
  return reinterpret_cast<int (*)(int, off_t)>(realFtruncate)(fd, length);
}

// Replaces the unix VFS's open (noting -shm files) and ftruncate (shared by
// all its variants, so by the read-alone VFS too) with openNotingShm and
// resetShmInPlace. After the library's configuration: finding the VFS
// initialises SQLite.
bool resetShmInPlaceFromNowOn() {
  sqlite3_vfs* unix = sqlite3_vfs_find("unix");
  if (!unix || unix->iVersion < 3 || !unix->xGetSystemCall || !unix->xSetSystemCall) return false;
  realOpen = unix->xGetSystemCall(unix, "open");
  realFtruncate = unix->xGetSystemCall(unix, "ftruncate");
  if (!realOpen || !realFtruncate) return false;
  if (unix->xSetSystemCall(unix, "open", reinterpret_cast<sqlite3_syscall_ptr>(&openNotingShm)) !=
      SQLITE_OK)
    return false;
  return unix->xSetSystemCall(unix, "ftruncate",
                              reinterpret_cast<sqlite3_syscall_ptr>(&resetShmInPlace)) == SQLITE_OK;
}

// Before the library's first use: without memory statistics (which nothing
// reads) an allocation takes no process-wide mutex, and every thread that
// runs SQL allocates. Too late if something opened SQLite first; that only
// leaves the statistics on.
//
// No bulk page-cache allocation per connection: by default each connection
// mallocs room for 20 pages (87 KiB) on its first read and keeps it until it
// closes, whatever its cache_size: 85 of the 157 MB SQLite held with 1,000
// busy events DBs open (heaptrack). Pages are allocated one by one instead,
// as a connection uses them, up to its cache_size.
//
// And -shm files are reset in place (resetShmInPlace), once SQLite is set up.
void configureLibraryOnce() {
  static const bool configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK &&
                                 sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0) == SQLITE_OK;
  static const bool shmInPlace = resetShmInPlaceFromNowOn();
  (void)configured;
  (void)shmInPlace;
}

// Lookaside (SQLite's per-connection arena for small allocations) of 16 KiB
// rather than the default 120 KiB: with thousands of connections open the
// default is most of their memory. Before the connection's first statement.
void shrinkLookaside(SQLite::Database& db) {
  sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_LOOKASIDE, nullptr, 256, 64);
}

// Whether this SQLite zeroes freed space unless told otherwise
// (SQLITE_SECURE_DELETE): then a connection needs no PRAGMA for it.
bool secureDeleteByDefault() {
  static const bool compiledIn = sqlite3_compileoption_used("SECURE_DELETE") == 1;
  return compiledIn;
}

// A new file (no table yet) is made whole with no flush but one: its schema
// is written in one rollback-journal transaction and the switch to WAL in
// another, both under synchronous=OFF (no journal or folder flushes), and
// then the file alone is flushed. Before that flush a power cut leaves an
// empty or torn file that no committed row names yet (creators write the
// row naming it afterwards, EventsDbPool::create); after it the file is
// whole. Its WAL does not exist yet: the connection that writes the first
// flushed commit creates it, and SQLite flushes the folder with a new WAL's
// first flush, so the WAL's name is as durable as its first commit.
// A file whose schema a power cut tore off the WAL (already in WAL mode,
// no table) is made again the same way, its migration in the WAL.
void makeFreshFileDurable(SQLite::Database& db) {
  sqlite3_file* file = nullptr;
  const int found = sqlite3_file_control(db.getHandle(), "main", SQLITE_FCNTL_FILE_POINTER, &file);
  if (found != SQLITE_OK || !file || !file->pMethods)
    throw std::runtime_error("the new file cannot be flushed: no file handle");
  if (const int rc = file->pMethods->xSync(file, SQLITE_SYNC_NORMAL); rc != SQLITE_OK)
    throw SQLite::Exception(std::string("flushing the new file failed: ") + sqlite3_errstr(rc), rc);
}

}  // namespace

int schemaVersion(SQLite::Database& db) {
  if (!db.tableExists("schema_migrations")) return 0;
  return db.execAndGet("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").getInt();
}

int headerVersion(SQLite::Database& db) {
  return db.execAndGet("PRAGMA user_version").getInt();
}

bool atSchemaVersion(SQLite::Database& db, int version) {
  return headerVersion(db) == version || schemaVersion(db) == version;
}

std::vector<std::string> tableColumns(SQLite::Database& db, const std::string& table) {
  std::vector<std::string> out;
  SQLite::Statement q(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid");
  q.bind(1, table);
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

Result<int> migrate(SQLite::Database& db, std::span<const Migration> migrations) {
  try {
    const int current = schemaVersion(db);
    const int known = migrations.empty() ? 0 : migrations.back().version;
    if (current > known) {
      return makeError(error_code::kSchemaTooNew,
                       fmt::format("{} has schema version {}, but this webhooker knows only up to "
                                   "{}; upgrade webhooker or restore a matching backup",
                                   db.getFilename(), current, known));
    }
    if (current == known) return 0;
    // A new file is made in one transaction: one disk flush, and a crash
    // leaves it empty (the next open makes it again), never half made. An
    // existing file moves one migration per transaction.
    const bool fresh = current == 0;
    std::optional<SQLite::Transaction> whole;
    if (fresh) whole.emplace(db);
    db.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    int applied = 0;
    for (const Migration& m : migrations) {
      if (m.version <= current) continue;
      std::optional<SQLite::Transaction> one;
      if (!fresh) one.emplace(db);
      db.exec(std::string(m.sql));
      SQLite::Statement record(db,
                               "INSERT INTO schema_migrations (version, name, applied_at) "
                               "VALUES (?, ?, ?)");
      record.bind(1, m.version);
      record.bind(2, std::string(m.name));
      record.bind(3, formatTime(SystemClock().now()));
      record.exec();
      db.exec("PRAGMA user_version = " + std::to_string(m.version));
      if (one) one->commit();
      ++applied;
    }
    if (whole) whole->commit();
    return applied;
  } catch (const std::exception& e) {
    return storageError("migrate", e);
  }
}

Result<std::unique_ptr<SQLite::Database>> openDatabase(const std::filesystem::path& file,
                                                       const DbOptions& options,
                                                       std::span<const Migration> migrations,
                                                       int* versionBefore) {
  configureLibraryOnce();
  try {
    const char* vfs = walAppendVfs();
    auto db = std::make_unique<SQLite::Database>(
        file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX,
        options.busyTimeoutMs, vfs ? vfs : "");
    shrinkLookaside(*db);
    // SQLite quietly opens a file it may not write (an immutable file, a
    // read-only mount) read-only. Such a handle would refuse every write
    // even after the cause is gone, and a pool would keep it: refuse it, so
    // the next open tries again.
    if (sqlite3_db_readonly(db->getHandle(), "main") == 1)
      return makeError(error_code::kStorageReadonly,
                       fmt::format("{} cannot be opened for writing", file.string()));
    // A file whose header says the binary's version is whole (the version
    // is written in its schema's transaction): no count of its tables.
    const int known = migrations.empty() ? 0 : migrations.back().version;
    const bool current = known > 0 && headerVersion(*db) == known;
    // auto_vacuum and page_size only take effect before the first table
    // exists, so they are set on a new file only: on an existing one they
    // would be a write, and a file refused as too new must not be written to.
    const bool fresh =
        !current && db->execAndGet("SELECT COUNT(*) FROM sqlite_master").getInt() == 0;
    if (fresh) {
      // A new file is written without a flush (see makeFreshFileDurable).
      // Before auto_vacuum, or SQLite's first commit still flushes as FULL.
      db->exec("PRAGMA synchronous = OFF");
      if (options.pageSize > 0) db->exec("PRAGMA page_size = " + std::to_string(options.pageSize));
      db->exec("PRAGMA auto_vacuum = INCREMENTAL");
      const int version = schemaVersion(*db);
      if (versionBefore) *versionBefore = version;
      if (auto applied = migrate(*db, migrations); !applied) return applied.error();
    }
    db->exec("PRAGMA journal_mode = WAL");
    if (fresh) {
      makeFreshFileDurable(*db);
      // Opens the WAL now, as an existing file's open does: SQLite makes
      // no WAL for a file since unlinked, and a holder of a removed DB
      // (EventsDbPool::remove) goes on writing to it.
      db->execAndGet("SELECT COUNT(*) FROM sqlite_master");
    }
    // The last connection to close would checkpoint the WAL into the file,
    // with its disk flushes, on whichever thread let go of it last. The WAL
    // is as durable as the file; it is checkpointed while the DB is open
    // (every 1,000 pages), by retention, and by EventsDbPool's closer thread
    // before it closes a DB.
    sqlite3_db_config(db->getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    // Set without a statement: a pool reopens files for nearly every event.
    sqlite3_db_config(db->getHandle(), SQLITE_DBCONFIG_ENABLE_FKEY, 1, nullptr);
    // Freed space is overwritten with zeros, so a masked or deleted body
    // does not linger in free pages (user data; see docs/decisions.md).
    // Some builds default to it (then no statement is needed); others do not.
    if (!secureDeleteByDefault()) db->exec("PRAGMA secure_delete = ON");
    // A file whose header says the binary's version needs no migration and
    // no query of schema_migrations (about a tenth of what a reopen costs).
    if (current) {
      if (versionBefore) *versionBefore = known;
    } else if (!fresh) {
      const int version = schemaVersion(*db);
      if (versionBefore) *versionBefore = version;
      if (auto applied = migrate(*db, migrations); !applied) return applied.error();
    }
    db->exec(options.sync == SyncMode::kFull ? "PRAGMA synchronous = FULL"
                                             : "PRAGMA synchronous = NORMAL");
    return db;
  } catch (const std::exception& e) {
    return storageError("open", e);
  }
}

uint64_t shmResetsInPlaceSoFar() { return shmResetsInPlace.load(std::memory_order_relaxed); }

Result<bool> checkpointWal(SQLite::Database& db, const DbOptions& options, bool waitForOthers) {
  sqlite3* handle = db.getHandle();
  if (!waitForOthers) sqlite3_busy_timeout(handle, 0);
  int logFrames = 0, checkpointed = 0;
  const int rc = sqlite3_wal_checkpoint_v2(handle, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &logFrames,
                                           &checkpointed);
  if (!waitForOthers) sqlite3_busy_timeout(handle, options.busyTimeoutMs);
  if (rc == SQLITE_BUSY) return false;
  if (rc != SQLITE_OK)
    return makeError(error_code::kStorageError,
                     std::string("storage checkpoint failed: ") + sqlite3_errstr(rc));
  return true;
}

Result<void> deleteDatabaseFiles(const std::filesystem::path& file,
                                 std::initializer_list<std::string_view> suffixes) {
  for (std::string_view suffix : suffixes) {
    std::filesystem::path named = file;
    named += suffix;
    std::error_code ec;
    std::filesystem::remove(named, ec);
    if (ec)
      return makeError(error_code::kStorageError,
                       fmt::format("could not delete {}: {}", named.string(), ec.message()));
  }
  return {};
}

Result<std::unique_ptr<SQLite::Database>> openReader(const std::filesystem::path& file,
                                                     const DbOptions& options) {
  configureLibraryOnce();
  try {
    auto db = std::make_unique<SQLite::Database>(
        file.string(), SQLite::OPEN_READONLY | SQLite::OPEN_FULLMUTEX, options.busyTimeoutMs);
    shrinkLookaside(*db);
    return db;
  } catch (const std::exception& e) {
    return storageError("open reader", e);
  }
}

Result<std::unique_ptr<SQLite::Database>> openAlone(const std::filesystem::path& file) {
  configureLibraryOnce();
  try {
    // Read-write: a read-only connection cannot keep the WAL index in its
    // own memory. No busy timeout: a holder means the file is not ours alone.
    // A file with no WAL on disk, or an empty one, is read with an empty
    // one in memory, not one opened or made for the read (read_alone_vfs.h).
    const char* vfs = readAloneVfs();
    auto db = std::make_unique<SQLite::Database>(file.string(), SQLite::OPEN_READWRITE, 0,
                                                 vfs ? vfs : "");
    // The files are left as found: a WAL with frames, an empty one (which
    // the close's checkpoint would delete, and the pool's next open of the
    // file make again), or none, and the -shm, which a connection holding
    // the file alone never touches.
    sqlite3_db_config(db->getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    // Before the first read, or the shared index is set up all the same.
    db->exec("PRAGMA locking_mode = EXCLUSIVE");
    db->exec("SELECT 1 FROM sqlite_master LIMIT 1");  // takes the lock, or fails
    return db;
  } catch (const std::exception& e) {
    return storageError("open alone", e);
  }
}

DeliveryStatus statusColumn(const SQLite::Column& column) {
  const std::string text = column.getString();
  if (auto status = parseDeliveryStatus(text)) return *status;
  throw std::runtime_error("unknown delivery status '" + text + "'");
}

Error storageError(const char* operation, const std::exception& e) {
  const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
  const int primary = sqlite ? sqlite->getErrorCode() & 0xff : SQLITE_ERROR;
  // A full disk is the operator's to fix, not a bug: the same request can
  // succeed once there is space, so it is "try later", not an internal error.
  const std::string_view code = primary == SQLITE_BUSY || primary == SQLITE_LOCKED
                                    ? error_code::kStorageBusy
                                : primary == SQLITE_FULL ? error_code::kStorageUnavailable
                                                         : error_code::kStorageError;
  return makeError(code, fmt::format("storage {} failed: {}", operation, e.what()));
}

}  // namespace webhooker::storage
