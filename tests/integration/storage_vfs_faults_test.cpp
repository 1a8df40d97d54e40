// Storage faults injected below SQLite (tests/support/fault_vfs.h) into one
// webhook's events DB, with the daemon's real ingest, engine and HTTP server
// in-process: a full disk and a file system gone read-only under an open
// handle answer 503 with a JSON error and store nothing; other webhooks go
// on; the first write after the fault clears succeeds; a delivery whose
// result could not be written is attempted again; a commit stuck in its
// flush holds up no admin view and none of the engine's reads of waiting
// deliveries, and its sender has no answer until the flush is done. A
// commit round over several files flushes each file's WAL, or, given a
// file-system flush, none of them and the file system once; when that flush
// fails each file is flushed alone and only a failing file's writers fail;
// given the commit journal, none of them and the journal once, each file
// flushed alone when the journal cannot take the round.
// storage_faults_test makes the full disk and the read-only file system
// happen for real (as root).
#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/commit_journal.h"
#include "storage/commit_threads.h"
#include "storage/file_system_flush.h"
#include "tests/support/engine_harness.h"
#include "tests/support/fault_vfs.h"
#include "tests/support/group_file.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using Fault = FaultVfs::Fault;
using nlohmann::json;

struct Answer {
  int status = -1;
  json body;
};

Answer postTo(const EngineHarness& harness, const Hook& hook, const std::string& body) {
  httplib::Client c("127.0.0.1", harness.port());
  c.set_read_timeout(std::chrono::seconds(10));
  auto res = c.Post("/hooks/" + hook.entrypointId, body, "application/json");
  if (!res) return {};
  return {res->status, json::parse(res->body, nullptr, false)};
}

int64_t rowsIn(const EngineHarness& harness, const Hook& hook, const std::string& table) {
  SQLite::Database db = openReadOnly(harness.eventsDbPath(hook.webhookId));
  return db.execAndGet("SELECT COUNT(*) FROM " + table).getInt64();
}

// A fault is cleared however the test ends: the VFS outlives every test.
struct InjectedFault {
  InjectedFault(const Hook& hook, Fault fault)
      : InjectedFault("events-" + hook.webhookId + ".db", fault) {}
  InjectedFault(const std::string& dbFile, Fault fault) { FaultVfs::install().inject(dbFile, fault); }
  ~InjectedFault() { clear(); }
  void clear() { FaultVfs::install().clear(); }
};

// An ingest of `body` to `hook` whose commit stops inside its flush, its
// frames written and the events DB's writer held, until clear(). The fault
// is cleared before the sender is joined, however the test ends.
class StalledIngest {
 public:
  StalledIngest(const EngineHarness& harness, const Hook& hook, std::string body)
      : fault_(hook, Fault::kStall), sender_([&harness, &hook, body = std::move(body), this] {
          status_ = postTo(harness, hook, body).status;
        }) {}
  ~StalledIngest() { clear(); }
  StalledIngest(const StalledIngest&) = delete;
  StalledIngest& operator=(const StalledIngest&) = delete;

  // Whether the commit reached its flush and waits there.
  static bool stalled() { return FaultVfs::install().waitForStalledSync(std::chrono::seconds(10)); }
  void clear() { fault_.clear(); }
  // The answer so far: -1 until there is one.
  int status() const { return status_.load(); }
  // The answer, once the commit may finish.
  int answer() {
    clear();
    sender_.join();
    return status_.load();
  }

 private:
  InjectedFault fault_;
  std::atomic<int> status_{-1};
  std::jthread sender_;  // last: joined before the members it writes go
};

// Runs `read` on a thread of its own while `ingest` holds the writer, checks
// that it answers meanwhile, then lets the commit finish and returns what
// was read.
template <typename Read>
auto readWhileStalled(StalledIngest& ingest, Read read) {
  auto reading = std::async(std::launch::async, std::move(read));
  const bool answered = reading.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  CHECK(answered);
  ingest.clear();  // whatever the read did, the commit may finish now
  return reading.get();
}

}  // namespace

TEST_CASE("ingest into an events DB that cannot be written answers 503 and stores nothing") {
  FaultVfs::install();  // before the harness opens any file
  for (const Fault fault : {Fault::kDiskFull, Fault::kReadOnly, Fault::kSyncFails}) {
    CAPTURE(static_cast<int>(fault));
    EngineHarness harness;
    const Hook shop = harness.createWebhook("shop");
    const Hook other = harness.createWebhook("other");
    harness.createTarget(shop.webhookId, "database", json::object());
    harness.createTarget(other.webhookId, "database", json::object());
    harness.post(shop.entrypointId, R"({"n": 1})");

    InjectedFault injected(shop, fault);
    const Answer refused = postTo(harness, shop, R"({"n": 2})");
    CHECK(refused.status == 503);
    CHECK(refused.body["error"]["code"] == "storage_unavailable");
    CHECK(refused.body["error"]["message"].is_string());
    harness.post(other.entrypointId, R"({"n": 3})");  // throws unless 200

    injected.clear();
    harness.post(shop.entrypointId, R"({"n": 4})");  // the same handle works again
    CHECK(rowsIn(harness, shop, "events") == 2);
    CHECK(rowsIn(harness, other, "events") == 1);
  }
}

TEST_CASE("a delivery whose result cannot be written is attempted again after the fault") {
  FaultVfs::install();
  Receiver receiver;
  EngineHarness harness;
  const Hook shop = harness.createWebhook("shop");
  harness.createHttpTarget(shop.webhookId, receiver.url("/orders"));
  receiver.push(respondAfter(std::chrono::milliseconds(500), 200));

  const std::string eventId = harness.post(shop.entrypointId, R"({"n": 1})");
  REQUIRE(receiver.waitForRequests(1, std::chrono::seconds(5)));
  InjectedFault injected(shop, Fault::kDiskFull);
  // The receiver answers 200 now; the result cannot be written, so the
  // delivery stays pending on disk and the sweep (200 ms here) brings it back:
  // a second request is the sign that the first answer was lost.
  REQUIRE(receiver.waitForRequests(2, std::chrono::seconds(10)));
  CHECK(rowsIn(harness, shop, "delivery_results") == 0);

  injected.clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rowsIn(harness, shop, "delivery_results") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  SQLite::Database db = openReadOnly(harness.eventsDbPath(shop.webhookId));
  CHECK(db.execAndGet("SELECT status FROM deliveries WHERE event_id = '" + eventId + "'")
            .getString() == "delivered");
  CHECK(rowsIn(harness, shop, "delivery_results") == 1);
  CHECK(receiver.requestCount() >= 2);  // at least once: the lost answer is asked again
}

TEST_CASE("a file SQLite can only open read-only is refused, and opened once it is writable") {
  FaultVfs::install();
  TempDir dir;
  SystemClock clock;
  const std::string webhookId = "6f1c3f52-8d1e-4b7a-9c51-2b1e0f6a7d10";
  REQUIRE(EventsDbPool(dir.path(), DbOptions{}, clock).get(webhookId));  // creates the file

  // A restarted daemon's pool meets the file while it cannot be written.
  EventsDbPool pool(dir.path(), DbOptions{}, clock);
  // Only the database file, as when it is immutable (chattr +i): its -wal
  // can still be written, so SQLite gets a working read-only handle.
  FaultVfs::install().inject("events-" + webhookId + ".db", Fault::kReadOnly, false);
  const auto refused = pool.get(webhookId);
  FaultVfs::install().clear();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == "storage_readonly");
  CHECK(pool.openCount() == 0);  // nothing broken is kept

  const auto db = pool.get(webhookId);
  REQUIRE(db);
  InboundEvent event;
  event.method = "POST";
  event.body = "{}";
  CHECK(db.value()->ingest(event, {}, std::chrono::hours(24)));
}

TEST_CASE("an admin write that finds the disk full answers 503 storage_unavailable, changes nothing") {
  FaultVfs::install();
  EngineHarness harness;
  const Hook shop = harness.createWebhook("shop");
  httplib::Client admin("127.0.0.1", harness.port());
  admin.set_bearer_token_auth(EngineHarness::kToken);
  const std::string webhook = "/api/v1/webhooks/" + shop.webhookId;
  const auto dumpMain = [&] { return dumpDatabase(harness.dataDir() / "webhooker.db"); };
  const std::string before = dumpMain();

  InjectedFault injected("webhooker.db", Fault::kDiskFull);
  std::vector<std::pair<std::string, Answer>> writes;
  const auto answerOf = [](const httplib::Result& res) {
    return res ? Answer{res->status, json::parse(res->body, nullptr, false)} : Answer{};
  };
  writes.emplace_back("create a webhook", answerOf(admin.Post("/api/v1/webhooks", R"({"name": "more"})",
                                                              "application/json")));
  writes.emplace_back("rename a webhook", answerOf(admin.Patch(webhook, R"({"name": "renamed"})",
                                                               "application/json")));
  writes.emplace_back("add a target",
                      answerOf(admin.Post(webhook + "/targets", R"({"name": "t", "type": "log"})",
                                          "application/json")));
  injected.clear();
  for (const auto& [what, answer] : writes) {
    const std::string& write = what;  // CAPTURE cannot refer to a binding with clang 14
    CAPTURE(write);
    CHECK(answer.status == 503);
    CHECK(answer.body["error"]["code"] == "storage_unavailable");
    CHECK(answer.body["error"]["message"].is_string());
  }
  CHECK(dumpMain() == before);
  // The same write goes through once there is space again.
  auto renamed = admin.Patch(webhook, R"({"name": "renamed"})", "application/json");
  REQUIRE(renamed);
  CHECK(renamed->status == 200);
}

TEST_CASE("/readyz answers 503 while the main DB cannot be written, 200 again after") {
  FaultVfs::install();
  EngineHarness harness;
  httplib::Client probe("127.0.0.1", harness.port());
  const auto readyz = [&] {
    auto res = probe.Get("/readyz");
    return res ? Answer{res->status, json::parse(res->body, nullptr, false)} : Answer{};
  };
  CHECK(readyz().status == 200);
  // The verdict is kept for a second (a probe writes): ask until it changes.
  InjectedFault injected("webhooker.db", Fault::kDiskFull);
  Answer failing;
  CHECK(eventually([&] { return (failing = readyz()).status == 503; }));
  CHECK(failing.body["status"] == "storage_unavailable");
  injected.clear();
  CHECK(eventually([&] { return readyz().status == 200; }));
}

TEST_CASE("the admin views answer while a commit holds the events DB's writer") {
  FaultVfs::install();
  EngineHarness harness;
  const Hook shop = harness.createWebhook("shop");
  harness.createTarget(shop.webhookId, "database", json::object());
  harness.post(shop.entrypointId, R"({"n": 1})");
  REQUIRE(harness.observer().waitForOutcomes(1, std::chrono::seconds(5)));
  const std::shared_ptr<EventsDb> db = harness.eventsDbs().get(shop.webhookId).value();

  StalledIngest second(harness, shop, R"({"n": 2})");
  REQUIRE(StalledIngest::stalled());

  // The second event's commit now holds the writer, its frames flushing.
  // Each view runs apart: were it read on the writer's connection, it would
  // wait for that commit, and the test would see no answer.
  struct Views {
    Result<WebhookStats> stats;
    Result<HistoryPage<EventRecord>> events;
  };
  const Views seen = readWhileStalled(second, [&] {
    return Views{db->stats(1), db->listEvents(HistoryFilter{}, 10, std::nullopt)};
  });
  REQUIRE(seen.stats);
  CHECK(seen.stats.value().events == 1);  // the second event is not committed yet
  CHECK(seen.stats.value().deliveries.delivered == 1);
  REQUIRE(seen.events);
  REQUIRE(seen.events.value().items.size() == 1);
  const std::string deliveryId = seen.events.value().items[0].deliveries.at(0).id;

  CHECK(second.answer() == 200);
  CHECK(db->stats(1).value().events == 2);
  CHECK(db->getDelivery(deliveryId).value().status == DeliveryStatus::kDelivered);
}

TEST_CASE("the engine's reads of waiting deliveries answer while a commit holds the writer") {
  FaultVfs::install();
  EngineHarness harness;
  Receiver receiver;
  receiver.setDefault(respond(503));
  const Hook shop = harness.createWebhook("shop");
  // One attempt, then a retry far beyond the test: the delivery waits.
  const TargetRecord target = harness.createHttpTarget(shop.webhookId, receiver.url(),
                                                       RetryPolicy{5, 3'600'000, 3'600'000, 0});
  const DeliveryRef waiting =
      harness.deliveryOf(shop.webhookId, harness.post(shop.entrypointId, R"({"n": 1})"), target.id);
  REQUIRE(harness.waitForStatus(waiting, "retrying", std::chrono::seconds(5)));
  const std::shared_ptr<EventsDb> db = harness.eventsDbs().get(shop.webhookId).value();

  StalledIngest second(harness, shop, R"({"n": 2})");
  REQUIRE(StalledIngest::stalled());

  // The second event's commit holds the writer, its frames flushing. A
  // refill, the sweep and the backlog sampler read meanwhile; on the
  // writer's connection they would wait for that commit.
  struct Reads {
    Result<std::vector<UnfinishedDelivery>> page;
    Result<std::optional<std::string>> nextTarget;
    Result<std::vector<EventsDb::BacklogCount>> backlog;
  };
  const Reads seen = readWhileStalled(second, [&] {
    DeliveryPosition cursor;
    return Reads{db->unfinishedDeliveries(&target.id, 10, &cursor), db->nextWaitingTarget(""),
                 db->backlogByTarget()};
  });
  // What was committed, not the second event's delivery still in flight.
  REQUIRE(seen.page);
  REQUIRE(seen.page.value().size() == 1);
  CHECK(seen.page.value()[0].id == waiting.id);
  CHECK(seen.page.value()[0].status == DeliveryStatus::kRetrying);
  REQUIRE(seen.nextTarget);
  CHECK(seen.nextTarget.value() == std::optional<std::string>(target.id));
  REQUIRE(seen.backlog);
  REQUIRE(seen.backlog.value().size() == 1);
  CHECK(seen.backlog.value()[0].status == DeliveryStatus::kRetrying);
  CHECK(seen.backlog.value()[0].count == 1);

  CHECK(second.answer() == 200);
}

TEST_CASE("an ingest is answered only once its commit is flushed to the disk") {
  FaultVfs::install();
  EngineHarness harness;
  const Hook shop = harness.createWebhook("shop");
  harness.post(shop.entrypointId, R"({"n": 1})");  // the events DB is open and written

  StalledIngest second(harness, shop, R"({"n": 2})");
  REQUIRE(StalledIngest::stalled());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(second.status() == -1);  // its commit waits for the flush, and so does the answer
  CHECK(second.answer() == 200);
  CHECK(rowsIn(harness, shop, "events") == 2);
}

}  // namespace webhooker::testing

namespace webhooker::testing {

// With the only commit thread of `held`'s CommitThreads held by `held`'s
// write, inserts into each of `files` (so that they share the next round;
// each row padded with `padBytes`),
// makes the first file's flushes fail, lets the round run and returns each
// insert's result; the fault is cleared on return.
static std::vector<Result<void>> roundWithFailingFlush(GroupFile& held,
                                                       const std::vector<GroupFile*>& files,
                                                       int padBytes = 0) {
  std::promise<void> release;
  held.holdCommitThread(release.get_future().share());
  std::vector<std::future<Result<void>>> answers;
  for (size_t i = 0; i < files.size(); ++i)
    answers.push_back(files[i]->submitInsert(static_cast<int>(i) + 1, padBytes));
  InjectedFault fault(std::filesystem::path(files[0]->path).filename(), Fault::kSyncFails);
  release.set_value();
  std::vector<Result<void>> results;
  for (auto& answer : answers) results.push_back(answer.get());
  return results;
}

TEST_CASE("a commit round over several files: a file whose flush fails fails its own writers") {
  FaultVfs::install();
  TempDir dir;
  storage::CommitThreads threads(1, 2);  // one commit thread: rounds follow each other
  GroupFile held(dir, "held.db", threads), failing(dir, "failing.db", threads),
      fine(dir, "fine.db", threads), alsoFine(dir, "also-fine.db", threads);

  const auto roundsBefore = threads.counts().rounds;
  const auto results = roundWithFailingFlush(held, {&failing, &fine, &alsoFine});
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].error().code == "storage_error");
  CHECK(results[1].ok());
  CHECK(results[2].ok());
  // `held`'s round, then the three files' in one.
  CHECK(threads.counts().rounds == roundsBefore + 2);
  CHECK(failing.rows() == 0);  // SQLite's failed commit: nothing of it visible
  CHECK(fine.rows() == 1);
  CHECK(alsoFine.rows() == 1);
  // The file takes writes again once its disk does.
  CHECK(failing.submitInsert(4).get().ok());
  CHECK(failing.rows() == 1);
}

TEST_CASE("a commit round answers none of its writers before every file's flush is done") {
  FaultVfs::install();
  TempDir dir;
  storage::CommitThreads threads(1, 2);
  GroupFile held(dir, "held.db", threads), stalled(dir, "stalled.db", threads),
      fine(dir, "fine.db", threads);
  std::promise<void> release;
  held.holdCommitThread(release.get_future().share());
  auto slow = stalled.submitInsert(1);
  auto quick = fine.submitInsert(2);
  InjectedFault fault("stalled.db", Fault::kStall);
  release.set_value();
  REQUIRE(FaultVfs::install().waitForStalledSync(std::chrono::seconds(10)));
  // `fine` is committed and flushed, but its writer waits for the round.
  CHECK(quick.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  CHECK(stalled.rows() == 0);  // not visible before its flush
  fault.clear();
  CHECK(slow.get().ok());
  CHECK(quick.get().ok());
  CHECK(stalled.rows() == 1);
}

// A file-system flush for a test's CommitThreads: the real one (syncfs of
// `dir`), counted, failing while `fails` is set, waiting while `hold` is.
struct CountedFileSystemFlush {
  std::unique_ptr<storage::FileSystemFlush> real;
  std::atomic<int> calls{0};
  std::atomic<bool> fails{false};
  std::shared_future<void> hold;

  explicit CountedFileSystemFlush(const TempDir& dir)
      : real(std::move(storage::FileSystemFlush::open(dir.path()).value())) {}
  storage::CommitThreads::FlushAll flushAll() {
    return [this]() -> Result<void> {
      ++calls;
      if (hold.valid()) hold.wait();
      if (fails) return makeError(error_code::kStorageError, "storage flush failed: EIO");
      return real->flush();
    };
  }
};

TEST_CASE("a commit round over several files flushes no file's WAL and the file system once") {
  FaultVfs& vfs = FaultVfs::install();
  TempDir dir;
  storage::CommitThreads threads(1, 2);
  CountedFileSystemFlush flush(dir);
  threads.flushFileSystemTogether(flush.flushAll());
  GroupFile held(dir, "held.db", threads), first(dir, "first.db", threads),
      second(dir, "second.db", threads);

  // A lone file's round flushes its own WAL, as without the file system's.
  const int heldSyncs = vfs.syncsOf("held.db-wal");
  REQUIRE(held.submitInsert(0).get().ok());
  CHECK(vfs.syncsOf("held.db-wal") == heldSyncs + 1);
  CHECK(flush.calls == 0);

  std::promise<void> release;
  held.holdCommitThread(release.get_future().share());
  const int firstSyncs = vfs.syncsOf("first.db-wal"), secondSyncs = vfs.syncsOf("second.db-wal");
  std::promise<void> flushed;
  flush.hold = flushed.get_future().share();
  auto one = first.submitInsert(1);
  auto two = second.submitInsert(2);
  release.set_value();
  // Both are committed (visible: see CommitThreads), but nobody is
  // answered before the file system's flush returns.
  for (int i = 0; i < 1000 && flush.calls == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(flush.calls == 1);
  CHECK(one.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  flushed.set_value();
  CHECK(one.get().ok());
  CHECK(two.get().ok());
  CHECK(flush.calls == 1);
  CHECK(vfs.syncsOf("first.db-wal") == firstSyncs);
  CHECK(vfs.syncsOf("second.db-wal") == secondSyncs);
  CHECK(threads.counts().fileSystemFlushes == 1);
  CHECK(first.rows() == 1);
  CHECK(second.rows() == 1);
}

TEST_CASE("a failed file-system flush flushes each file alone; a failing one fails its writers") {
  FaultVfs& vfs = FaultVfs::install();
  TempDir dir;
  storage::CommitThreads threads(1, 2);
  CountedFileSystemFlush flush(dir);
  flush.fails = true;
  threads.flushFileSystemTogether(flush.flushAll());
  GroupFile held(dir, "held.db", threads), failing(dir, "failing.db", threads),
      fine(dir, "fine.db", threads);

  const int fineSyncs = vfs.syncsOf("fine.db-wal");
  const auto results = roundWithFailingFlush(held, {&failing, &fine});
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].error().code == "storage_error");
  CHECK(results[1].ok());
  CHECK(flush.calls == 1);
  CHECK(vfs.syncsOf("fine.db-wal") == fineSyncs + 1);  // flushed alone
  // Committed before the flush, so visible though reported failed: its
  // sender is answered an error and sends again (at least once).
  CHECK(failing.rows() == 1);
  CHECK(fine.rows() == 1);
}

// Three files that journal, led by one commit thread (`held` holds it so
// that the others share the next round), and the smallest commit journal.
struct JournaledFiles {
  FaultVfs& vfs = FaultVfs::install();
  TempDir dir;
  storage::CommitThreads threads{1, 2};
  GroupFile held{dir, "held.db", threads, GroupFile::Journal::kYes};
  GroupFile first{dir, "first.db", threads, GroupFile::Journal::kYes};
  GroupFile second{dir, "second.db", threads, GroupFile::Journal::kYes};
  std::unique_ptr<storage::CommitJournal> journal;

  JournaledFiles() {
    auto opened = storage::CommitJournal::open(
        dir / "commit-journal", storage::CommitJournal::kMinBytes,
        [](const std::string&, const std::vector<storage::CommitJournal::Record>&) {
          return Result<void>{};
        });
    REQUIRE(opened.ok());
    journal = std::move(opened.value());
    threads.journalTogether(journal.get());
  }
  ~JournaledFiles() { threads.journalTogether(nullptr); }
};

TEST_CASE_FIXTURE(JournaledFiles,
                  "a commit round over several files writes the journal once and flushes no "
                  "file's WAL") {
  GroupFile alone(dir, "alone.db", threads);

  // A lone file's round flushes its own WAL, as without the journal.
  const int heldSyncs = vfs.syncsOf("held.db-wal");
  REQUIRE(held.submitInsert(0).get().ok());
  CHECK(vfs.syncsOf("held.db-wal") == heldSyncs + 1);
  CHECK(journal->counts().appends == 0);

  std::promise<void> release;
  held.holdCommitThread(release.get_future().share());
  const int firstSyncs = vfs.syncsOf("first.db-wal"), secondSyncs = vfs.syncsOf("second.db-wal"),
            aloneSyncs = vfs.syncsOf("alone.db-wal");
  auto one = first.submitInsert(1);
  auto two = second.submitInsert(2);
  auto three = alone.submitInsert(3);  // a file that does not journal flushes its own
  release.set_value();
  CHECK(one.get().ok());
  CHECK(two.get().ok());
  CHECK(three.get().ok());
  CHECK(journal->counts().appends == 1);
  CHECK(threads.counts().journalWrites == 1);
  CHECK(vfs.syncsOf("first.db-wal") == firstSyncs);
  CHECK(vfs.syncsOf("second.db-wal") == secondSyncs);
  CHECK(vfs.syncsOf("alone.db-wal") == aloneSyncs + 1);
  CHECK(first.rows() == 1);
  CHECK(second.rows() == 1);
  // Each journaled commit moved its file's journal position.
  CHECK(first.db->execAndGet("SELECT position FROM journal_position").getInt64() == 1);
}

TEST_CASE_FIXTURE(JournaledFiles,
                  "a round the journal cannot take flushes each file alone; a failing one fails "
                  "its writers") {
  // Two rows of 48 KB: more than a segment of the smallest ring.
  const int secondSyncs = vfs.syncsOf("second.db-wal");
  const auto results = roundWithFailingFlush(held, {&first, &second}, 48 * 1024);
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].error().code == "storage_error");
  CHECK(results[1].ok());
  CHECK(journal->counts().appends == 0);
  CHECK(vfs.syncsOf("second.db-wal") == secondSyncs + 1);  // flushed alone
  CHECK(first.rows() == 1);  // committed before, so visible: at least once
  CHECK(second.rows() == 1);
}

TEST_CASE_FIXTURE(JournaledFiles,
                  "the journal's ring is reused once the files it holds commits of are flushed") {
  // 40 rounds of two 16 KB rows: about 1.3 MB through a ring of 1 MB.
  for (int round = 0; round < 40; ++round) {
    std::promise<void> release;
    held.holdCommitThread(release.get_future().share());
    auto one = first.submitInsert(round, 16 * 1024);
    auto two = second.submitInsert(round, 16 * 1024);
    release.set_value();
    REQUIRE(one.get().ok());
    REQUIRE(two.get().ok());
  }
  CHECK(journal->counts().appends == 40);
  CHECK(journal->counts().fileFlushes >= 2);
  CHECK(journal->counts().folderFlushes == 0);
  CHECK(first.rows() == 40);
  CHECK(second.rows() == 40);
}

TEST_CASE_FIXTURE(JournaledFiles,
                  "a segment of the ring holding many files' commits is reused after one flush of "
                  "the folder's file system, not one of each file") {
  constexpr int kFiles = storage::CommitJournal::kFlushedAlone + 8;
  std::vector<std::unique_ptr<GroupFile>> files;
  for (int i = 0; i < kFiles; ++i)
    files.push_back(std::make_unique<GroupFile>(dir, "many-" + std::to_string(i) + ".db", threads,
                                                GroupFile::Journal::kYes));
  // 40 rounds of a 1 KB row in each file: about 1.6 MB through a ring of 1 MB.
  for (int round = 0; round < 40; ++round) {
    std::promise<void> release;
    held.holdCommitThread(release.get_future().share());
    std::vector<std::future<Result<void>>> results;
    for (auto& file : files) results.push_back(file->submitInsert(round, 1024));
    release.set_value();
    for (auto& result : results) REQUIRE(result.get().ok());
  }
  CHECK(journal->counts().appends == 40);
  CHECK(journal->counts().folderFlushes >= 1);
  CHECK(journal->counts().fileFlushes == 0);
  for (auto& file : files) CHECK(file->rows() == 40);
}

}  // namespace webhooker::testing
