// The commit journal with real events DBs and the process's commit threads:
// a round over several files is recorded in it, and after a power loss
// (played by putting back each file as it was when last flushed, its WAL
// gone) the next open gives each file back exactly what it lost: events,
// deliveries and attempt results, never a row a later write of the file
// removed, never a torn record. A clean close leaves nothing to replay.
#include "storage/commit_journal.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "storage/commit_threads.h"
#include "storage/events_db.h"
#include "tests/support/fake_clock.h"
#include "tests/support/group_file.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using storage::CommitJournal;

InboundEvent eventWithBody(const std::string& body) {
  InboundEvent e;
  e.entrypointId = "ep";
  e.method = "POST";
  e.path = "/hooks/ep";
  e.contentType = "application/json";
  e.body = body;
  return e;
}

std::string readAll(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A node's data folder: events files, the journal the process's commit
// threads use, and each file's bytes as of its last flush.
struct Node {
  TempDir dir;
  FakeClock clock;
  std::unique_ptr<CommitJournal> journal;
  std::map<std::string, std::shared_ptr<EventsDb>> dbs;
  std::map<std::string, std::string> flushed;

  Node() { openJournal(); }
  ~Node() { storage::useCommitJournal(nullptr); }

  void openJournal() {
    auto opened = CommitJournal::open(
        dir / "commit-journal", CommitJournal::kMinBytes,
        [this](const std::string& file, const std::vector<CommitJournal::Record>& records) {
          return EventsDb::applyJournal(dir / file, DbOptions{}, records);
        });
    REQUIRE_MESSAGE(opened.ok(), (opened.ok() ? "" : opened.error().message));
    journal = std::move(opened.value());
    storage::useCommitJournal(journal.get());
  }
  // The process dies with the journal unclosed.
  void dropJournal() {
    storage::useCommitJournal(nullptr);
    journal.reset();
  }

  EventsDb& db(const std::string& name) {
    auto& db = dbs[name];
    if (!db) db = EventsDb::open(dir / name, DbOptions{}, clock).value();
    return *db;
  }
  // What the file holds now is on disk: a power loss from here on takes
  // what is written after.
  void markFlushed(const std::string& name) {
    REQUIRE(db(name).checkpointWal(EventsDb::Wait::kForOthers).value());
    flushed[name] = readAll(dir / name);
  }
  // Power loss: the files as last flushed, their WALs lost.
  void loseUnflushed(const std::string& name) {
    dbs.erase(name);
    writeAll(dir / name, flushed.at(name));
    std::filesystem::remove(dir / (name + "-wal"));
    std::filesystem::remove(dir / (name + "-shm"));
  }
  int64_t count(const std::string& name, const std::string& sql) {
    SQLite::Database raw((dir / name).string(), SQLite::OPEN_READONLY);
    return raw.execAndGet(sql).getInt64();
  }
};

// Both of the process's commit threads held, so that the writes submitted
// meanwhile share the round after.
struct HeldCommitThreads {
  TempDir dir;
  GroupFile one{dir, "hold-1.db", storage::CommitThreads::shared()};
  GroupFile two{dir, "hold-2.db", storage::CommitThreads::shared()};
  std::promise<void> release;

  HeldCommitThreads() {
    const std::shared_future<void> go = release.get_future().share();
    one.holdCommitThread(go);
    two.holdCommitThread(go);
  }
  ~HeldCommitThreads() { let(); }
  void let() {
    if (!released) release.set_value();
    released = true;
  }
  bool released = false;
};

TEST_CASE("replay gives each file what a power loss took, and nothing a later write removed") {
  Node node;
  const std::vector<std::string> files = {"events-a.db", "events-b.db", "events-c.db"};
  std::map<std::string, std::string> firstDelivery;
  for (const auto& f : files) {
    auto first = node.db(f).ingest(eventWithBody(R"({"n":1})"), {"t1"}, std::chrono::hours(1));
    REQUIRE(first.ok());
    firstDelivery[f] = first.value().deliveries.at(0).id;
    node.markFlushed(f);
  }

  // One round: in each file the first delivery's result and a second event.
  std::map<std::string, std::string> secondEvent;
  {
    HeldCommitThreads held;
    std::vector<std::future<Result<void>>> results;
    std::vector<std::future<Result<IngestOutcome>>> ingests;
    for (const auto& f : files) {
      AttemptRecord attempt;
      attempt.deliveryId = firstDelivery[f];
      attempt.statusCode = 200;
      attempt.success = true;
      auto result = std::make_shared<std::promise<Result<void>>>();
      results.push_back(result->get_future());
      node.db(f).recordAttemptAsync(attempt, [result](Result<void> r) { result->set_value(r); });
      auto ingest = std::make_shared<std::promise<Result<IngestOutcome>>>();
      ingests.push_back(ingest->get_future());
      node.db(f).ingestAsync(
          eventWithBody(R"({"n":2})"), {"t1"}, std::chrono::hours(1),
          [ingest](Result<IngestOutcome> r, InboundEvent&) { ingest->set_value(std::move(r)); });
    }
    held.let();
    for (auto& r : results) REQUIRE(r.get().ok());
    for (size_t i = 0; i < files.size(); ++i) {
      auto outcome = ingests[i].get();
      REQUIRE(outcome.ok());
      secondEvent[files[i]] = outcome.value().eventId;
    }
  }
  REQUIRE(node.journal->counts().appends == 1);

  // c's second event is then removed by a write of its own (as retention
  // would), flushed.
  node.dbs.erase("events-c.db");
  {
    SQLite::Database c((node.dir / "events-c.db").string(), SQLite::OPEN_READWRITE);
    c.exec("PRAGMA foreign_keys = ON");
    c.exec("DELETE FROM events WHERE id = '" + secondEvent["events-c.db"] + "'");
  }
  // b's record is torn: a byte of its changeset flipped.
  std::string journal = readAll(node.dir / "commit-journal");
  const size_t bName = journal.find("events-b.db");
  REQUIRE(bName != std::string::npos);
  journal[bName + 20] = static_cast<char>(journal[bName + 20] ^ 0x5a);
  node.dropJournal();
  writeAll(node.dir / "commit-journal", journal);
  node.loseUnflushed("events-a.db");
  node.loseUnflushed("events-b.db");
  node.dbs.clear();
  REQUIRE(node.count("events-a.db", "SELECT COUNT(*) FROM events") == 1);

  node.openJournal();
  // a: its round is back, the result and the event with its delivery.
  CHECK(node.count("events-a.db", "SELECT COUNT(*) FROM events") == 2);
  CHECK(node.count("events-a.db", "SELECT COUNT(*) FROM deliveries WHERE event_id = '" +
                                      secondEvent["events-a.db"] + "' AND status = 'pending'") ==
        1);
  CHECK(node.count("events-a.db", "SELECT attempts FROM deliveries WHERE id = '" +
                                      firstDelivery["events-a.db"] + "'") == 1);
  CHECK(node.count("events-a.db", "SELECT COUNT(*) FROM delivery_results") == 1);
  CHECK(node.count("events-a.db", "SELECT position FROM journal_position") == 1);
  // b: a torn record is no record; b stays as last flushed.
  CHECK(node.count("events-b.db", "SELECT COUNT(*) FROM events") == 1);
  CHECK(node.count("events-b.db", "SELECT COUNT(*) FROM delivery_results") == 0);
  // c: had the round; its removed event stays removed.
  CHECK(node.count("events-c.db", "SELECT COUNT(*) FROM events") == 1);
  CHECK(node.count("events-c.db", "SELECT COUNT(*) FROM delivery_results") == 1);
}

TEST_CASE("after a clean close the journal replays nothing written before") {
  Node node;
  const std::vector<std::string> files = {"events-a.db", "events-b.db"};
  for (const auto& f : files) {
    REQUIRE(node.db(f).ingest(eventWithBody("{}"), {"t1"}, std::chrono::hours(1)).ok());
    node.markFlushed(f);
  }
  {
    HeldCommitThreads held;
    std::vector<std::future<Result<IngestOutcome>>> ingests;
    for (const auto& f : files) {
      auto ingest = std::make_shared<std::promise<Result<IngestOutcome>>>();
      ingests.push_back(ingest->get_future());
      node.db(f).ingestAsync(
          eventWithBody("{}"), {"t1"}, std::chrono::hours(1),
          [ingest](Result<IngestOutcome> r, InboundEvent&) { ingest->set_value(std::move(r)); });
    }
    held.let();
    for (auto& i : ingests) REQUIRE(i.get().ok());
  }
  REQUIRE(node.journal->counts().appends == 1);
  node.dbs.clear();
  storage::useCommitJournal(nullptr);
  REQUIRE(node.journal->close().ok());
  node.journal.reset();
  // Put back as if lost (which a clean close rules out): nothing is replayed.
  node.loseUnflushed("events-a.db");
  node.openJournal();
  CHECK(node.count("events-a.db", "SELECT COUNT(*) FROM events") == 1);
  CHECK(node.count("events-b.db", "SELECT COUNT(*) FROM events") == 2);
}

TEST_CASE("a file that is not a whole journal is refused and left as it was") {
  TempDir dir;
  writeAll(dir / "commit-journal", std::string(CommitJournal::kMinBytes, 'x'));
  auto opened = CommitJournal::open(
      dir / "commit-journal", CommitJournal::kMinBytes,
      [](const std::string&, const std::vector<CommitJournal::Record>&) { return Result<void>{}; });
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.error().code == "storage_error");
  CHECK(readAll(dir / "commit-journal") == std::string(CommitJournal::kMinBytes, 'x'));
  auto small = CommitJournal::open(
      dir / "other", 4096,
      [](const std::string&, const std::vector<CommitJournal::Record>&) { return Result<void>{}; });
  REQUIRE_FALSE(small.ok());
  CHECK_FALSE(std::filesystem::exists(dir / "other"));
}

}  // namespace
}  // namespace webhooker::testing
