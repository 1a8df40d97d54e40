// EventsDbPool: one events-<id>.db per webhook under the data dir, a bounded
// LRU of open files, and remove() deleting a webhook's files for good.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/uuid.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/webhook_transfer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/eventually.h"
#include "tests/support/fault_vfs.h"
#include "tests/support/ingested_event.h"
#include "tests/support/temp_dir.h"

namespace {

using webhooker::DbOptions;
using webhooker::EventsDb;
using webhooker::EventsDbPool;
using webhooker::testing::FakeClock;
using webhooker::testing::eventually;
using webhooker::testing::ingestEvent;
using webhooker::testing::TempDir;

std::shared_ptr<EventsDb> getOrFail(EventsDbPool& pool, const std::string& id) {
  auto r = pool.get(id);
  if (!r) FAIL("get failed: " << r.error().code << ": " << r.error().message);
  return r.value();
}

// Stores one plain-text event and returns its id.
std::string ingestOne(EventsDb& db, const std::string& body) {
  return ingestEvent(db, body, 1, "text/plain").eventId;
}

// The pool's closer lets go of an evicted DB once it has checkpointed it.
// Expired is not yet closed: the DB's destructor closes its connections
// after its last holder let go.
bool closedWithinSeconds(const std::weak_ptr<EventsDb>& db, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!db.expired() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return db.expired();
}

std::uintmax_t walSize(const std::filesystem::path& dbFile) {
  return std::filesystem::file_size(dbFile.string() + "-wal");
}

int countEvents(const std::filesystem::path& file) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  return db.execAndGet("SELECT COUNT(*) FROM events").getInt();
}

}  // namespace

TEST_CASE("pathFor names events-<id>.db in the data dir") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  CHECK(pool.pathFor(id) == dir.path() / ("events-" + id + ".db"));
  CHECK(pool.openCount() == 0);
}

TEST_CASE("get creates and migrates events-<id>.db under the data dir") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  const auto file = dir.path() / ("events-" + id + ".db");
  REQUIRE_FALSE(std::filesystem::exists(file));

  auto db = getOrFail(pool, id);
  REQUIRE(db);
  CHECK(std::filesystem::exists(file));
  CHECK(db->schemaVersion() >= 1);
  CHECK(pool.openCount() == 1);

  const std::string eventId = ingestOne(*db, "hello");
  SQLite::Database raw(file.string(), SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("SELECT CAST(body AS TEXT) FROM events WHERE id = '" + eventId + "'")
            .getString() == "hello");
}

TEST_CASE("a second get returns the same open DB") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  auto first = getOrFail(pool, id);
  auto second = getOrFail(pool, id);
  CHECK(first.get() == second.get());
  CHECK(pool.openCount() == 1);
  const std::string other = webhooker::newUuid();
  auto third = getOrFail(pool, other);
  CHECK(third.get() != first.get());
  CHECK(pool.openCount() == 2);
}

TEST_CASE("the pool keeps at most `capacity` DBs open and evicts the least recently used") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 2);
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  const std::string c = webhooker::newUuid();

  std::weak_ptr<EventsDb> weakA, weakB, weakC;
  std::string eventA;
  {
    auto dbA = getOrFail(pool, a);
    weakA = dbA;
    eventA = ingestOne(*dbA, "kept through eviction");
  }
  { weakB = getOrFail(pool, b); }
  CHECK(pool.openCount() == 2);
  { weakA = getOrFail(pool, a); }  // a is now the most recently used: b goes next
  { weakC = getOrFail(pool, c); }
  CHECK(pool.openCount() == 2);
  CHECK(closedWithinSeconds(weakB, 5));  // evicted and, with no other user, closed
  CHECK_FALSE(weakA.expired());
  CHECK_FALSE(weakC.expired());

  // The evicted one reopens with its data, and another one goes out.
  auto dbB = getOrFail(pool, b);
  CHECK(pool.openCount() == 2);
  CHECK(closedWithinSeconds(weakA, 5));  // a was least recently used
  auto dbA = getOrFail(pool, a);
  CHECK(pool.openCount() == 2);
  CHECK(countEvents(pool.pathFor(a)) == 1);
  SQLite::Database raw(pool.pathFor(a).string(), SQLite::OPEN_READONLY);
  CHECK(raw.execAndGet("SELECT id FROM events").getString() == eventA);

  // The reopened DB takes new events into the same file.
  ingestOne(*dbA, "after reopen");
  CHECK(countEvents(pool.pathFor(a)) == 2);
}

TEST_CASE("get() counts its lookups and the ones that opened a file") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 1);
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  { getOrFail(pool, a); }
  { getOrFail(pool, a); }  // held open: a hit
  { getOrFail(pool, b); }  // evicts a
  { getOrFail(pool, a); }  // reopens it
  CHECK(pool.use().gets == 4);
  CHECK(pool.use().opens == 3);
}

TEST_CASE("an evicted DB keeps a short WAL, empties a long one; the pool's end empties all") {
  TempDir dir;
  FakeClock clock;
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  const std::string c = webhooker::newUuid();
  {
    EventsDbPool pool(dir.path(), DbOptions{}, clock, 1);
    std::weak_ptr<EventsDb> weakA, weakB;
    {
      auto dbA = getOrFail(pool, a);
      weakA = dbA;
      ingestOne(*dbA, "evicted with its WAL");
      CHECK(walSize(pool.pathFor(a)) > 0);
    }
    {
      auto dbB = getOrFail(pool, b);  // evicts a: closed as it is, no flush
      weakB = dbB;
      ingestOne(*dbB, std::string(1200 * 1024, 'x'));  // a WAL past 1 MiB
    }
    CHECK(closedWithinSeconds(weakA, 5));
    const auto walOfA = walSize(pool.pathFor(a));
    CHECK(walOfA > 0);
    ingestOne(*getOrFail(pool, c), "held until the pool goes");  // evicts b
    CHECK(closedWithinSeconds(weakB, 5));
    CHECK(walSize(pool.pathFor(b)) == 0);
    CHECK(walSize(pool.pathFor(a)) == walOfA);
    CHECK(countEvents(pool.pathFor(a)) == 1);  // read from the WAL left behind
  }
  EventsDbPool reopened(dir.path(), DbOptions{}, clock, 1);
  CHECK(walSize(reopened.pathFor(c)) == 0);
  CHECK(countEvents(reopened.pathFor(a)) == 1);
  CHECK(countEvents(reopened.pathFor(b)) == 1);
  CHECK(countEvents(reopened.pathFor(c)) == 1);
  // The reopened DB takes new events after those of the WAL it found.
  ingestOne(*getOrFail(reopened, a), "after reopen");
  CHECK(countEvents(reopened.pathFor(a)) == 2);
}

TEST_CASE("a written file keeps its -wal and -shm through a clean stop, reads alone and reopens") {
  TempDir dir;
  FakeClock clock;
  const std::string written = webhooker::newUuid();
  const std::string quiet = webhooker::newUuid();
  {
    EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
    REQUIRE(EventsDb::create(pool.pathFor(quiet), DbOptions{}));  // made, never written
    ingestOne(*getOrFail(pool, written), "before the stop");
  }
  // The identity of each file: one made again is another inode.
  const auto inode = [](const std::filesystem::path& file) -> std::optional<ino_t> {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return std::nullopt;
    return st.st_ino;
  };
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
  const std::string wal = pool.pathFor(written).string() + "-wal";
  const std::string shm = pool.pathFor(written).string() + "-shm";
  // The clean stop emptied the WAL into the file; SQLite deleted neither.
  CHECK(walSize(pool.pathFor(written)) == 0);
  CHECK(std::filesystem::file_size(shm) == 32768);
  const auto walInode = inode(wal);
  const auto shmInode = inode(shm);
  REQUIRE(walInode);
  REQUIRE(shmInode);
  // The passes that read closed files alone leave both as they are...
  REQUIRE(pool.unfinishedIfClosed(written, clock.now()));
  REQUIRE(pool.backlogIfClosed(written));
  REQUIRE(pool.unfinishedIfClosed(quiet, clock.now()));
  CHECK(inode(wal) == walInode);
  CHECK(inode(shm) == shmInode);
  CHECK(walSize(pool.pathFor(written)) == 0);
  // ...and make none for a file never written.
  CHECK_FALSE(inode(pool.pathFor(quiet).string() + "-wal"));
  CHECK_FALSE(inode(pool.pathFor(quiet).string() + "-shm"));
  // The next open writes to the same two files.
  ingestOne(*getOrFail(pool, written), "after the stop");
  CHECK(countEvents(pool.pathFor(written)) == 2);
  CHECK(inode(wal) == walInode);
  CHECK(inode(shm) == shmInode);
}

TEST_CASE("letGo closes a webhook's DB as an eviction would; the next get opens it again") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  std::weak_ptr<EventsDb> weakA;
  {
    auto dbA = getOrFail(pool, a);
    weakA = dbA;
    ingestOne(*dbA, "kept through letGo");
  }
  auto dbB = getOrFail(pool, b);
  CHECK(pool.openCount() == 2);

  pool.letGo(a);
  CHECK(pool.openCount() == 1);
  CHECK(pool.peek(a).open == nullptr);
  CHECK(pool.peek(a).closings == 1);
  CHECK(closedWithinSeconds(weakA, 5));
  CHECK(walSize(pool.pathFor(a)) > 0);  // closed as evicted DBs are: its short WAL kept

  pool.letGo(a);  // not open: nothing to do
  pool.letGo(webhooker::newUuid());
  CHECK(pool.peek(a).closings == 1);
  CHECK(pool.openCount() == 1);

  auto reopened = getOrFail(pool, a);
  CHECK(countEvents(pool.pathFor(a)) == 1);
  ingestOne(*reopened, "after letGo");
  CHECK(countEvents(pool.pathFor(a)) == 2);
  CHECK(pool.openCount() == 2);
}

TEST_CASE("a closed DB peeks with the backlog counted as it closed") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 1);
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  const std::string fresh = webhooker::newUuid();  // no file yet

  std::weak_ptr<EventsDb> weakA;
  {
    auto dbA = getOrFail(pool, a);
    weakA = dbA;
    CHECK_FALSE(pool.peek(a).closedBacklog);  // open: counted through the DB
    ingestEvent(*dbA, "{}", 2);
    ingestEvent(*dbA, "{}", 1);
  }
  std::shared_ptr<EventsDb> held = getOrFail(pool, b);  // evicts a
  REQUIRE(closedWithinSeconds(weakA, 5));
  const auto peekA = pool.peek(a);
  REQUIRE(peekA.closedBacklog);
  CHECK(peekA.closedBacklog->size() == 3);  // three targets, one pending delivery each
  for (const auto& group : *peekA.closedBacklog) {
    CHECK(group.status == webhooker::DeliveryStatus::kPending);
    CHECK(group.count == 1);
  }
  // Read from its file, once the closer has closed it: weakA expires as the
  // closer lets go, before the DB's destructor has closed its connection,
  // and a file another connection holds is not read alone (nullopt).
  std::optional<std::vector<EventsDb::WaitingTarget>> waitingInA;
  REQUIRE(
      eventually([&] { return (waitingInA = pool.waitingTargetsIfClosed(a, 10)).has_value(); }));
  CHECK(waitingInA->size() == 3);

  // b is evicted while a caller holds it: it may still be written, so the
  // pool does not count it, and the sampler reads its file instead.
  getOrFail(pool, a);
  ingestEvent(*held, "{}", 1);
  std::weak_ptr<EventsDb> weakB = held;
  getOrFail(pool, fresh);  // evicts a again
  // a, opened and closed again, is counted again; the closer takes the
  // evicted DBs in turn, so it has seen b's holder by then.
  REQUIRE(eventually([&] { return pool.peek(a).closedBacklog.has_value(); }));
  CHECK(pool.peek(a).closedBacklog->size() == 3);
  CHECK_FALSE(pool.peek(b).closedBacklog);
  // Held open elsewhere, its file is not read alone: the callers read it
  // through the pool instead, never take "not read" for "nothing waits".
  CHECK_FALSE(pool.waitingTargetsIfClosed(b, 10));
  held.reset();
  REQUIRE(closedWithinSeconds(weakB, 5));
  CHECK_FALSE(pool.peek(b).closedBacklog);
  std::optional<std::vector<EventsDb::WaitingTarget>> waitingInB;
  REQUIRE(
      eventually([&] { return (waitingInB = pool.waitingTargetsIfClosed(b, 10)).has_value(); }));
  CHECK(waitingInB->size() == 1);
  // Open again: no count is handed out for it.
  CHECK_FALSE(pool.peek(fresh).closedBacklog);
}

TEST_CASE("an evicted DB a caller still holds stays usable") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 1);
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  auto held = getOrFail(pool, a);
  getOrFail(pool, b);  // evicts a from the pool
  CHECK(pool.openCount() == 1);
  ingestOne(*held, "still works");
  CHECK(countEvents(pool.pathFor(a)) == 1);
}

TEST_CASE("capacity 0 is treated as 1") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 0);
  auto db = getOrFail(pool, webhooker::newUuid());
  CHECK(pool.openCount() == 1);
  getOrFail(pool, webhooker::newUuid());
  CHECK(pool.openCount() == 1);
}

TEST_CASE("many webhooks with a small pool: every file keeps its own events") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 3);
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(webhooker::newUuid());
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < ids.size(); ++i) {
      ingestOne(*getOrFail(pool, ids[i]), "event " + std::to_string(i));
      CHECK(pool.openCount() <= 3);
    }
  for (size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(i);
    SQLite::Database raw(pool.pathFor(ids[i]).string(), SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM events").getInt() == 2);
    CHECK(raw.execAndGet("SELECT COUNT(DISTINCT CAST(body AS TEXT)) FROM events").getInt() == 1);
    CHECK(raw.execAndGet("SELECT CAST(body AS TEXT) FROM events LIMIT 1").getString() ==
          "event " + std::to_string(i));
  }
}

TEST_CASE("threads opening more webhooks than the pool holds each get their own file") {
  // Files open and close outside the pool's lock: two callers of one
  // webhook must still share one open, and no write may land elsewhere.
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(webhooker::newUuid());
  constexpr int kThreads = 6;
  constexpr int kRounds = 3;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < kRounds; ++round)
          for (size_t i = 0; i < ids.size(); ++i) {
            // Each thread walks the webhooks from its own start, so opens
            // of one webhook and evictions of another overlap.
            const size_t k = (i + static_cast<size_t>(t) * 2) % ids.size();
            auto db = pool.get(ids[k]);
            CHECK(db);
            if (!db) return;
            ingestOne(*db.value(), "event " + std::to_string(k));
          }
      });
  }
  CHECK(pool.openCount() <= 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(i);
    SQLite::Database raw(pool.pathFor(ids[i]).string(), SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM events").getInt() == kThreads * kRounds);
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM events WHERE CAST(body AS TEXT) != 'event " +
                         std::to_string(i) + "'").getInt() == 0);
  }
}

TEST_CASE("remove closes the DB and deletes the file with its -wal and -shm") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  const std::string keptId = webhooker::newUuid();
  const auto file = pool.pathFor(id);
  std::weak_ptr<EventsDb> weak;
  {
    auto db = getOrFail(pool, id);
    weak = db;
    ingestOne(*db, "doomed");
    ingestOne(*getOrFail(pool, keptId), "kept");
  }
  // While the connection is open, WAL mode keeps -wal and -shm beside the file.
  CHECK(std::filesystem::exists(file.string() + "-wal"));
  CHECK(std::filesystem::exists(file.string() + "-shm"));
  CHECK(pool.openCount() == 2);

  auto removed = pool.remove(id);
  REQUIRE(removed.ok());
  CHECK(weak.expired());  // closed: the pool held the only reference
  CHECK(pool.openCount() == 1);
  CHECK_FALSE(std::filesystem::exists(file));
  CHECK_FALSE(std::filesystem::exists(file.string() + "-wal"));
  CHECK_FALSE(std::filesystem::exists(file.string() + "-shm"));

  // The other webhook is untouched.
  CHECK(std::filesystem::exists(pool.pathFor(keptId)));
  CHECK(countEvents(pool.pathFor(keptId)) == 1);

  // A later get (a retry timer, a pass that listed the webhook before the
  // delete) is refused and brings no empty file back.
  auto late = pool.get(id);
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == "not_found");
  CHECK_FALSE(std::filesystem::exists(file));
  CHECK(pool.openCount() == 1);
  CHECK(getOrFail(pool, keptId));
}

TEST_CASE("remove of a webhook that was never opened deletes its file") {
  TempDir dir;
  FakeClock clock;
  const std::string id = webhooker::newUuid();
  {
    EventsDbPool first(dir.path(), DbOptions{}, clock);
    ingestOne(*getOrFail(first, id), "x");
  }
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  REQUIRE(std::filesystem::exists(pool.pathFor(id)));
  REQUIRE(pool.remove(id).ok());
  CHECK_FALSE(std::filesystem::exists(pool.pathFor(id)));
  CHECK(pool.openCount() == 0);
  CHECK(pool.remove(webhooker::newUuid()).ok());  // nothing there: nothing to do
}

TEST_CASE("a holder of a removed DB keeps it until it lets go") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  auto held = getOrFail(pool, id);
  std::weak_ptr<EventsDb> weak = held;
  REQUIRE(pool.remove(id).ok());
  CHECK(pool.openCount() == 0);
  CHECK_FALSE(std::filesystem::exists(pool.pathFor(id)));
  CHECK_FALSE(weak.expired());
  // It writes to the unlinked file; nobody else can open the id again.
  ingestOne(*held, "into the unlinked file");
  CHECK_FALSE(pool.get(id).ok());
  held.reset();
  CHECK(weak.expired());
  CHECK_FALSE(std::filesystem::exists(pool.pathFor(id)));
}

TEST_CASE("install brings a removed webhook's file back once it is in place; a holder of the "
          "removed DB still writes to the deleted file only") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  auto held = getOrFail(pool, id);
  ingestOne(*held, "before the move");
  REQUIRE(pool.remove(id).ok());

  // The file that comes back (a move's incoming copy), written elsewhere.
  TempDir elsewhere;
  {
    EventsDbPool other(elsewhere.path(), DbOptions{}, clock);
    auto copy = getOrFail(other, id);
    ingestOne(*copy, "copied 1");
    ingestOne(*copy, "copied 2");
  }
  const auto copied = EventsDbPool(elsewhere.path(), DbOptions{}, clock).pathFor(id);

  // A place that fails changes nothing: the id stays refused.
  const auto failing = [](const std::filesystem::path&) -> webhooker::Result<void> {
    return webhooker::makeError("storage_error", "disk full");
  };
  CHECK_FALSE(pool.install(id, failing).ok());
  CHECK_FALSE(pool.get(id).ok());

  // A get() while the file is put in place waits for it, and opens it.
  webhooker::Result<std::shared_ptr<EventsDb>> duringInstall =
      webhooker::makeError("not_run", "");
  std::thread reader;
  const auto place = [&](const std::filesystem::path& file) -> webhooker::Result<void> {
    reader = std::thread([&] { duringInstall = pool.get(id); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return webhooker::adoptIncoming(copied, file, DbOptions{});
  };
  REQUIRE(pool.install(id, place).ok());
  reader.join();
  REQUIRE(duringInstall.ok());
  ingestOne(*duringInstall.value(), "after the move");
  CHECK(countEvents(pool.pathFor(id)) == 3);

  // The holder from before the removal: its write stays in the deleted file.
  ingestOne(*held, "late");
  held.reset();
  CHECK(countEvents(pool.pathFor(id)) == 3);
}

TEST_CASE("get reports a data dir it cannot write as an error") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path() / "missing" / "deeper", DbOptions{}, clock);
  auto r = pool.get(webhooker::newUuid());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "storage_error");
  CHECK(pool.openCount() == 0);
}

TEST_CASE(
    "EventsDb::create makes a whole file in WAL mode, beside it nothing, and keeps one made") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string reference = webhooker::newUuid(), id = webhooker::newUuid();
  const int migrations = getOrFail(pool, reference)->schemaVersion();
  pool.letGo(reference);

  REQUIRE(EventsDb::create(pool.pathFor(id), DbOptions{}).ok());
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.push_back(entry.path().filename().string());
  // Its file alone: no journal, WAL, scratch or half-written file left behind.
  CHECK(std::count(names.begin(), names.end(), "events-" + id + ".db") == 1);
  for (const std::string& name : names)
    CHECK_MESSAGE((name.rfind("events-" + reference, 0) == 0 || name == "events-" + id + ".db"),
                  name);
  {
    SQLite::Database raw(pool.pathFor(id).string(), SQLite::OPEN_READONLY);
    CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "wal");
    CHECK(raw.execAndGet("SELECT MAX(version) FROM schema_migrations").getInt() == migrations);
    CHECK(raw.execAndGet("PRAGMA auto_vacuum").getInt() == 2);  // incremental
    CHECK(raw.execAndGet("PRAGMA page_size").getInt() == 2048);
  }
  // Again for the same id: the file is kept as it is.
  const std::string eventId = ingestOne(*getOrFail(pool, id), "kept");
  pool.letGo(id);
  REQUIRE(EventsDb::create(pool.pathFor(id), DbOptions{}).ok());
  CHECK(countEvents(pool.pathFor(id)) == 1);
}

TEST_CASE("a webhook's file is made by its first write; reads answer it as empty and make none") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
  const std::string id = webhooker::newUuid();
  const auto file = pool.pathFor(id);

  auto read = pool.getIfMade(id);
  REQUIRE(read);
  CHECK(read.value() == nullptr);
  const auto unfinished = pool.unfinishedIfClosed(id, clock.now());
  REQUIRE(unfinished);
  CHECK(unfinished->file.rows.empty());
  const auto backlog = pool.backlogIfClosed(id);
  REQUIRE(backlog);
  CHECK(backlog->backlog.empty());
  const auto waiting = pool.waitingTargetsIfClosed(id, 10);
  REQUIRE(waiting);
  CHECK(waiting->empty());
  CHECK(pool.mayNeedPruningIfClosed(id, 1, 1) == false);
  const auto stats = pool.statsIfClosed(id, 24);
  REQUIRE(stats);
  CHECK(stats->events == 0);
  CHECK(stats->hours.size() == 24);
  CHECK_FALSE(std::filesystem::exists(file));
  CHECK(pool.openCount() == 0);

  ingestOne(*getOrFail(pool, id), "first");
  CHECK(countEvents(file) == 1);
  auto again = pool.getIfMade(id);
  REQUIRE(again);
  REQUIRE(again.value());
  // Deleting a webhook that never had a file is fine, and so is its leftover.
  const std::string never = webhooker::newUuid();
  std::ofstream(pool.pathFor(never).string() + EventsDb::kWritingSuffix) << "half";
  REQUIRE(pool.remove(never));
  CHECK_FALSE(std::filesystem::exists(pool.pathFor(never).string() + EventsDb::kWritingSuffix));
}

TEST_CASE("a file half written by a crash during its making is made again by the first write") {
  TempDir dir;
  FakeClock clock;
  const std::string id = webhooker::newUuid();
  std::string whole;
  {
    // What a crash in the middle of EventsDb::create leaves: part of a new file.
    const auto scratch = dir.path() / "scratch.db";
    REQUIRE(EventsDb::create(scratch, DbOptions{}));
    std::ifstream in(scratch, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::filesystem::remove(scratch);
  }
  REQUIRE(whole.size() > 8192);
  EventsDbPool pool(dir.path(), DbOptions{}, clock, 4);
  const std::string half = pool.pathFor(id).string() + EventsDb::kWritingSuffix;
  std::ofstream(half, std::ios::binary) << whole.substr(0, 4096);

  // Read as a webhook with no events, the half file left alone...
  auto read = pool.getIfMade(id);
  REQUIRE(read);
  CHECK(read.value() == nullptr);
  // ...and written over by the first write, which then finds its event.
  ingestOne(*getOrFail(pool, id), "after the crash");
  CHECK(countEvents(pool.pathFor(id)) == 1);
  CHECK_FALSE(std::filesystem::exists(half));

  // An empty file under the name (what `sqlite3` leaves, asked for a
  // webhook with no event) is made whole by the first write.
  const std::string opened = webhooker::newUuid();
  std::ofstream(pool.pathFor(opened)) << "";
  ingestOne(*getOrFail(pool, opened), "into the empty file");
  CHECK(countEvents(pool.pathFor(opened)) == 1);
}

TEST_CASE("get reports a data dir it cannot write as an error") {
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path() / "missing", DbOptions{}, clock);
  auto r = pool.get(webhooker::newUuid());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "storage_error");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "missing"));
  CHECK(pool.openCount() == 0);
}

TEST_CASE("a file get makes is flushed once, with no journal flushes") {
  webhooker::testing::FaultVfs& vfs = webhooker::testing::FaultVfs::install();
  TempDir dir;
  FakeClock clock;
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const std::string id = webhooker::newUuid();
  const std::string name = "events-" + id + ".db";
  REQUIRE(getOrFail(pool, id)->schemaVersion() >= 1);
  // Its one flush is EventsDb::create's own fdatasync, under another name.
  CHECK(vfs.syncsOf(name) == 0);
  CHECK(vfs.syncsOf(name + "-journal") == 0);
  CHECK(vfs.syncsOf(name + "-wal") == 0);
  // The first flushed commit flushes the new WAL's header, then its frames
  // (and SQLite the folder, with the WAL's name).
  ingestOne(*getOrFail(pool, id), "first");
  CHECK(vfs.syncsOf(name + "-wal") == 2);
}

TEST_CASE("the node's descriptors and memory bound how many events DBs may stay open") {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // 1,024 others and the HTTP connections set aside, 7 descriptors each.
  CHECK(EventsDbPool::holdableFor(12'000, 2'000, 64 * kGiB) == (12'000 - 3'024) / 7);
  // The connections take at most half of what the others leave.
  CHECK(EventsDbPool::holdableFor(20'000, 10'000, 64 * kGiB) == (20'000 - 1'024) / 2 / 7);
  CHECK(EventsDbPool::holdableFor(4'096, 10'000, 64 * kGiB) == (4'096 - 1'024) / 2 / 7);
  CHECK(EventsDbPool::holdableFor(10'000, 1'000, 64 * kGiB) == (10'000 - 2'024) / 7);
  // Memory: 256 MiB at most, a quarter of a small node's, 192 KiB each.
  CHECK(EventsDbPool::holdableFor(1'000'000, 10'000, 64 * kGiB) == 1'365);
  CHECK(EventsDbPool::holdableFor(1'000'000, 10'000, kGiB / 2) == 682);
  // A limit below the others' still leaves one.
  CHECK(EventsDbPool::holdableFor(1'000, 10'000, 64 * kGiB) == 1);
}

TEST_CASE("every webhook's file stays open when all fit, else the default number") {
  CHECK(EventsDbPool::capacityFor(0, 3'000) == 3'000);
  CHECK(EventsDbPool::capacityFor(3'000, 3'000) == 3'000);
  CHECK(EventsDbPool::capacityFor(3'001, 3'000) == EventsDbPool::kDefaultCapacity);
  CHECK(EventsDbPool::capacityFor(10'000, 500) == 500);
}

TEST_CASE("a pool sized by the node follows the webhooks made, removed and moved in") {
  TempDir dir;
  FakeClock clock;
  const size_t holdable = EventsDbPool::kDefaultCapacity + 2;
  // The files of holdable + 1 webhooks (their content is not read).
  for (size_t i = 0; i <= holdable; ++i)
    std::ofstream(dir.path() / ("events-" + std::to_string(i) + ".db")) << "";
  std::ofstream(dir.path() / "events-0.db-wal") << "";  // not a webhook
  EventsDbPool pool(dir.path(), DbOptions{}, clock, EventsDbPool::Size{1, holdable});
  CHECK(pool.capacity() == EventsDbPool::kDefaultCapacity);
  REQUIRE(pool.remove("0"));
  CHECK(pool.capacity() == holdable);
  const std::string made = webhooker::newUuid();
  REQUIRE(pool.getIfMade(made));  // no file made: not counted
  CHECK(pool.capacity() == holdable);
  getOrFail(pool, made);
  CHECK(pool.capacity() == EventsDbPool::kDefaultCapacity);
  REQUIRE(pool.remove(made));
  CHECK(pool.capacity() == holdable);
  REQUIRE(pool.install(webhooker::newUuid(), [](const std::filesystem::path& file) {
    std::ofstream(file) << "";
    return webhooker::Result<void>();
  }));
  CHECK(pool.capacity() == EventsDbPool::kDefaultCapacity);
  // A fixed size stays as it is.
  EventsDbPool fixed(dir.path(), DbOptions{}, clock, 5);
  CHECK(fixed.capacity() == 5);
}
