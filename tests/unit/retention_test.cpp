// Retention: the periodic pass deletes events beyond a webhook's window
// (retention_days) and cap (max_events) with their deliveries and results,
// never one still pending or retrying, and gives the space back to the file
// system. Real SQLite files; a FakeClock stands in for the days going by.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/retention_pruner.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "storage/sqlite_database.h"
#include "tests/support/eventually.h"
#include "tests/support/ingested_event.h"
#include "tests/support/retention_folder.h"

namespace {

using namespace std::chrono_literals;
using webhooker::AttemptRecord;
using webhooker::EventsDb;
using webhooker::RetentionPruner;
using webhooker::Webhook;
using webhooker::testing::eventually;
using webhooker::testing::IngestedEvent;
using webhooker::testing::ingestEvent;
using webhooker::testing::RetentionFolder;
using Status = webhooker::DeliveryStatus;

constexpr auto kDay = std::chrono::hours(24);

struct Fixture : RetentionFolder {
  std::string createWebhook(int retentionDays, int64_t maxEvents = Webhook::kDefaultMaxEvents) {
    auto w = store->createWebhook("hook", "", retentionDays, maxEvents);
    REQUIRE(w.ok());
    REQUIRE(pool.get(w->id).ok());
    return w->id;
  }

  std::shared_ptr<EventsDb> db(const std::string& webhookId) {
    auto d = pool.get(webhookId);
    REQUIRE(d.ok());
    return d.value();
  }
};

// One attempt that leaves the delivery in `newStatus`.
void attempt(EventsDb& db, const std::string& deliveryId, Status newStatus) {
  AttemptRecord a;
  a.deliveryId = deliveryId;
  const auto current = db.getDelivery(deliveryId);  // the next attempt follows the recorded ones
  REQUIRE(current);
  a.attempt = current->attempts + 1;
  a.statusCode = newStatus == Status::kDelivered ? 200 : 503;
  a.success = newStatus == Status::kDelivered;
  a.newStatus = newStatus;
  if (newStatus == Status::kFailed) a.failureReason = webhooker::FailureKind::kMaxAttempts;
  REQUIRE(db.recordAttempt(a).ok());
}

int64_t count(const std::filesystem::path& file, const std::string& sql) {
  SQLite::Database raw(file.string(), SQLite::OPEN_READONLY);
  return raw.execAndGet(sql).getInt64();
}

bool hasEvent(const std::filesystem::path& file, const std::string& eventId) {
  return count(file, "SELECT COUNT(*) FROM events WHERE id = '" + eventId + "'") == 1;
}

// Polls (2 s at most) until the events DB holds `n` events.
bool waitForEvents(const std::filesystem::path& file, int64_t n) {
  for (int i = 0; i < 200; ++i) {
    if (count(file, "SELECT COUNT(*) FROM events") == n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

TEST_CASE("old finished events go with their deliveries and results; unfinished ones stay") {
  Fixture f;
  const std::string id = f.createWebhook(30);
  auto db = f.db(id);
  const auto file = f.pool.pathFor(id);

  const IngestedEvent delivered = ingestEvent(*db, "{}", 1);
  attempt(*db, delivered.deliveryIds[0], Status::kDelivered);
  const IngestedEvent failed = ingestEvent(*db, "{}", 2);
  attempt(*db, failed.deliveryIds[0], Status::kFailed);
  attempt(*db, failed.deliveryIds[1], Status::kDelivered);
  const IngestedEvent noTargets = ingestEvent(*db, "{}", 0);  // nothing to wait for: finished
  const IngestedEvent pending = ingestEvent(*db, "{}", 1);
  const IngestedEvent retrying = ingestEvent(*db, "{}", 1);
  attempt(*db, retrying.deliveryIds[0], Status::kRetrying);
  const IngestedEvent halfDone = ingestEvent(*db, "{}", 2);  // one final, one still pending
  attempt(*db, halfDone.deliveryIds[0], Status::kDelivered);

  f.clock.advance(2 * kDay);
  const IngestedEvent recent = ingestEvent(*db, "{}", 1);
  attempt(*db, recent.deliveryIds[0], Status::kDelivered);

  // 29 days after the first batch: nothing is old enough yet.
  f.clock.advance(27 * kDay);
  auto early = f.pass();
  CHECK(early.expired == 0);
  CHECK(count(file, "SELECT COUNT(*) FROM events") == 7);

  // 31 days: the finished events of the first batch go, however they ended.
  f.clock.advance(2 * kDay);
  auto stats = f.pass();
  CHECK(stats.expired == 3);
  CHECK(stats.overCap == 0);
  CHECK_FALSE(hasEvent(file, delivered.eventId));
  CHECK_FALSE(hasEvent(file, failed.eventId));
  CHECK_FALSE(hasEvent(file, noTargets.eventId));
  CHECK(hasEvent(file, pending.eventId));
  CHECK(hasEvent(file, retrying.eventId));
  CHECK(hasEvent(file, halfDone.eventId));
  CHECK(hasEvent(file, recent.eventId));
  // Deliveries and results went with their events, nothing else did.
  CHECK(count(file, "SELECT COUNT(*) FROM deliveries") == 5);
  CHECK(count(file, "SELECT COUNT(*) FROM deliveries WHERE event_id NOT IN "
                    "(SELECT id FROM events)") == 0);
  CHECK(count(file, "SELECT COUNT(*) FROM delivery_results") == 3);
  CHECK(count(file, "SELECT COUNT(*) FROM delivery_results WHERE delivery_id NOT IN "
                    "(SELECT id FROM deliveries)") == 0);

  // A year later the unfinished ones are still there; once finished they go.
  f.clock.advance(365 * kDay);
  CHECK(f.pass().expired == 1);  // `recent`
  CHECK(hasEvent(file, pending.eventId));
  CHECK(hasEvent(file, retrying.eventId));
  CHECK(hasEvent(file, halfDone.eventId));
  attempt(*db, pending.deliveryIds[0], Status::kDelivered);
  attempt(*db, retrying.deliveryIds[0], Status::kFailed);
  CHECK(f.pass().expired == 2);
  CHECK(hasEvent(file, halfDone.eventId));
  attempt(*db, halfDone.deliveryIds[1], Status::kFailed);
  CHECK(f.pass().expired == 1);
  CHECK(count(file, "SELECT COUNT(*) FROM events") == 0);
  CHECK(count(file, "SELECT COUNT(*) FROM deliveries") == 0);
  CHECK(count(file, "SELECT COUNT(*) FROM delivery_results") == 0);
}

TEST_CASE("each webhook keeps its own retention window") {
  Fixture f;
  const std::string week = f.createWebhook(7);
  const std::string month = f.createWebhook(30);
  const IngestedEvent inWeek = ingestEvent(*f.db(week), "{}", 0);
  const IngestedEvent inMonth = ingestEvent(*f.db(month), "{}", 0);
  f.clock.advance(8 * kDay);
  CHECK(f.pass().expired == 1);
  CHECK_FALSE(hasEvent(f.pool.pathFor(week), inWeek.eventId));
  CHECK(hasEvent(f.pool.pathFor(month), inMonth.eventId));

  // A shorter window set later applies on the next pass.
  webhooker::WebhookPatch patch;
  patch.retentionDays = 5;
  REQUIRE(f.store->updateWebhook(month, patch).ok());
  CHECK(f.pass().expired == 1);
  CHECK_FALSE(hasEvent(f.pool.pathFor(month), inMonth.eventId));
}

TEST_CASE("max_events removes the oldest finished events first") {
  Fixture f;
  const std::string id = f.createWebhook(30, 5);
  auto db = f.db(id);
  const auto file = f.pool.pathFor(id);
  std::vector<IngestedEvent> events;
  for (int i = 0; i < 9; ++i) {
    events.push_back(ingestEvent(*db, "{}", 1));
    f.clock.advance(1min);
  }
  // The two oldest are unfinished: they are stepped over, not counted out.
  attempt(*db, events[1].deliveryIds[0], Status::kRetrying);
  for (size_t i = 2; i < events.size(); ++i)
    attempt(*db, events[i].deliveryIds[0], i % 2 ? Status::kDelivered : Status::kFailed);

  auto stats = f.pass();
  CHECK(stats.expired == 0);
  CHECK(stats.overCap == 4);
  CHECK(count(file, "SELECT COUNT(*) FROM events") == 5);
  CHECK(hasEvent(file, events[0].eventId));  // pending
  CHECK(hasEvent(file, events[1].eventId));  // retrying
  for (size_t i = 2; i < 6; ++i) CHECK_FALSE(hasEvent(file, events[i].eventId));
  for (size_t i = 6; i < 9; ++i) CHECK(hasEvent(file, events[i].eventId));
  CHECK(count(file, "SELECT COUNT(*) FROM deliveries") == 5);
  CHECK(count(file, "SELECT COUNT(*) FROM delivery_results") == 4);

  // At the cap nothing more goes; with only unfinished events left beyond
  // it, nothing can.
  CHECK(f.pass().overCap == 0);
  webhooker::WebhookPatch patch;
  patch.maxEvents = 1;
  REQUIRE(f.store->updateWebhook(id, patch).ok());
  CHECK(f.pass().overCap == 3);
  CHECK(count(file, "SELECT COUNT(*) FROM events") == 2);
  CHECK(hasEvent(file, events[0].eventId));
  CHECK(hasEvent(file, events[1].eventId));
}

TEST_CASE("the cap works through more events than one batch") {
  Fixture f;
  const std::string id = f.createWebhook(30, 100);
  auto db = f.db(id);
  for (int i = 0; i < 1300; ++i) ingestEvent(*db, "{}", 0);
  CHECK(f.pass().overCap == 1200);
  CHECK(count(f.pool.pathFor(id), "SELECT COUNT(*) FROM events") == 100);
  f.clock.advance(31 * kDay);
  CHECK(f.pass().expired == 100);
}

TEST_CASE("pruning gives the space back: the file shrinks") {
  Fixture f;
  const std::string id = f.createWebhook(30);
  auto db = f.db(id);
  const auto file = f.pool.pathFor(id);
  CHECK(count(file, "PRAGMA auto_vacuum") == 2);  // INCREMENTAL: space can be given back

  const std::string body(16 * 1024, 'x');
  for (int i = 0; i < 300; ++i) {
    const IngestedEvent s =
        ingestEvent(*db, "{\"n\": " + std::to_string(i) + ", \"pad\": \"" + body + "\"}", 1);
    attempt(*db, s.deliveryIds[0], Status::kDelivered);
  }
  f.clock.advance(1min);
  const IngestedEvent kept = ingestEvent(*db, "{\"kept\": true}", 1);
  // Everything in the file itself, so the sizes compare like for like.
  REQUIRE(db->reclaimSpace().ok());
  const auto before = std::filesystem::file_size(file);
  CHECK(before > 4'000'000);

  f.clock.advance(30 * kDay + 30s);
  CHECK(f.pass().expired == 300);
  const auto after = std::filesystem::file_size(file);
  const std::string wal = file.string() + "-wal";
  CHECK((!std::filesystem::exists(wal) || std::filesystem::file_size(wal) == 0));
  CAPTURE(before);
  CAPTURE(after);
  CHECK(after < before / 20);
  CHECK(hasEvent(file, kept.eventId));
}

TEST_CASE("a pass leaves an idle webhook untouched and skips one whose events DB was removed") {
  Fixture f;
  const std::string idle = f.createWebhook(30);
  const std::string removed = f.createWebhook(30);
  ingestEvent(*f.db(idle), "{}", 0);
  // The store still lists it (a pass that listed it just before the delete).
  REQUIRE(f.pool.remove(removed).ok());
  f.clock.advance(1 * kDay);
  auto stats = f.pass();
  CHECK(stats.webhooks == 1);
  CHECK(stats.expired == 0);
  CHECK_FALSE(std::filesystem::exists(f.pool.pathFor(removed)));
  CHECK(count(f.pool.pathFor(idle), "SELECT COUNT(*) FROM events") == 1);
}

TEST_CASE("a pass takes no write lock of an open events DB with nothing to prune") {
  Fixture f;
  const std::string id = f.createWebhook(30);
  ingestEvent(*f.db(id), "{}", 0);
  f.clock.advance(1 * kDay);
  // Another connection holds the file's write lock for the whole pass: a
  // pass that began a write would wait for it, then fail.
  SQLite::Database other(f.pool.pathFor(id).string(), SQLite::OPEN_READWRITE);
  SQLite::Transaction held(other, SQLite::TransactionBehavior::IMMEDIATE);
  REQUIRE(f.pool.peek(id).open != nullptr);
  auto stats = f.pass();
  CHECK(stats.webhooks == 1);
  CHECK(stats.expired == 0);
  CHECK(count(f.pool.pathFor(id), "SELECT COUNT(*) FROM events") == 1);
}

TEST_CASE("a pass reads a closed events DB alone, and opens it only when something is to go") {
  Fixture f;
  const std::string expiring = f.createWebhook(30);
  const std::string overCap = f.createWebhook(30, 1);
  const std::string idle = f.createWebhook(30);
  for (const std::string& id : {expiring, overCap, idle}) {
    auto db = f.db(id);
    attempt(*db, ingestEvent(*db, "{}", 1).deliveryIds[0], Status::kDelivered);
    if (id == overCap) attempt(*db, ingestEvent(*db, "{}", 1).deliveryIds[0], Status::kDelivered);
    db.reset();
    f.pool.letGo(id);
    // The pool's closer lets go of the file shortly after.
    REQUIRE(eventually([&] { return webhooker::storage::openAlone(f.pool.pathFor(id)).ok(); }));
  }
  const uint64_t idleClosings = f.pool.peek(idle).closings;
  f.clock.advance(29 * kDay);

  auto stats = f.pass();
  CHECK(stats.webhooks == 3);
  CHECK(stats.expired == 0);
  CHECK(stats.overCap == 1);
  // Only the DB with an event to remove was opened through the pool.
  CHECK(f.pool.peek(overCap).open != nullptr);
  CHECK(f.pool.peek(expiring).open == nullptr);
  CHECK(f.pool.peek(idle).open == nullptr);
  CHECK(f.pool.peek(idle).closings == idleClosings);
  CHECK(count(f.pool.pathFor(overCap), "SELECT COUNT(*) FROM events") == 1);

  f.clock.advance(2 * kDay);
  stats = f.pass();
  CHECK(stats.expired == 3);
  CHECK(f.pool.peek(expiring).open != nullptr);
  CHECK(count(f.pool.pathFor(expiring), "SELECT COUNT(*) FROM events") == 0);
  CHECK(count(f.pool.pathFor(idle), "SELECT COUNT(*) FROM events") == 0);
}

TEST_CASE("the pruner thread runs a pass at start and then every interval") {
  Fixture f;
  const std::string id = f.createWebhook(1);
  ingestEvent(*f.db(id), "{}", 0);
  f.clock.advance(2 * kDay);
  RetentionPruner threaded(*f.store, f.pool, 50ms);
  threaded.start();
  const auto file = f.pool.pathFor(id);
  CHECK(waitForEvents(file, 0));
  ingestEvent(*f.db(id), "{}", 0);
  f.clock.advance(2 * kDay);
  CHECK(waitForEvents(file, 0));  // a later pass, without being asked
  threaded.stop();
}

TEST_CASE("the pass at start-up runs at once, not after the first interval") {
  Fixture f;
  const std::string id = f.createWebhook(1);
  ingestEvent(*f.db(id), "{}", 0);
  f.clock.advance(2 * kDay);
  RetentionPruner pruner(*f.store, f.pool, std::chrono::hours(1));
  pruner.start();
  CHECK(waitForEvents(f.pool.pathFor(id), 0));
  pruner.stop();
}
