// GroupFile: a SQLite file in WAL mode under synchronous=FULL with a table
// t (x INTEGER, pad BLOB), and a GroupCommit on it led by the commit threads
// a test gives, so that a test decides which files share a round; one that
// journals has the commit journal's table too and its name as journal name.
// submitInsert() queues an insert and hands back its result; rows() counts
// what is visible to a fresh reader.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <future>
#include <memory>
#include <string>

#include "base/mutex.h"
#include "storage/commit_threads.h"
#include "storage/group_commit.h"
#include "storage/statement_cache.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

struct GroupFile {
  std::string path;
  std::unique_ptr<SQLite::Database> db;
  Mutex mutex;
  storage::StatementCache statements{*db};
  storage::GroupCommit group;

  enum class Journal { kNo, kYes };
  GroupFile(const TempDir& dir, const std::string& name, storage::CommitThreads& threads,
            Journal journal = Journal::kNo)
      : path((dir / name).string()),
        db(open(path, journal)),
        group(*db, mutex, statements, SyncMode::kFull, storage::GroupCommit::kLinger, threads,
              journal == Journal::kYes ? name : "") {}

  static std::unique_ptr<SQLite::Database> open(const std::string& path, Journal journal) {
    auto db = std::make_unique<SQLite::Database>(
        path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX);
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA synchronous = FULL");
    db->exec("CREATE TABLE t (x INTEGER PRIMARY KEY, pad BLOB)");
    if (journal == Journal::kYes) {
      db->exec("CREATE TABLE journal_position (position INTEGER NOT NULL)");
      db->exec("INSERT INTO journal_position VALUES (0)");
    }
    return db;
  }

  // Submits an insert of `x` with `padBytes` of padding; the future gets
  // its result.
  std::future<Result<void>> submitInsert(int x, int padBytes = 0) {
    auto result = std::make_shared<std::promise<Result<void>>>();
    auto answered = result->get_future();
    group.submit(
        "insert",
        [x, padBytes](storage::StatementCache& sql) -> Result<void> {
          auto q = sql.get("INSERT INTO t (x, pad) VALUES (?, zeroblob(?))");
          q->bind(1, x);
          q->bind(2, padBytes);
          q->exec();
          return {};
        },
        [result](Result<void> r) { result->set_value(std::move(r)); });
    return answered;
  }

  // Submits a write whose Done holds the commit thread that runs it until
  // `release` is set; returns once it does.
  void holdCommitThread(std::shared_future<void> release) {
    auto entered = std::make_shared<std::promise<void>>();
    auto running = entered->get_future();
    group.submit(
        "hold", [](storage::StatementCache&) -> Result<void> { return {}; },
        [entered, release](Result<void>) {
          entered->set_value();
          release.wait();
        });
    running.wait();
  }

  int64_t rows() const {
    SQLite::Database reader(path, SQLite::OPEN_READONLY);
    return reader.execAndGet("SELECT COUNT(*) FROM t").getInt64();
  }
};

}  // namespace webhooker::testing
