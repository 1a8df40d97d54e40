// GroupCommit on a real SQLite file: writers queued behind a running group
// share the next transaction (counted with SQLite's commit hook), a writer
// whose work fails is undone alone, and a group whose transaction cannot
// begin or commit fails every writer in it with nothing visible. Then the
// same for submitted writes, whose callers do not wait. Then the
// same through EventsDb::ingest: concurrent ingests are committed before
// they return, one idempotency key in one group makes one event.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/commit_threads.h"
#include "storage/events_db.h"
#include "storage/group_commit.h"
#include "storage/statement_cache.h"
#include "tests/support/db_file.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_vfs.h"
#include "tests/support/group_file.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using webhooker::Result;
using webhooker::SyncMode;
using webhooker::storage::Durability;
using webhooker::storage::GroupCommit;
using webhooker::storage::StatementCache;
using webhooker::testing::DbFile;
using webhooker::testing::TempDir;

int countCommit(void* commits) {
  ++*static_cast<std::atomic<int>*>(commits);
  return 0;  // 0: let the commit happen
}

// One connection with a group commit on it, a table with a UNIQUE column,
// and a count of the commits the connection made.
struct Fixture {
  TempDir dir;
  std::string file = (dir / "group.db").string();
  std::unique_ptr<SQLite::Database> db;
  webhooker::Mutex dbMutex;
  std::unique_ptr<StatementCache> statements;
  std::unique_ptr<GroupCommit> group;
  std::atomic<int> commits{0};

  explicit Fixture(const char* journalMode = "WAL", int busyTimeoutMs = 200,
                   SyncMode sync = SyncMode::kFull,
                   std::chrono::microseconds linger = GroupCommit::kLinger,
                   webhooker::storage::CommitThreads& threads =
                       webhooker::storage::CommitThreads::shared()) {
    db = std::make_unique<SQLite::Database>(
        file, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX, busyTimeoutMs);
    db->exec(std::string("PRAGMA journal_mode = ") + journalMode);
    db->exec(sync == SyncMode::kFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    db->exec("CREATE TABLE t (x INTEGER NOT NULL UNIQUE)");
    statements = std::make_unique<StatementCache>(*db);
    group = std::make_unique<GroupCommit>(*db, dbMutex, *statements, sync, linger, threads);
    sqlite3_commit_hook(db->getHandle(), countCommit, &commits);
  }
  ~Fixture() {
    sqlite3_commit_hook(db->getHandle(), nullptr, nullptr);
    group.reset();
    statements.reset();
  }

  static GroupCommit::Work insert(int x) {
    return [x](StatementCache& sql) -> Result<void> {
      auto q = sql.get("INSERT INTO t (x) VALUES (?)");
      q->bind(1, x);
      q->exec();
      return {};
    };
  }
  std::set<int> rows() {
    SQLite::Database reader(file, SQLite::OPEN_READONLY);
    SQLite::Statement q(reader, "SELECT x FROM t");
    std::set<int> out;
    while (q.executeStep()) out.insert(q.getColumn(0).getInt());
    return out;
  }
  // The connection's synchronous mode as the last commit left it; only
  // while no group runs.
  SyncMode synchronous() {
    return db->execAndGet("PRAGMA synchronous").getInt() == 2 ? SyncMode::kFull
                                                              : SyncMode::kNormal;
  }
  void waitUntilQueued(size_t n) {
    for (int i = 0; i < 5000 && group->waiting() < n; ++i) std::this_thread::sleep_for(1ms);
    REQUIRE(group->waiting() == n);
  }
};

// A first writer whose work waits inside its transaction until released,
// so that the writers started meanwhile queue up behind it.
struct Blocker {
  std::promise<void> release;
  std::future<Result<void>> done;

  explicit Blocker(GroupCommit& group, int x = 0) {
    auto released = release.get_future().share();
    done = std::async(std::launch::async, [&group, released, x] {
      return group.run("blocker", [released, x](StatementCache& sql) -> Result<void> {
        released.wait();
        auto q = sql.get("INSERT INTO t (x) VALUES (?)");
        q->bind(1, x);
        q->exec();
        return {};
      });
    });
  }
};

// Writers inserting `from`..`to`, each on its own thread.
std::vector<std::future<Result<void>>> startInserts(GroupCommit& group, int from, int to) {
  std::vector<std::future<Result<void>>> out;
  for (int x = from; x <= to; ++x)
    out.push_back(std::async(std::launch::async, [&group, x] {
      return group.run("test write", Fixture::insert(x));
    }));
  return out;
}

void checkAllBusy(std::vector<std::future<Result<void>>>& writers) {
  for (auto& w : writers) {
    const Result<void> r = w.get();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "storage_busy");
  }
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "a lone writer commits at once, in its own transaction") {
  REQUIRE(group->run("one", insert(1)).ok());
  CHECK(commits.load() == 1);
  CHECK(rows() == std::set<int>{1});
}

TEST_CASE_FIXTURE(Fixture, "writers queued behind a running group share the next commit") {
  Blocker blocker(*group);
  waitUntilQueued(1);
  auto writers = startInserts(*group, 1, 10);
  waitUntilQueued(11);
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  for (auto& w : writers) CHECK(w.get().ok());
  CHECK(commits.load() == 2);  // the blocker's group, then the ten together
  CHECK(rows().size() == 11);
}

// Bytes of page cache the connection holds now.
static int cacheUsed(SQLite::Database& db) {
  int current = 0, highest = 0;
  sqlite3_db_status(db.getHandle(), SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0);
  return current;
}

TEST_CASE_FIXTURE(Fixture, "a small group gives its page cache back after its commit; a large one keeps it") {
  // One write of many rows: a group of one, which read and wrote dozens of pages.
  REQUIRE(group->run("many rows", [](StatementCache& sql) -> Result<void> {
    for (int x = 1000; x < 4000; ++x) {
      auto q = sql.get("INSERT INTO t (x) VALUES (?)");
      q->bind(1, x);
      q->exec();
    }
    return {};
  }).ok());
  constexpr int kAboutOnePage = 8 * 1024;
  CHECK(cacheUsed(*db) <= kAboutOnePage);

  Blocker blocker(*group);
  waitUntilQueued(1);
  auto writers = startInserts(*group, 2, 11);
  waitUntilQueued(11);
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  for (auto& w : writers) CHECK(w.get().ok());
  CHECK(commits.load() == 3);  // the lone write, the blocker, then the ten together
  CHECK(cacheUsed(*db) > kAboutOnePage);  // kept for the next group of a busy file
  CHECK(rows().size() == 3011);
}

// The connection's PRAGMA cache_size (negative: KiB); only while no group runs.
static int cacheSize(SQLite::Database& db) {
  return db.execAndGet("PRAGMA cache_size").getInt();
}

// Ten writers queued behind a blocker: a group of ten after the blocker's
// (which writes `from` - 1).
static void commitGroupOfTen(Fixture& f, int from) {
  Blocker blocker(*f.group, from - 1);
  f.waitUntilQueued(1);
  auto writers = startInserts(*f.group, from, from + 9);
  f.waitUntilQueued(11);
  blocker.release.set_value();
  REQUIRE(blocker.done.get().ok());
  for (auto& w : writers) REQUIRE(w.get().ok());
}

TEST_CASE("a busy file's page cache grows, within the process's few; a quiet group gives it back") {
  webhooker::storage::CommitThreads threads(1, 1, /*busyCaches=*/1);
  Fixture busy("WAL", 200, SyncMode::kFull, GroupCommit::kLinger, threads);
  Fixture other("WAL", 200, SyncMode::kFull, GroupCommit::kLinger, threads);
  busy.db->exec("PRAGMA cache_size = -64");
  other.db->exec("PRAGMA cache_size = -64");

  commitGroupOfTen(busy, 1);
  CHECK(cacheSize(*busy.db) == -GroupCommit::kBusyCacheKiB);
  // The process's one busy cache is taken: the other file keeps its own.
  commitGroupOfTen(other, 1);
  CHECK(cacheSize(*other.db) == -64);

  // A group of one: the busy file is quiet again and gives its cache back.
  REQUIRE(busy.group->run("one", Fixture::insert(100)).ok());
  CHECK(cacheSize(*busy.db) == -64);
  commitGroupOfTen(other, 12);
  CHECK(cacheSize(*other.db) == -GroupCommit::kBusyCacheKiB);
  CHECK(busy.rows().size() == 12);
  CHECK(other.rows().size() == 22);
}

TEST_CASE_FIXTURE(Fixture, "a writer whose work fails is undone alone; its group commits") {
  Blocker blocker(*group);
  waitUntilQueued(1);
  const std::vector<GroupCommit::Work> works = {
      insert(1),
      insert(1),  // violates UNIQUE: sees the row the writer before it wrote
      [](StatementCache& sql) -> Result<void> {
        sql.get("INSERT INTO t (x) VALUES (3)")->exec();
        return webhooker::makeError("not_found", "undone after writing");
      },
      insert(2)};
  std::vector<std::future<Result<void>>> writers;
  for (const auto& work : works) {  // one at a time, so the queue keeps their order
    const size_t before = group->waiting();
    writers.push_back(std::async(std::launch::async, [this, &work] {
      return group->run("test write", work);
    }));
    waitUntilQueued(before + 1);
  }
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  CHECK(writers[0].get().ok());
  const Result<void> duplicate = writers[1].get();
  REQUIRE_FALSE(duplicate.ok());
  CHECK(duplicate.error().code == "storage_error");
  const Result<void> refused = writers[2].get();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "not_found");
  CHECK(writers[3].get().ok());
  CHECK(commits.load() == 2);
  CHECK(rows() == std::set<int>{0, 1, 2});
}

TEST_CASE_FIXTURE(Fixture, "a group runs each work once; after a failed one, the others run again") {
  // Counts the runs of each work, by the x it inserts.
  std::mutex runsMutex;
  std::map<int, int> runs;
  const auto counted = [&](int x, bool fail) -> GroupCommit::Work {
    return [&, x, fail](StatementCache& sql) -> Result<void> {
      {
        std::lock_guard lock(runsMutex);
        ++runs[x];
      }
      sql.get("INSERT INTO t (x) VALUES (" + std::to_string(x) + ")")->exec();
      if (fail) return webhooker::makeError("not_found", "undone after writing");
      return {};
    };
  };
  const auto runGroup = [&](std::vector<GroupCommit::Work> works) {
    Blocker blocker(*group);
    waitUntilQueued(1);
    std::vector<std::future<Result<void>>> writers;
    for (const auto& work : works) {
      const size_t before = group->waiting();
      writers.push_back(std::async(std::launch::async, [this, work] { return group->run("w", work); }));
      waitUntilQueued(before + 1);
    }
    blocker.release.set_value();
    REQUIRE(blocker.done.get().ok());
    std::vector<bool> ok;
    for (auto& w : writers) ok.push_back(w.get().ok());
    return ok;
  };

  SUBCASE("no work fails: each runs once") {
    CHECK(runGroup({counted(1, false), counted(2, false), counted(3, false)}) ==
          std::vector<bool>{true, true, true});
    CHECK(runs == std::map<int, int>{{1, 1}, {2, 1}, {3, 1}});
    CHECK(rows() == std::set<int>{0, 1, 2, 3});
  }
  SUBCASE("one fails: the group runs again, and only that one is undone") {
    CHECK(runGroup({counted(4, false), counted(5, true), counted(6, false)}) ==
          std::vector<bool>{true, false, true});
    // 6 ran once: the first pass stopped at the failure.
    CHECK(runs == std::map<int, int>{{4, 2}, {5, 2}, {6, 1}});
    CHECK(rows() == std::set<int>{0, 4, 6});
  }
}

TEST_CASE("a group whose transaction cannot begin fails every writer; nothing is written") {
  Fixture f("WAL", 100);
  SQLite::Database other(f.file, SQLite::OPEN_READWRITE);
  other.exec("BEGIN IMMEDIATE");  // holds the write lock past the busy timeout
  auto writers = startInserts(*f.group, 1, 6);
  checkAllBusy(writers);
  other.exec("ROLLBACK");
  CHECK(f.rows().empty());
  CHECK(f.group->run("after", Fixture::insert(7)).ok());
  CHECK(f.rows() == std::set<int>{7});
}

TEST_CASE("a group whose commit fails fails every writer; nothing of it is visible") {
  // In rollback-journal mode a reader's shared lock lets the group begin and
  // write, but blocks the commit until the busy timeout gives up.
  Fixture f("DELETE", 100);
  Blocker blocker(*f.group);
  f.waitUntilQueued(1);
  auto writers = startInserts(*f.group, 1, 5);
  f.waitUntilQueued(6);
  SQLite::Database reader(f.file, SQLite::OPEN_READONLY);
  reader.exec("BEGIN");
  CHECK(reader.execAndGet("SELECT COUNT(*) FROM t").getInt() == 0);  // takes the shared lock
  blocker.release.set_value();
  const Result<void> blocked = blocker.done.get();
  REQUIRE_FALSE(blocked.ok());
  CHECK(blocked.error().code == "storage_busy");
  checkAllBusy(writers);
  reader.exec("COMMIT");
  CHECK(f.rows().empty());
}

// Submitted writes: the caller does not wait; Done gets the result after
// the commit, on another thread.
struct Submitted {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<int, Result<void>>> results;  // (x, result), in the order Done ran
  std::set<std::thread::id> threads;

  GroupCommit::Done doneFor(int x) {
    return [this, x](Result<void> r) {
      std::lock_guard lock(mutex);
      results.emplace_back(x, std::move(r));
      threads.insert(std::this_thread::get_id());
      changed.notify_all();
    };
  }
  void waitFor(size_t n) {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, 10s, [&] { return results.size() >= n; }));
  }
};

TEST_CASE_FIXTURE(Fixture, "a submitted write returns at once and is reported once committed") {
  Submitted submitted;
  Blocker blocker(*group);
  waitUntilQueued(1);
  for (int x = 1; x <= 5; ++x) group->submit("test write", insert(x), submitted.doneFor(x));
  waitUntilQueued(6);  // submit() returned while the blocker's group still runs
  {
    std::lock_guard lock(submitted.mutex);
    CHECK(submitted.results.empty());
  }
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  submitted.waitFor(5);
  std::lock_guard lock(submitted.mutex);
  for (int i = 0; i < 5; ++i) {
    CHECK(submitted.results[static_cast<size_t>(i)].first == i + 1);  // queue order
    CHECK(submitted.results[static_cast<size_t>(i)].second.ok());
  }
  CHECK(submitted.threads.count(std::this_thread::get_id()) == 0);
  CHECK(commits.load() == 2);  // the blocker's group, then the five together
  CHECK(rows() == std::set<int>{0, 1, 2, 3, 4, 5});
}

TEST_CASE_FIXTURE(Fixture, "a submitted write that fails is reported failed; the others commit") {
  Submitted submitted;
  REQUIRE(group->run("first", insert(1)).ok());
  Blocker blocker(*group);
  waitUntilQueued(1);
  group->submit("test write", insert(1), submitted.doneFor(1));  // violates UNIQUE
  group->submit("test write", insert(2), submitted.doneFor(2));
  auto waiting = startInserts(*group, 3, 3);  // a waiting writer behind them
  waitUntilQueued(4);
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  CHECK(waiting[0].get().ok());
  submitted.waitFor(2);
  std::lock_guard lock(submitted.mutex);
  REQUIRE_FALSE(submitted.results[0].second.ok());
  CHECK(submitted.results[0].second.error().code == "storage_error");
  CHECK(submitted.results[1].second.ok());
  CHECK(rows() == std::set<int>{0, 1, 2, 3});
}

TEST_CASE_FIXTURE(Fixture, "a group of buffered writes commits without a disk flush; one flushed write makes its group flush") {
  // The mode each write's transaction runs (and so commits) under.
  std::mutex seenMutex;
  std::map<int, SyncMode> seen;
  const auto noting = [&](int x) -> GroupCommit::Work {
    return [&, x](StatementCache& sql) -> Result<void> {
      auto mode = sql.get("PRAGMA synchronous");
      const bool full = mode->executeStep() && mode->getColumn(0).getInt() == 2;
      std::lock_guard lock(seenMutex);
      seen[x] = full ? SyncMode::kFull : SyncMode::kNormal;
      return insert(x)(sql);
    };
  };
  Submitted submitted;
  group->submit("buffered", noting(1), submitted.doneFor(1), 0, Durability::kBuffered);
  submitted.waitFor(1);
  REQUIRE(group->run("flushed", noting(2)).ok());

  Blocker blocker(*group);
  waitUntilQueued(1);
  group->submit("buffered", noting(3), submitted.doneFor(3), 0, Durability::kBuffered);
  auto flushed = std::async(std::launch::async, [&] { return group->run("flushed", noting(4)); });
  waitUntilQueued(3);
  blocker.release.set_value();
  CHECK(blocker.done.get().ok());
  CHECK(flushed.get().ok());
  submitted.waitFor(2);
  CHECK(synchronous() == SyncMode::kFull);
  CHECK(rows() == std::set<int>{0, 1, 2, 3, 4});
  std::lock_guard lock(seenMutex);
  CHECK(seen == std::map<int, SyncMode>{{1, SyncMode::kNormal},
                                        {2, SyncMode::kFull},
                                        {3, SyncMode::kFull},  // its group held write 4
                                        {4, SyncMode::kFull}});
}

TEST_CASE("a connection left NORMAL by its last group flushes a commit made on it directly before that commit returns") {
  auto& vfs = webhooker::testing::FaultVfs::install();
  Fixture f;
  Submitted submitted;
  f.group->submit("buffered", Fixture::insert(1), submitted.doneFor(1), 0, Durability::kBuffered);
  submitted.waitFor(1);
  CHECK(f.synchronous() == SyncMode::kNormal);  // no switch back after the group

  const std::string wal = f.file + "-wal";
  const int before = vfs.syncsOf(wal);
  {
    webhooker::MutexLock lock(f.dbMutex);
    f.db->exec("INSERT INTO t (x) VALUES (2)");  // as a redrive or retention pass does
  }
  CHECK(vfs.syncsOf(wal) == before + 1);

  // A flush that fails is that commit's error, never its success.
  vfs.inject(f.file, webhooker::testing::FaultVfs::Fault::kSyncFails);
  {
    webhooker::MutexLock lock(f.dbMutex);
    CHECK_THROWS_AS(f.db->exec("INSERT INTO t (x) VALUES (3)"), SQLite::Exception);
  }
  vfs.clear();
  CHECK(f.group->run("flushed", Fixture::insert(4)).ok());
  CHECK(f.synchronous() == SyncMode::kFull);
}

namespace {

// Two buffered writes committed together: what a stream of writes leaves
// behind, and what lets the next buffered write linger.
void commitBufferedPair(Fixture& f, Submitted& submitted, int first) {
  Blocker blocker(*f.group);
  f.waitUntilQueued(1);
  for (int x = first; x < first + 2; ++x)
    f.group->submit("buffered", Fixture::insert(x), submitted.doneFor(x), 0, Durability::kBuffered);
  f.waitUntilQueued(3);
  blocker.release.set_value();
  REQUIRE(blocker.done.get().ok());
  submitted.waitFor(2);
}

size_t reported(Submitted& submitted) {
  std::lock_guard lock(submitted.mutex);
  return submitted.results.size();
}

}  // namespace

// The linger is a minute here, so whether a write waited for company or
// went at once cannot depend on how busy the machine is.
TEST_CASE("a buffered write that follows a group waits for company; a flushed write ends the wait at once") {
  Fixture f("WAL", 200, SyncMode::kFull, std::chrono::minutes(1));
  Submitted submitted;
  commitBufferedPair(f, submitted, 1);
  const int before = f.commits.load();

  f.group->submit("buffered", Fixture::insert(3), submitted.doneFor(3), 0, Durability::kBuffered);
  std::this_thread::sleep_for(200ms);
  CHECK(reported(submitted) == 2);  // still waiting: no commit yet
  CHECK(f.commits.load() == before);

  REQUIRE(f.group->run("flushed", Fixture::insert(4)).ok());
  submitted.waitFor(3);
  CHECK(f.commits.load() == before + 1);  // the waiting write and the flushed one together
  CHECK(f.rows() == std::set<int>{0, 1, 2, 3, 4});
}

TEST_CASE("buffered writes that reach the linger group go at once; a lone buffered write never waits") {
  Fixture f("WAL", 200, SyncMode::kFull, std::chrono::minutes(1));
  Submitted submitted;
  commitBufferedPair(f, submitted, 1);
  const int before = f.commits.load();
  const int last = 2 + static_cast<int>(GroupCommit::kLingerGroup);
  for (int x = 3; x <= last; ++x)
    f.group->submit("buffered", Fixture::insert(x), submitted.doneFor(x), 0, Durability::kBuffered);
  submitted.waitFor(GroupCommit::kLingerGroup + 2);  // within its 10 s, not the minute
  CHECK(f.commits.load() >= before + 1);

  // A fresh connection's first buffered write has no group before it.
  Fixture lone("WAL", 200, SyncMode::kFull, std::chrono::minutes(1));
  Submitted alone;
  lone.group->submit("buffered", Fixture::insert(1), alone.doneFor(1), 0, Durability::kBuffered);
  alone.waitFor(1);
  CHECK(lone.rows() == std::set<int>{1});
}

TEST_CASE("a connection opened with synchronous=NORMAL is never made to flush") {
  Fixture f("WAL", 200, SyncMode::kNormal);
  REQUIRE(f.group->run("flushed", Fixture::insert(1)).ok());
  CHECK(f.synchronous() == SyncMode::kNormal);
}

TEST_CASE("every submitted write is committed and reported before its group commit is gone") {
  Fixture f;
  Submitted submitted;
  {
    Blocker blocker(*f.group);
    f.waitUntilQueued(1);
    for (int x = 1; x <= 3; ++x) f.group->submit("test write", Fixture::insert(x), submitted.doneFor(x));
    blocker.release.set_value();
    CHECK(blocker.done.get().ok());
  }
  f.group.reset();
  std::lock_guard lock(submitted.mutex);
  CHECK(submitted.results.size() == 3);
  CHECK(f.rows() == std::set<int>{0, 1, 2, 3});
}

// One EventsDb on a fresh events file.
struct EventsFixture : DbFile {
  Result<std::shared_ptr<webhooker::EventsDb>> db =
      webhooker::EventsDb::open(file, webhooker::DbOptions{}, clock);

  EventsFixture() : DbFile("events-1.db") {}
};

TEST_CASE_FIXTURE(EventsFixture, "concurrent ingests are each committed before ingest returns") {
  REQUIRE(db.ok());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Another connection: it sees only what is committed.
      SQLite::Database reader(file.string(), SQLite::OPEN_READONLY);
      for (int i = 0; i < kPerThread; ++i) {
        webhooker::InboundEvent e;
        e.method = "POST";
        e.body = "event " + std::to_string(t) + "/" + std::to_string(i);
        auto r = db.value()->ingest(e, {"t1", "t2"}, 24h);
        if (!r) {
          ++failures;
          continue;
        }
        SQLite::Statement q(reader,
                            "SELECT (SELECT COUNT(*) FROM events WHERE id = ?1), "
                            "(SELECT COUNT(*) FROM deliveries WHERE event_id = ?1)");
        q.bind(1, r->eventId);
        q.executeStep();
        if (q.getColumn(0).getInt() != 1 || q.getColumn(1).getInt() != 2) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  SQLite::Database reader(file.string(), SQLite::OPEN_READONLY);
  CHECK(reader.execAndGet("SELECT COUNT(*) FROM events").getInt() == kThreads * kPerThread);
}

TEST_CASE_FIXTURE(EventsFixture, "ingests queued together with one idempotency key make one event") {
  REQUIRE(db.ok());
  // Another connection holds the write lock, so the ingests queue up behind
  // the first one and are written as one group once it lets go.
  SQLite::Database other(file.string(), SQLite::OPEN_READWRITE);
  other.exec("BEGIN IMMEDIATE");
  std::vector<std::future<Result<webhooker::IngestOutcome>>> ingests;
  for (int i = 0; i < 6; ++i)
    ingests.push_back(std::async(std::launch::async, [&] {
      webhooker::InboundEvent e;
      e.method = "POST";
      e.body = "same";
      e.idempotencyKey = "key-1";
      return db.value()->ingest(e, {"t1"}, 24h);
    }));
  for (int i = 0; i < 10'000 && db.value()->writesWaiting() < 6; ++i)
    std::this_thread::sleep_for(1ms);
  REQUIRE(db.value()->writesWaiting() == 6);
  other.exec("COMMIT");
  std::set<std::string> ids;
  int firsts = 0;
  for (auto& f : ingests) {
    auto r = f.get();
    REQUIRE(r.ok());
    ids.insert(r->eventId);
    REQUIRE(r->deliveries.size() == 1);
    if (!r->duplicate) ++firsts;
  }
  CHECK(ids.size() == 1);
  CHECK(firsts == 1);
  SQLite::Database reader(file.string(), SQLite::OPEN_READONLY);
  CHECK(reader.execAndGet("SELECT COUNT(*) FROM events").getInt() == 1);
  CHECK(reader.execAndGet("SELECT COUNT(*) FROM deliveries").getInt() == 1);
}

namespace {

size_t processThreads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

}  // namespace

TEST_CASE("submitted writes of many files queued meanwhile share one commit round") {
  TempDir dir;
  webhooker::storage::CommitThreads threads(1, 2);  // one commit thread: rounds follow each other
  webhooker::testing::GroupFile held(dir, "held.db", threads);
  std::vector<std::unique_ptr<webhooker::testing::GroupFile>> files;
  for (int i = 0; i < 20; ++i)
    files.push_back(std::make_unique<webhooker::testing::GroupFile>(
        dir, "file-" + std::to_string(i) + ".db", threads));
  std::promise<void> release;
  held.holdCommitThread(release.get_future().share());
  const auto before = threads.counts();
  std::vector<std::future<Result<void>>> results;
  for (int i = 0; i < 20; ++i) results.push_back(files[i]->submitInsert(i));
  release.set_value();
  for (auto& r : results) CHECK(r.get().ok());
  const auto after = threads.counts();
  CHECK(after.rounds == before.rounds + 1);
  CHECK(after.walFlushes == before.walFlushes + 20);  // each file's commit flushed its own WAL
  for (const auto& f : files) CHECK(f->rows() == 1);
}

TEST_CASE("open events DBs add no thread of their own") {
  TempDir dir;
  webhooker::testing::FakeClock clock;
  // The shared commit threads are running before the count starts.
  auto first = webhooker::EventsDb::open(dir / "events-first.db", webhooker::DbOptions{}, clock);
  REQUIRE(first.ok());
  std::promise<void> firstDone;
  first.value()->recordAttemptAsync({}, [&](Result<void>) { firstDone.set_value(); });
  firstDone.get_future().wait();
  const size_t before = processThreads();

  constexpr int kFiles = 50;
  std::vector<std::shared_ptr<webhooker::EventsDb>> dbs;
  std::vector<std::future<Result<webhooker::IngestOutcome>>> stored;
  for (int i = 0; i < kFiles; ++i) {
    auto db = webhooker::EventsDb::open(dir / ("events-" + std::to_string(i) + ".db"),
                                        webhooker::DbOptions{}, clock);
    REQUIRE(db.ok());
    auto done = std::make_shared<std::promise<Result<webhooker::IngestOutcome>>>();
    stored.push_back(done->get_future());
    webhooker::InboundEvent e;
    e.method = "POST";
    e.body = "event " + std::to_string(i);
    db.value()->ingestAsync(std::move(e), {"t1"}, 24h,
                            [done](Result<webhooker::IngestOutcome> r, webhooker::InboundEvent&) {
                              done->set_value(std::move(r));
                            });
    dbs.push_back(std::move(db.value()));
  }
  for (auto& s : stored) CHECK(s.get().ok());
  CHECK(processThreads() <= before);
}
