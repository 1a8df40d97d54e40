// The VFS the daemon's databases are written through, on real files: a
// commit's WAL frames reach the file in one write and read back whole from
// another connection; frames a rolled-back transaction spilled never land
// on another writer's; a write that fails is the commit's error, with
// nothing of it visible. Writes and faults are seen at the VFS below it
// (FaultVfs, the default VFS of the test process).
#include "storage/wal_append_vfs.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "storage/db_options.h"
#include "storage/sqlite_database.h"
#include "tests/support/fault_vfs.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

// A file with a table t, opened as the daemon opens its databases.
std::unique_ptr<SQLite::Database> openFile(const std::string& path) {
  FaultVfs::install();
  auto opened = storage::openDatabase(path, DbOptions{}, {});
  REQUIRE(opened.ok());
  auto db = std::move(opened.value());
  db->exec("CREATE TABLE IF NOT EXISTS t (x INTEGER PRIMARY KEY, pad BLOB)");
  return db;
}

int count(SQLite::Database& db, const std::string& sql) { return db.execAndGet(sql).getInt(); }

TEST_CASE("a commit's WAL frames reach the file in one write, not two per page") {
  REQUIRE(storage::walAppendVfs() != nullptr);
  TempDir dir;
  const std::string path = (dir / "a.db").string();
  auto db = openFile(path);
  FaultVfs& vfs = FaultVfs::install();
  const int before = vfs.writesOf(path + "-wal");
  db->exec("INSERT INTO t VALUES (1, randomblob(20000))");  // six pages and more
  CHECK(vfs.writesOf(path + "-wal") == before + 1);

  // Another connection, through the default VFS, reads it whole.
  SQLite::Database reader(path, SQLite::OPEN_READONLY);
  CHECK(count(reader, "SELECT length(pad) FROM t WHERE x = 1") == 20000);
  CHECK(reader.execAndGet("PRAGMA integrity_check").getString() == "ok");
}

TEST_CASE("frames a rolled-back transaction spilled never land on another writer's") {
  TempDir dir;
  const std::string path = (dir / "a.db").string();
  auto a = openFile(path);
  a->exec("INSERT INTO t VALUES (1, randomblob(100))");
  // The WAL then holds one commit that leaves page 1 alone, so a's next
  // transaction reads from the WAL, and its rollback need not.
  a->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  a->exec("UPDATE t SET pad = randomblob(100) WHERE x = 1");
  // A cache of a few pages: the transaction writes frames to the WAL
  // before its commit (SQLite reads between them, so most are written as
  // they come; whatever is held is written before the write lock goes).
  a->exec("PRAGMA cache_size = 4");
  a->exec("BEGIN");
  a->exec("INSERT INTO t VALUES (2, randomblob(600000))");
  a->exec("ROLLBACK");

  // Another writer's commit takes the WAL's next frames, where a's were.
  {
    SQLite::Database b(path, SQLite::OPEN_READWRITE);
    b.exec("INSERT INTO t VALUES (1000, randomblob(5000))");
  }
  a->exec("INSERT INTO t VALUES (2000, randomblob(5000))");

  SQLite::Database reader(path, SQLite::OPEN_READONLY);
  CHECK(reader.execAndGet("PRAGMA integrity_check").getString() == "ok");
  CHECK(count(reader, "SELECT count(*) FROM t") == 3);
  CHECK(count(reader, "SELECT sum(length(pad)) FROM t WHERE x IN (1000, 2000)") == 10000);
}

TEST_CASE("a WAL write that fails is its commit's error, and nothing of the commit is visible") {
  TempDir dir;
  const std::string path = (dir / "a.db").string();
  auto db = openFile(path);
  FaultVfs& vfs = FaultVfs::install();
  vfs.inject(path, FaultVfs::Fault::kDiskFull);
  CHECK_THROWS_AS(db->exec("INSERT INTO t VALUES (1, randomblob(20000))"), SQLite::Exception);
  vfs.clear();
  SQLite::Database reader(path, SQLite::OPEN_READONLY);
  CHECK(count(reader, "SELECT count(*) FROM t") == 0);
  db->exec("INSERT INTO t VALUES (2, randomblob(100))");
  CHECK(count(reader, "SELECT count(*) FROM t") == 1);
}

}  // namespace
}  // namespace webhooker::testing
