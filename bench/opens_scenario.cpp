// opens: what opening one closed events DB costs, the way a node with more
// webhooks than open files pays it for nearly every event (the pool's
// reopen, EventsDb::open) and recovery, the sweep and retention pay it for
// every quiet file (a read alone, EventsDb::unfinishedOfFileAlone). Each
// file holds one event with a pending delivery and is checkpointed, as the
// pool's closer leaves it. CPU µs of this thread per open, medians of
// passes over every file, the kinds alternated pass by pass, against a
// bare sqlite3_open_v2 and one SELECT of a row (which parses the schema),
// a bare open and close alone, and the bare open and SELECT of a file of
// one table, in the same run. And a read alone followed by the pool's
// reopen, of files the pool has closed (a quiet webhook's event after the
// sweep or retention read its file).
#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/scenarios.h"
#include "storage/events_db.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

double threadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// A bare connection: opened read-write, `sql` stepped once when given,
// closed without a checkpoint (leaving the WAL, empty, and the -shm).
void bareOpen(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
    throw std::runtime_error("bare open failed: " + file.string());
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (sql) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &q, nullptr) != SQLITE_OK || sqlite3_step(q) != SQLITE_ROW) {
      sqlite3_finalize(q);
      sqlite3_close(db);
      throw std::runtime_error("bare read failed: " + file.string());
    }
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
}

}  // namespace

void runOpens(const BenchConfig& config, Report& report) {
  const int files = config.smoke ? 20 : config.openFiles;
  const int passes = config.smoke ? 1 : 5;
  testing::TempDir dir;
  SystemClock clock;
  DbOptions options;
  // Each kind opens its own copies, so each sees the files as it leaves
  // them: the pool's reopen and the bare open keep an empty WAL and the
  // -shm (the pool's closer checkpoints, and no connection checkpoints on
  // close), the read alone leaves a file with no WAL, as it finds it.
  const auto seeded = dir.path() / "seeded.db";
  {
    if (auto made = EventsDb::create(seeded, options); !made)
      throw std::runtime_error(made.error().message);
    auto db = EventsDb::open(seeded, options, clock);
    if (!db) throw std::runtime_error(db.error().message);
    InboundEvent event{.entrypointId = "ep", .method = "POST", .path = "/", .query = "",
                       .headers = {{"Content-Type", "application/json"}},
                       .contentType = "application/json", .body = config.smallBodies.front(),
                       .remoteAddr = "127.0.0.1", .idempotencyKey = std::nullopt,
                       .eventType = std::nullopt};
    if (auto in = db.value()->ingest(event, {"target-1"}, std::chrono::hours(1)); !in)
      throw std::runtime_error(in.error().message);
    if (auto done = db.value()->checkpointWal(EventsDb::Wait::kForOthers); !done)
      throw std::runtime_error(done.error().message);
  }
  // The same row in a file of one table, in WAL mode: what the schema's
  // size adds to the bare open.
  const auto oneTable = dir.path() / "one-table.db";
  {
    sqlite3* bare = nullptr;
    sqlite3_open(oneTable.c_str(), &bare);
    const int made = sqlite3_exec(bare,
                                  "PRAGMA journal_mode = WAL; CREATE TABLE deliveries (id TEXT "
                                  "PRIMARY KEY, event_id TEXT); INSERT INTO deliveries "
                                  "VALUES ('d', 'e'); PRAGMA wal_checkpoint(TRUNCATE)",
                                  nullptr, nullptr, nullptr);
    sqlite3_close(bare);
    if (made != SQLITE_OK) throw std::runtime_error("making " + oneTable.string() + " failed");
  }
  const auto copies = [&](const std::filesystem::path& from, const std::string& name) {
    std::vector<std::filesystem::path> out;
    for (int i = 0; i < files; ++i) {
      out.push_back(dir.path() / (name + "-" + std::to_string(i) + ".db"));
      std::filesystem::copy_file(from, out.back());
    }
    return out;
  };
  // Files as the pool's closer leaves them: opened once for writing,
  // checkpointed, closed.
  const auto closedByThePool = [&](std::vector<std::filesystem::path> closed) {
    for (const auto& f : closed) {
      auto db = EventsDb::open(f, options, clock);
      if (!db) throw std::runtime_error(db.error().message);
      if (auto done = db.value()->checkpointWal(EventsDb::Wait::kForOthers); !done)
        throw std::runtime_error(done.error().message);
    }
    return closed;
  };
  std::vector<std::string> violations;

  // Each kind's CPU µs per open, one figure per pass.
  struct Kind {
    std::string name;
    std::function<void(const std::filesystem::path&)> open;
    std::vector<std::filesystem::path> files;
    std::vector<double> perOpen = {};
  };
  std::vector<Kind> kinds = {
      {"bare open+close", [](const auto& f) { bareOpen(f, nullptr); }, copies(seeded, "a")},
      {"bare open+SELECT+close",
       [](const auto& f) { bareOpen(f, "SELECT id FROM deliveries LIMIT 1"); },
       copies(seeded, "b")},
      {"bare open+SELECT+close, one-table file",
       [](const auto& f) { bareOpen(f, "SELECT id FROM deliveries LIMIT 1"); },
       copies(oneTable, "c")},
      {"recovery's read alone",
       [&](const auto& f) {
         auto rows = EventsDb::unfinishedOfFileAlone(f, clock.now(), std::nullopt);
         if (!rows || rows->rows.size() != 1)
           violations.push_back("the read alone did not find the one delivery of " + f.string());
       },
       copies(seeded, "d")},
      {"the pool's reopen (EventsDb::open+close)",
       [&](const auto& f) {
         auto db = EventsDb::open(f, options, clock);
         if (!db) violations.push_back("open failed: " + db.error().message);
       },
       copies(seeded, "e")},
      // A quiet file as the sweep, retention or the sampler find it once
      // the pool has closed it (an empty WAL and the -shm beside it), then
      // reopened by the pool for its next event: per file, both.
      {"a read alone of a file the pool closed, then its reopen",
       [&](const auto& f) {
         auto rows = EventsDb::unfinishedOfFileAlone(f, clock.now(), std::nullopt);
         if (!rows || rows->rows.size() != 1)
           violations.push_back("the read alone did not find the one delivery of " + f.string());
         auto db = EventsDb::open(f, options, clock);
         if (!db) violations.push_back("open failed: " + db.error().message);
       },
       closedByThePool(copies(seeded, "f"))},
  };
  for (int pass = 0; pass < passes; ++pass) {
    for (Kind& kind : kinds) {
      const double start = threadCpuMicros();
      for (const auto& f : kind.files) kind.open(f);
      kind.perOpen.push_back((threadCpuMicros() - start) / files);
    }
  }
  const double bare = median(kinds[1].perOpen);
  for (const Kind& kind : kinds)
    report.add({"opens", kind.name + ", CPU per file of " + std::to_string(files),
                median(kind.perOpen), "µs", bare, "bare open+SELECT", std::nullopt});
  report.addCheck("opens", std::move(violations));
}

}  // namespace webhooker::bench
