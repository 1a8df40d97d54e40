// Internal to storage/: opening a SQLite file with the daemon's pragmas and
// bringing its schema up to date. The only header that pulls in SQLiteCpp;
// nothing outside storage/ includes it.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/db_options.h"
#include "storage/delivery_status.h"
#include "storage/migration.h"

namespace webhooker::storage {

// Opens (creating if needed) the file, sets WAL, foreign keys, busy timeout,
// secure_delete and the sync mode, then applies every migration newer than the file's
// schema in its own transaction. Refuses a file whose schema is newer than
// `migrations` knows ("schema_too_new"): an older binary must not write to it.
// Refuses a file it cannot open for writing ("storage_readonly").
// `versionBefore`, when given, receives the schema version found on disk.
Result<std::unique_ptr<SQLite::Database>> openDatabase(const std::filesystem::path& file,
                                                       const DbOptions& options,
                                                       std::span<const Migration> migrations,
                                                       int* versionBefore = nullptr);

// A second, read-only connection to a file openDatabase() has opened: in WAL
// mode it reads while the other connection writes and flushes.
Result<std::unique_ptr<SQLite::Database>> openReader(const std::filesystem::path& file,
                                                     const DbOptions& options);

// A connection that holds `file` alone for as long as it is open (SQLite's
// exclusive locking mode), for reads only: it keeps the WAL index in its own
// memory instead of setting up the shared one (-shm), which is most of what
// opening a file costs, and leaves the files as it found them when it
// closes (a WAL with frames, an empty one or none; a -shm or none): one
// with no WAL, or an empty one, is read with an empty WAL in memory, none
// made or opened on disk. For reads: a write to such a file fails and
// changes nothing.
// Neither creates nor migrates the file. Fails at once ("storage_busy") if
// another connection, of this process or not, has the file open; while it
// is open, the others wait for it.
Result<std::unique_ptr<SQLite::Database>> openAlone(const std::filesystem::path& file);

// Copies the WAL of `db` (opened by openDatabase() with `options`) into its
// file and empties it (wal_checkpoint(TRUNCATE)), with the disk flushes that
// takes, so the next open of the file has no WAL to read. False when another
// connection's read or write kept part of it: without `waitForOthers` at
// once, else after the busy timeout.
Result<bool> checkpointWal(SQLite::Database& db, const DbOptions& options, bool waitForOthers);

// Deletes the files of the database `file` named by `suffixes` ("" is the
// file itself, "-wal" and "-shm" its WAL and WAL index); one that is missing
// is not an error. No connection to the file may be open.
Result<void> deleteDatabaseFiles(const std::filesystem::path& file,
                                 std::initializer_list<std::string_view> suffixes);

// How many times, in this process, a -shm SQLite reset (the first
// connection to a file in WAL mode) was zeroed in place rather than
// truncated and grown again (see sqlite_database.cpp, resetShmInPlace).
uint64_t shmResetsInPlaceSoFar();

// Applies pending migrations; returns how many were applied.
Result<int> migrate(SQLite::Database& db, std::span<const Migration> migrations);

// The highest version recorded in schema_migrations (0 for a fresh file).
int schemaVersion(SQLite::Database& db);
// The version in the file's header (PRAGMA user_version): each migration
// writes it with its schema_migrations row, in the same transaction, since
// events 0008; 0 in a file no such migration has touched.
int headerVersion(SQLite::Database& db);
// Whether the file is at `version`: its header says so, or else
// schema_migrations does (a file made before the header was written).
bool atSchemaVersion(SQLite::Database& db, int version);

// `table`'s column names in their order. Throws SQLite::Exception.
std::vector<std::string> tableColumns(SQLite::Database& db, const std::string& table);

// Converts a SQLite exception into our error model ("storage_busy" for a
// locked database, "storage_unavailable" for a full disk, "storage_error"
// otherwise), keeping the operation name.
Error storageError(const char* operation, const std::exception& e);

// A deliveries.status column as the enum. The schema's CHECK admits only the
// four words, so anything else is a damaged file: it throws, and the
// caller's catch turns that into "storage_error".
DeliveryStatus statusColumn(const SQLite::Column& column);
// The text to bind for a status.
inline std::string statusText(DeliveryStatus status) { return std::string(statusWord(status)); }

}  // namespace webhooker::storage
