// The migration runner and the pragmas every SQLite file is opened with,
// checked on real files: fresh files get every migration, reopening applies
// none, a file newer than the binary is refused untouched.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "storage/db_options.h"
#include "storage/migration.h"
#include "storage/schema.h"
#include "storage/sqlite_database.h"
#include "tests/support/temp_dir.h"

namespace {

using webhooker::DbOptions;
using webhooker::Migration;
using webhooker::SyncMode;
using webhooker::testing::TempDir;
namespace storage = webhooker::storage;

int countRows(SQLite::Database& db, const std::string& table) {
  return db.execAndGet("SELECT COUNT(*) FROM " + table).getInt();
}

std::vector<std::string> schemaObjects(SQLite::Database& db) {
  std::vector<std::string> out;
  SQLite::Statement q(db, "SELECT type || ' ' || name FROM sqlite_master ORDER BY type, name");
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

std::vector<std::string> migrationRows(SQLite::Database& db) {
  std::vector<std::string> out;
  SQLite::Statement q(db,
                      "SELECT version || '|' || name || '|' || applied_at FROM schema_migrations "
                      "ORDER BY version");
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

std::string fileBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::unique_ptr<SQLite::Database> openOrFail(const std::filesystem::path& file,
                                             std::span<const Migration> migrations,
                                             DbOptions options = {}) {
  auto db = storage::openDatabase(file, options, migrations);
  if (!db) FAIL("openDatabase failed: " << db.error().code << ": " << db.error().message);
  return std::move(db.value());
}

// The events migrations before the one named `name` (which must exist): a
// file of the schema a binary before it made.
std::span<const Migration> eventsMigrationsBefore(std::string_view name) {
  const auto migrations = webhooker::eventsMigrations();
  const auto it = std::find_if(migrations.begin(), migrations.end(),
                               [&](const Migration& m) { return m.name == name; });
  REQUIRE(it != migrations.end());
  return migrations.first(static_cast<size_t>(it - migrations.begin()));
}

void checkNumbered(std::span<const Migration> set) {
  REQUIRE_FALSE(set.empty());
  for (size_t i = 0; i < set.size(); ++i) {
    CAPTURE(i);
    CHECK(set[i].version == static_cast<int>(i + 1));
    CHECK_FALSE(set[i].name.empty());
    CHECK_FALSE(set[i].sql.empty());
  }
}

}  // namespace

TEST_CASE("embedded migrations are numbered 1..N in order") {
  checkNumbered(webhooker::mainMigrations());
  checkNumbered(webhooker::eventsMigrations());
  CHECK(webhooker::mainMigrations()[0].name == "initial");
  CHECK(webhooker::eventsMigrations()[0].name == "initial");
}

TEST_CASE("a fresh main DB gets every migration") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  const auto migrations = webhooker::mainMigrations();
  auto db = openOrFail(file, migrations);
  CHECK(std::filesystem::exists(file));
  CHECK(countRows(*db, "schema_migrations") == static_cast<int>(migrations.size()));
  CHECK(storage::schemaVersion(*db) == migrations.back().version);
  for (const char* table : {"webhooks", "entrypoints", "targets", "settings"}) {
    CAPTURE(table);
    CHECK(db->tableExists(table));
  }
  // applied_at is the ISO-8601 UTC form with milliseconds.
  const std::string appliedAt =
      db->execAndGet("SELECT applied_at FROM schema_migrations WHERE version = 1").getString();
  CHECK(appliedAt.size() == 24);
  CHECK(appliedAt.back() == 'Z');
  CHECK(appliedAt[10] == 'T');
}

TEST_CASE("a fresh events DB gets every migration") {
  TempDir dir;
  const auto migrations = webhooker::eventsMigrations();
  auto db = openOrFail(dir / "events-x.db", migrations);
  CHECK(countRows(*db, "schema_migrations") == static_cast<int>(migrations.size()));
  CHECK(storage::schemaVersion(*db) == migrations.back().version);
  for (const char* table : {"events", "deliveries", "delivery_results"}) {
    CAPTURE(table);
    CHECK(db->tableExists(table));
  }
  // No view in the file: SQLite would parse it on every open.
  CHECK(db->execAndGet("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view'").getInt() == 0);
}

TEST_CASE("an events DB made before loses the delivery_history view, which the CLI's makes again") {
  TempDir dir;
  const auto file = dir / "events-x.db";
  const auto migrations = webhooker::eventsMigrations();
  const auto before = eventsMigrationsBefore("history_view_off_disk");
  {
    auto old = openOrFail(file, before);
    old->exec("INSERT INTO events (id, entrypoint_id, method, path, body, body_size, received_at) "
              "VALUES ('e1', 'ep', 'POST', '/', 'x', 1, '2026-11-18T11:00:00.000Z')");
    CHECK(old->execAndGet("SELECT COUNT(*) FROM delivery_history").getInt() == 1);
  }
  auto db = openOrFail(file, migrations);
  CHECK(storage::schemaVersion(*db) == migrations.back().version);
  CHECK(db->execAndGet("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view'").getInt() == 0);
  CHECK(db->execAndGet("SELECT COUNT(*) FROM events").getInt() == 1);
  // Made in the connection only (TEMP): the file stays without it.
  db->exec(std::string(webhooker::deliveryHistoryView()));
  CHECK(db->execAndGet("SELECT event_id FROM delivery_history").getString() == "e1");
  CHECK(db->execAndGet("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view'").getInt() == 0);
}

TEST_CASE("an events DB keeps its version in the header, and one made before gets it there") {
  TempDir dir;
  const auto file = dir / "events-x.db";
  const auto migrations = webhooker::eventsMigrations();
  const int known = migrations.back().version;
  {
    auto fresh = openOrFail(dir / "events-fresh.db", migrations);
    CHECK(storage::headerVersion(*fresh) == known);
  }
  // A file of the schema before the header held the version.
  const auto before = eventsMigrationsBefore("version_in_header");
  const int oldVersion = before.back().version;
  {
    auto old = openOrFail(file, before);
    old->exec("PRAGMA user_version = 0");  // as the binaries before it left it
    CHECK(storage::schemaVersion(*old) == oldVersion);
  }
  int found = -1;
  {
    auto db = storage::openDatabase(file, DbOptions{}, migrations, &found);
    REQUIRE(db.ok());
    CHECK(found == oldVersion);
    CHECK(storage::headerVersion(*db.value()) == known);
    CHECK(storage::schemaVersion(*db.value()) == known);
  }
  // Opened again: the version comes from the header, and nothing is applied.
  auto db = storage::openDatabase(file, DbOptions{}, migrations, &found);
  REQUIRE(db.ok());
  CHECK(found == known);
  CHECK(countRows(*db.value(), "schema_migrations") == static_cast<int>(migrations.size()));
  CHECK(storage::atSchemaVersion(*db.value(), known));
  CHECK_FALSE(storage::atSchemaVersion(*db.value(), oldVersion));
}

TEST_CASE("entrypoints made before they had names get unique ones") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  const auto migrations = webhooker::mainMigrations();
  const auto naming = std::find_if(migrations.begin(), migrations.end(), [](const Migration& m) {
    return m.name == "entrypoint_names";
  });
  REQUIRE(naming != migrations.end());
  const auto before = migrations.first(static_cast<size_t>(naming - migrations.begin()));
  {
    auto db = openOrFail(file, before);
    REQUIRE_FALSE(db->execAndGet("SELECT COUNT(*) FROM pragma_table_info('entrypoints') "
                                 "WHERE name = 'name'")
                      .getInt());
    db->exec(
        "INSERT INTO webhooks (id, name, created_at, updated_at) VALUES "
        "('w1', 'shop', 't', 't'), ('w2', 'billing', 't', 't');"
        // Of w1's four, the oldest is not the first; two share their first 8 characters.
        "INSERT INTO entrypoints (id, webhook_id, created_at, updated_at) VALUES "
        "('bbbbbbbb-0000-4000-8000-000000000001', 'w1', '2026-01-02', 't'),"
        "('bbbbbbbb-0000-4000-8000-000000000002', 'w1', '2026-01-03', 't'),"
        "('cccccccc-0000-4000-8000-000000000003', 'w1', '2026-01-01', 't'),"
        "('dddddddd-0000-4000-8000-000000000004', 'w2', '2026-01-05', 't'),"
        "('eeeeeeee-0000-4000-8000-000000000005', 'w1', '2026-01-04', 't');");
  }
  auto db = openOrFail(file, migrations);
  std::vector<std::string> names;
  SQLite::Statement q(*db, "SELECT webhook_id || ' ' || name FROM entrypoints ORDER BY id");
  while (q.executeStep()) names.push_back(q.getColumn(0).getString());
  CHECK(names == std::vector<std::string>{"w1 ep-bbbbbbbb-0000-4000-8000-000000000001",
                                          "w1 ep-bbbbbbbb-0000-4000-8000-000000000002",
                                          "w1 default", "w2 default", "w1 ep-eeeeeeee"});
  // From now on a name is unique within its webhook.
  CHECK_THROWS(db->exec("UPDATE entrypoints SET name = 'default' "
                        "WHERE id = 'bbbbbbbb-0000-4000-8000-000000000001'"));
  db->exec("INSERT INTO entrypoints (id, webhook_id, created_at, updated_at, name) "
           "VALUES ('e5', 'w2', 't', 't', 'ep-bbbbbbbb')");
  CHECK(countRows(*db, "entrypoints") == 6);
}

TEST_CASE("schemaVersion of a file without schema_migrations is 0") {
  TempDir dir;
  SQLite::Database db((dir / "empty.db").string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  CHECK(storage::schemaVersion(db) == 0);
}

TEST_CASE("opening an up-to-date DB again applies nothing") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  const auto migrations = webhooker::mainMigrations();
  std::vector<std::string> before;
  {
    auto db = openOrFail(file, migrations);
    db->exec("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 't')");
    before = migrationRows(*db);
  }
  auto db = openOrFail(file, migrations);
  CHECK(migrationRows(*db) == before);  // same rows, same applied_at
  CHECK(countRows(*db, "settings") == 1);
  auto applied = storage::migrate(*db, migrations);
  REQUIRE(applied.ok());
  CHECK(applied.value() == 0);
  CHECK(countRows(*db, "schema_migrations") == static_cast<int>(migrations.size()));
}

TEST_CASE("migrate applies only the migrations newer than the file, each recorded") {
  TempDir dir;
  SQLite::Database db((dir / "m.db").string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration all[] = {{1, "one", "CREATE TABLE a (x INTEGER);"},
                           {2, "two", "CREATE TABLE b (y INTEGER); INSERT INTO b VALUES (7);"},
                           {3, "three", "ALTER TABLE a ADD COLUMN z TEXT;"}};
  auto first = storage::migrate(db, std::span<const Migration>(all, 1));
  REQUIRE(first.ok());
  CHECK(first.value() == 1);
  CHECK(storage::schemaVersion(db) == 1);
  CHECK_FALSE(db.tableExists("b"));

  auto rest = storage::migrate(db, all);
  REQUIRE(rest.ok());
  CHECK(rest.value() == 2);
  CHECK(storage::schemaVersion(db) == 3);
  CHECK(db.execAndGet("SELECT y FROM b").getInt() == 7);
  CHECK(db.execAndGet("SELECT group_concat(name, ',') FROM "
                      "(SELECT name FROM schema_migrations ORDER BY version)")
            .getString() == "one,two,three");
}

TEST_CASE("a new file is made in one transaction: a failing migration leaves it empty") {
  TempDir dir;
  SQLite::Database db((dir / "m.db").string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration all[] = {{1, "one", "CREATE TABLE a (x INTEGER);"},
                           {2, "broken", "CREATE TABLE c (z INTEGER); THIS IS NOT SQL;"}};
  auto r = storage::migrate(db, all);
  REQUIRE_FALSE(r.ok());
  CHECK(storage::schemaVersion(db) == 0);
  CHECK_FALSE(db.tableExists("a"));
  CHECK_FALSE(db.tableExists("schema_migrations"));
  // The next open makes it whole.
  auto again = storage::migrate(db, std::span<const Migration>(all, 1));
  REQUIRE(again.ok());
  CHECK(again.value() == 1);
  CHECK(db.tableExists("a"));
}

TEST_CASE("a failing migration is rolled back and leaves the version where it was") {
  TempDir dir;
  SQLite::Database db((dir / "m.db").string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration all[] = {{1, "one", "CREATE TABLE a (x INTEGER);"},
                           {2, "broken", "CREATE TABLE c (z INTEGER); THIS IS NOT SQL;"}};
  REQUIRE(storage::migrate(db, std::span<const Migration>(all, 1)).ok());
  auto r = storage::migrate(db, all);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "storage_error");
  CHECK(r.error().message.find("migrate") != std::string::npos);
  CHECK(storage::schemaVersion(db) == 1);
  CHECK(db.tableExists("a"));
  CHECK_FALSE(db.tableExists("c"));
}

TEST_CASE("a DB newer than the binary is refused with schema_too_new and left untouched") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  const auto migrations = webhooker::mainMigrations();
  const int known = migrations.back().version;
  const int future = known + 5;
  {
    auto db = openOrFail(file, migrations);
    db->exec("INSERT INTO settings (key, value, updated_at) VALUES ('admin', 'h', 't')");
    SQLite::Statement bump(*db,
                           "INSERT INTO schema_migrations (version, name, applied_at) "
                           "VALUES (?, 'from_the_future', '2030-01-01T00:00:00.000Z')");
    bump.bind(1, future);
    bump.exec();
    db->exec("PRAGMA user_version = " + std::to_string(future));  // as its migration writes it
  }  // closed: the WAL is checkpointed into the file
  std::vector<std::string> rowsBefore, objectsBefore;
  {
    SQLite::Database check(file.string(), SQLite::OPEN_READONLY);
    rowsBefore = migrationRows(check);
    objectsBefore = schemaObjects(check);
  }
  const std::string bytesBefore = fileBytes(file);
  REQUIRE_FALSE(bytesBefore.empty());

  auto refused = storage::openDatabase(file, DbOptions{}, migrations);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "schema_too_new");
  const std::string& message = refused.error().message;
  CAPTURE(message);
  CHECK(message.find(std::to_string(future)) != std::string::npos);
  CHECK(message.find(std::to_string(known)) != std::string::npos);
  CHECK(message.find("webhooker.db") != std::string::npos);

  // BUG: storage/sqlite_database.cpp openDatabase() runs
  // "PRAGMA auto_vacuum = INCREMENTAL" on every open, before the version check;
  // on an existing file that is a write transaction (page 1: file change
  // counter, bytes 24-27 and 92-95), so a refused newer file is still written.
  CHECK(fileBytes(file) == bytesBefore);
  SQLite::Database check(file.string(), SQLite::OPEN_READONLY);
  CHECK(migrationRows(check) == rowsBefore);
  CHECK(schemaObjects(check) == objectsBefore);
  CHECK(check.execAndGet("SELECT value FROM settings WHERE key = 'admin'").getString() == "h");
}

TEST_CASE("a newer file is refused before any of our migrations run") {
  // A file some future webhooker made from scratch: only its own tables.
  TempDir dir;
  const auto file = dir / "events-future.db";
  {
    SQLite::Database db(file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at TEXT NOT NULL)");
    db.exec("INSERT INTO schema_migrations VALUES (99, 'future', '2030-01-01T00:00:00.000Z')");
    db.exec("CREATE TABLE future_things (id INTEGER)");
  }
  auto refused = storage::openDatabase(file, DbOptions{}, webhooker::eventsMigrations());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "schema_too_new");
  CHECK(refused.error().message.find("99") != std::string::npos);
  SQLite::Database check(file.string(), SQLite::OPEN_READONLY);
  CHECK_FALSE(check.tableExists("events"));
  CHECK_FALSE(check.tableExists("deliveries"));
  CHECK(check.tableExists("future_things"));
  CHECK(countRows(check, "schema_migrations") == 1);
}

TEST_CASE("migrate alone also refuses a newer schema") {
  TempDir dir;
  SQLite::Database db((dir / "m.db").string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration two[] = {{1, "one", "CREATE TABLE a (x INTEGER);"},
                           {2, "two", "CREATE TABLE b (x INTEGER);"}};
  REQUIRE(storage::migrate(db, two).ok());
  auto r = storage::migrate(db, std::span<const Migration>(two, 1));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "schema_too_new");
  CHECK(storage::schemaVersion(db) == 2);
}

TEST_CASE("openDatabase reports the version it found on disk") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  const auto migrations = webhooker::mainMigrations();
  int before = -1;
  {
    auto db = storage::openDatabase(file, DbOptions{}, migrations, &before);
    REQUIRE(db.ok());
    CHECK(before == 0);
  }
  before = -1;
  auto db = storage::openDatabase(file, DbOptions{}, migrations, &before);
  REQUIRE(db.ok());
  CHECK(before == migrations.back().version);
}

TEST_CASE("openDatabase sets WAL, foreign keys, busy timeout and synchronous=FULL by default") {
  TempDir dir;
  auto db = openOrFail(dir / "webhooker.db", webhooker::mainMigrations());
  CHECK(db->execAndGet("PRAGMA journal_mode").getString() == "wal");
  CHECK(db->execAndGet("PRAGMA foreign_keys").getInt() == 1);
  CHECK(db->execAndGet("PRAGMA synchronous").getInt() == 2);  // FULL
  CHECK(db->execAndGet("PRAGMA busy_timeout").getInt() == 5000);
  CHECK(db->execAndGet("PRAGMA auto_vacuum").getInt() == 2);  // INCREMENTAL
}

TEST_CASE("openDatabase honours SyncMode::kNormal and the busy timeout") {
  TempDir dir;
  DbOptions options;
  options.sync = SyncMode::kNormal;
  options.busyTimeoutMs = 1234;
  auto db = openOrFail(dir / "events-a.db", webhooker::eventsMigrations(), options);
  CHECK(db->execAndGet("PRAGMA synchronous").getInt() == 1);  // NORMAL
  CHECK(db->execAndGet("PRAGMA busy_timeout").getInt() == 1234);
  CHECK(db->execAndGet("PRAGMA journal_mode").getString() == "wal");
  CHECK(db->execAndGet("PRAGMA foreign_keys").getInt() == 1);
}

TEST_CASE("WAL mode is stored in the file: another connection sees it") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  { auto db = openOrFail(file, webhooker::mainMigrations()); }
  SQLite::Database plain(file.string(), SQLite::OPEN_READONLY);
  CHECK(plain.execAndGet("PRAGMA journal_mode").getString() == "wal");
}

TEST_CASE("foreign keys are enforced on an opened main DB") {
  TempDir dir;
  auto db = openOrFail(dir / "webhooker.db", webhooker::mainMigrations());
  CHECK_THROWS_AS(db->exec("INSERT INTO entrypoints (id, webhook_id, active, created_at, "
                           "updated_at) VALUES ('e', 'no-such-webhook', 1, 't', 't')"),
                  SQLite::Exception);
  CHECK(countRows(*db, "entrypoints") == 0);
}

TEST_CASE("openDatabase reports a file it cannot open as storage_error") {
  TempDir dir;
  auto r = storage::openDatabase(dir / "no-such-dir" / "x.db", DbOptions{},
                                 webhooker::mainMigrations());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "storage_error");
  CHECK(r.error().message.find("open") != std::string::npos);
}
