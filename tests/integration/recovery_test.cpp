// Recovery: what the engine finds on disk when it starts (pending now,
// retrying after the *remaining* backoff, deliveries of deleted targets
// failed as target_deleted), the sweep that never schedules a delivery
// twice, a backlog larger than a lane's queue that refills itself without
// the sweep, paused targets, and a kill -9 of the real daemon in the middle of
// a backoff.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db.h"
#include "storage/sqlite_database.h"
#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/expect_json.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_clock.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

InboundEvent eventWithBody(const Hook& hook, const std::string& body) {
  InboundEvent e;
  e.entrypointId = hook.entrypointId;
  e.method = "POST";
  e.path = "/hooks/" + hook.entrypointId;
  e.headers = {{"Content-Type", "application/json"}};
  e.contentType = "application/json";
  e.body = body;
  e.remoteAddr = "127.0.0.1";
  return e;
}

// Writes delivery `d`'s first attempt as made at `at`, answered
// `statusCode` and retrying at `nextAttemptAt`: what a daemon that died
// during the wait leaves on disk.
void recordFirstAttempt(const EngineHarness& h, const DeliveryRef& d, int statusCode,
                        TimePoint at, TimePoint nextAttemptAt) {
  const FakeClock then(at);
  auto db = EventsDb::open(h.eventsDbPath(d.webhookId), DbOptions{}, then);
  REQUIRE(db);
  AttemptRecord a;
  a.deliveryId = d.id;
  a.attempt = 1;
  a.statusCode = statusCode;
  a.durationMs = 4;
  a.newStatus = DeliveryStatus::kRetrying;
  a.nextAttemptAt = nextAttemptAt;
  REQUIRE(db.value()->recordAttempt(a));
}

// The arrival of the request whose body is `body`; throws if none came.
SteadyTime arrivalOf(const Receiver& r, const std::string& body) {
  for (const ReceivedRequest& req : r.requests())
    if (req.body == body) return req.at;
  throw std::runtime_error("no request with body " + body);
}

// Every value of every row of every table, as text: a string absent from
// this is nowhere in the file's rows.
std::string allText(const std::filesystem::path& file) {
  SQLite::Database db = openReadOnly(file);
  std::string out;
  SQLite::Statement tables(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    SQLite::Statement rows(db, "SELECT * FROM \"" + table + "\"");
    while (rows.executeStep())
      for (int i = 0; i < rows.getColumnCount(); ++i)
        if (!rows.getColumn(i).isNull()) out += rows.getColumn(i).getString() + '\n';
  }
  return out;
}

std::vector<std::string> tableNames(const std::filesystem::path& file) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
  std::vector<std::string> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

// Two http targets of one webhook, sending to `r`, and `events` events to
// both, stored and not handed over: only a refill or a sweep finds them.
struct UnsubmittedBacklog {
  Hook hook;
  std::vector<TargetRecord> targets;
  std::vector<DeliveryRef> deliveries;
};
UnsubmittedBacklog storeUnsubmitted(EngineHarness& h, const Receiver& r, int events,
                                    int maxConcurrency) {
  UnsubmittedBacklog b;
  b.hook = h.createWebhook();
  for (const char* path : {"/a", "/b"})
    b.targets.push_back(
        h.createHttpTarget(b.hook.webhookId, r.url(path), retryPolicy(5, 2000, 0), maxConcurrency));
  for (int i = 0; i < events; ++i) {
    const IngestOutcome stored =
        h.ingestDirect(b.hook.webhookId, eventWithBody(b.hook, json{{"n", i}}.dump()),
                       {b.targets[0].id, b.targets[1].id}, false);
    for (const StoredDelivery& d : stored.deliveries) b.deliveries.push_back({b.hook.webhookId, d.id});
  }
  return b;
}

// Every delivery of `b` delivered, each with one attempt and one request.
void checkDeliveredOnce(EngineHarness& h, const Receiver& r, const UnsubmittedBacklog& b,
                        int events, std::chrono::seconds timeout) {
  for (const TargetRecord& target : b.targets) {
    const bool allDelivered =
        h.waitForCount(b.hook.webhookId, target.id, "delivered", events, timeout);
    INFO("delivered=" << h.countWithStatus(b.hook.webhookId, target.id, "delivered")
         << " requests=" << r.requestCount());
    REQUIRE(allDelivered);
  }
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == static_cast<size_t>(2 * events));
  REQUIRE(b.deliveries.size() == static_cast<size_t>(2 * events));
  for (const DeliveryRef& d : b.deliveries) CHECK(h.resultRows(d).size() == 1);
  CHECK(h.engine().heldCount() == 0);
}

// How many requests arrived per body.
std::map<std::string, int> arrivalsPerBody(const Receiver& r) {
  std::map<std::string, int> out;
  for (const ReceivedRequest& req : r.requests()) ++out[req.body];
  return out;
}

// `count` webhooks, each with one http target to `r` whose delivery failed
// once and retries in an hour (by `clock`); their ids.
std::vector<std::string> webhooksRetryingInAnHour(EngineHarness& h, const Receiver& r,
                                                  const FakeClock& clock, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    const Hook hook = h.createWebhook();
    const TargetRecord target =
        h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 3600000, 0, 3600000));
    const IngestOutcome stored =
        h.ingestDirect(hook.webhookId, eventWithBody(hook, "{}"), {target.id}, false);
    recordFirstAttempt(h, {hook.webhookId, stored.deliveries.at(0).id}, 503, clock.now(),
                       clock.now() + 1h);
    ids.push_back(hook.webhookId);
  }
  return ids;
}

}  // namespace

TEST_CASE("on start, pending deliveries go at once and a retrying one waits only what is left") {
  // The engine's clock stands still: what is left of a backoff is exactly
  // known, and the real wait is that long.
  FakeClock clock;
  HarnessOptions options;
  options.startEngine = false;
  options.clock = &clock;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  // A minute's backoff: a fresh one from the start would outlast the test.
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 60000, 0));

  // Stored while no engine runs, as a daemon that died after ingest leaves them.
  std::vector<DeliveryRef> pending;
  for (int i = 0; i < 3; ++i) {
    const IngestOutcome stored = h.ingestDirect(
        hook.webhookId, eventWithBody(hook, json{{"pending", i}}.dump()), {target.id}, false);
    pending.push_back({hook.webhookId, stored.deliveries.at(0).id});
  }
  // One whose first attempt failed 58 s ago: 2 s of its 60 s backoff are left.
  const std::string retryingBody = R"({"retrying":true})";
  const IngestOutcome stored =
      h.ingestDirect(hook.webhookId, eventWithBody(hook, retryingBody), {target.id}, false);
  const DeliveryRef retrying{hook.webhookId, stored.deliveries.at(0).id};
  recordFirstAttempt(h, retrying, 503, clock.now() - 58s, clock.now() + 2s);
  std::this_thread::sleep_for(100ms);
  CHECK(r.requestCount() == 0);  // no engine, no delivery
  for (const DeliveryRef& d : pending) CHECK(h.delivery(d).status == "pending");
  CHECK(h.delivery(retrying).status == "retrying");

  h.startEngine();
  const SteadyTime started = h.engineStartedAt();
  for (const DeliveryRef& d : pending) {
    REQUIRE(h.waitForStatus(d, "delivered", 3s));
    CHECK(h.resultRows(d).size() == 1);
  }
  // Only the fresh 60 s backoff (or a hang) would miss this.
  REQUIRE(h.waitForStatus(retrying, "delivered", 30s));
  const SteadyTime retried = arrivalOf(r, retryingBody);
  for (int i = 0; i < 3; ++i) CHECK(arrivalOf(r, json{{"pending", i}}.dump()) < retried);
  CHECK(msBetween(started, retried) >= 2000);  // what was left, waited for real
  const auto rows = h.resultRows(retrying);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].statusCode == 503);
  CHECK(rows[1].statusCode == 200);
  CHECK(rows[1].attempt == 2);
  CHECK(h.delivery(retrying).attempts == 2);
}

TEST_CASE("recovery closes each events DB once it has read it, and keeps its retries") {
  // SQLite's open walks every file the process holds open: recovery leaves
  // none of the files it only read in the pool.
  FakeClock clock;
  HarnessOptions options;
  options.startEngine = false;
  options.clock = &clock;
  options.sweepInterval = 1h;  // no sweep opens them again
  EngineHarness h(options);
  Receiver r;
  constexpr int kWebhooks = 40;
  webhooksRetryingInAnHour(h, r, clock, kWebhooks);
  REQUIRE(h.eventsDbs().openCount() == kWebhooks);  // the stores above left them open

  h.startEngine();
  CHECK(h.engine().heldCount() == kWebhooks);  // every retry waits in the timer
  CHECK(h.eventsDbs().openCount() == 0);
  std::this_thread::sleep_for(100ms);
  CHECK(r.requestCount() == 0);
}

TEST_CASE(
    "recovery reads a file the pool does not hold alone, a busy one through the pool, and hands "
    "the backlog sampler what it read") {
  // Setting up a file's shared WAL index is most of an open: recovery reads
  // each file the pool does not hold on a connection of its own instead, and
  // goes through the pool only for a file that another connection holds.
  FakeClock clock;
  HarnessOptions options;
  options.startEngine = false;
  options.clock = &clock;
  options.sweepInterval = 1h;  // no sweep opens them
  EngineHarness h(options);
  Receiver r;
  constexpr int kWebhooks = 20;
  const std::vector<std::string> ids = webhooksRetryingInAnHour(h, r, clock, kWebhooks);
  for (const std::string& id : ids) h.eventsDbs().letGo(id);
  // Once the pool's closer has closed them, no connection holds the files.
  for (const std::string& id : ids)
    REQUIRE(eventually([&] {
      return EventsDb::unfinishedOfFileAlone(h.eventsDbPath(id), clock.now()).has_value();
    }));
  SQLite::Database outside(h.eventsDbPath(ids[0]).string(), SQLite::OPEN_READONLY);
  outside.exec("BEGIN");
  REQUIRE(outside.execAndGet("SELECT COUNT(*) FROM deliveries").getInt() == 1);
  std::vector<uint64_t> closings;
  for (const std::string& id : ids) closings.push_back(h.eventsDbs().peek(id).closings);
  // What recovery read alone, the backlog sampler takes (as serve wires it).
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  BacklogSampler sampler(h.store(), h.eventsDbs(), metrics, clock);
  std::map<std::string, uint64_t> seeded;  // webhook id → closings
  h.engine().setRecoveredBacklog(
      [&](const std::string& id, uint64_t at, std::vector<EventsDb::BacklogCount> backlog) {
        seeded[id] = at;
        sampler.seed(id, at, std::move(backlog));
      });

  h.startEngine();
  CHECK(h.engine().heldCount() == kWebhooks);  // every retry waits in the timer
  CHECK(h.eventsDbs().openCount() == 0);
  CHECK(h.eventsDbs().peek(ids[0]).closings == closings[0] + 1);  // opened there, let go again
  for (size_t i = 1; i < ids.size(); ++i) CHECK(h.eventsDbs().peek(ids[i]).closings == closings[i]);
  outside.exec("COMMIT");
  std::this_thread::sleep_for(100ms);
  CHECK(r.requestCount() == 0);

  CHECK(seeded.size() == ids.size() - 1);
  CHECK_FALSE(seeded.count(ids[0]));
  for (size_t i = 1; i < ids.size(); ++i) CHECK(seeded[ids[i]] == closings[i]);
  // The sampler's first pass reads only the file recovery did not read
  // alone: the others are not even there.
  for (size_t i = 1; i < ids.size(); ++i)
    std::filesystem::rename(h.eventsDbPath(ids[i]), h.eventsDbPath(ids[i]).string() + ".away");
  REQUIRE(sampler.sampleOnce());
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  CHECK(valueIn(text, "webhooker_deliveries_retrying", typeIs("http")) == kWebhooks);
  for (size_t i = 1; i < ids.size(); ++i)
    std::filesystem::rename(h.eventsDbPath(ids[i]).string() + ".away", h.eventsDbPath(ids[i]));
}

TEST_CASE("a receiver's Retry-After, longer than the backoff, still holds after a restart") {
  FakeClock clock;  // still: 2 s are left, exactly
  HarnessOptions options;
  options.startEngine = false;
  options.clock = &clock;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100, 0));
  const IngestOutcome stored =
      h.ingestDirect(hook.webhookId, eventWithBody(hook, "{}"), {target.id}, false);
  const DeliveryRef d{hook.webhookId, stored.deliveries.at(0).id};
  // 1 s ago the receiver answered 429 with Retry-After: 3.
  recordFirstAttempt(h, d, 429, clock.now() - 1s, clock.now() + 2s);
  h.startEngine();
  REQUIRE(r.waitForRequests(1, 10s));
  // The 2 s left of the 3 s, not the 100 ms backoff.
  CHECK(msBetween(h.engineStartedAt(), r.requests()[0].at) >= 2000);
  REQUIRE(h.waitForStatus(d, "delivered", 3s));
}

TEST_CASE("a restart's backlog respects the target's max_concurrency from the first attempt") {
  HarnessOptions options;
  options.startEngine = false;
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respondAfter(150ms));
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 2000, 0), /*maxConcurrency=*/1);
  for (int i = 0; i < 6; ++i)
    h.ingestDirect(hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), {target.id}, false);

  h.startEngine();
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 6, 5s));
  CHECK(r.requestCount() == 6);
  CHECK(r.maxInFlight() == 1);
}

TEST_CASE("deliveries of a deleted target fail as target_deleted; no target data reaches the events DB") {
  HarnessOptions options;
  options.startEngine = false;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const std::string secretUrl = r.url("/hook?token=SECRET-URL-TOKEN-4711");
  const TargetRecord target = h.createTarget(
      hook.webhookId, "http",
      json{{"url", secretUrl},
           {"timeout_ms", 5000},
           {"headers", {{"Authorization", "Bearer SECRET-HEADER-0815"}}},
           {"signing_secret", "whsec_SECRET-SIGNING-1234"}},
      retryPolicy(5, 100), 4, "target-name-MARKER-77");
  std::vector<DeliveryRef> deliveries;
  for (int i = 0; i < 3; ++i) {
    const IngestOutcome stored = h.ingestDirect(
        hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), {target.id}, false);
    deliveries.push_back({hook.webhookId, stored.deliveries.at(0).id});
  }
  REQUIRE(h.store().deleteTarget(hook.webhookId, target.id));

  h.startEngine();
  for (const DeliveryRef& d : deliveries) {
    REQUIRE(h.waitForStatus(d, "failed", 5s));
    const DeliveryRow row = h.delivery(d);
    CHECK(row.failureReason == "target_deleted");
    CHECK(row.attempts == 0);
    CHECK(h.resultRows(d).empty());
  }
  REQUIRE(h.observer().waitForOutcomes(3));
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == 0);
  CHECK(h.observer().attempts() == 0);
  CHECK(h.observer().outcomes("http", "failed", "target_deleted") == 3);

  const auto file = h.eventsDbPath(hook.webhookId);
  for (const std::string& name : tableNames(file)) CHECK(name != "targets");
  const std::string text = allText(file);
  REQUIRE(contains(text, target.id));  // deliveries name their target by id, and only that
  for (const char* secret : {"SECRET-URL-TOKEN", "SECRET-HEADER", "SECRET-SIGNING", "whsec_",
                             "target-name-MARKER", "Authorization"}) {
    CAPTURE(secret);
    CHECK_FALSE(contains(text, secret));
  }
  CHECK_FALSE(contains(text, secretUrl));
}

TEST_CASE("a target deleted while its delivery waits to retry: target_deleted, no more requests") {
  EngineHarness h;
  Receiver r;
  r.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 400, 0));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(h.waitForStatus(d, "retrying", 5s));
  REQUIRE(h.store().deleteTarget(hook.webhookId, target.id));
  h.engine().targetChanged(hook.webhookId, target.id);

  REQUIRE(h.waitForStatus(d, "failed", 3s));
  CHECK(h.delivery(d).failureReason == "target_deleted");
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == 1);
  CHECK(h.resultRows(d).size() == 1);
}

TEST_CASE("a backlog larger than the queues refills from the events DB, each delivery once") {
  HarnessOptions options;
  options.startEngine = false;
  options.sweepInterval = 1h;  // only a refill can bring back what did not fit
  SUBCASE("each target's queue holds 10") { options.maxQueuedPerTarget = 10; }
  SUBCASE("all queues together hold 10") { options.maxQueued = 10; }
  EngineHarness h(options);
  Receiver r;
  constexpr int kEvents = 100;
  const UnsubmittedBacklog backlog = storeUnsubmitted(h, r, kEvents, 4);
  h.startEngine();
  checkDeliveredOnce(h, r, backlog, kEvents, 15s);
}

TEST_CASE("slow targets whose tasks fill the global cap do not hold a fast target back") {
  HarnessOptions options;
  options.maxQueued = 40;
  options.sweepInterval = 1h;
  bool live = false;  // handed over as ingest does, with the engine running
  SUBCASE("a stored backlog, refills alone") { options.startEngine = false; }
  // The sweep finds the cut-off backlogs on disk too; it must leave them to
  // the refills, or the slow targets' rows take all the room.
  SUBCASE("a stored backlog, a sweep every 10 ms") {
    options.startEngine = false;
    options.sweepInterval = 10ms;
  }
  // Without a limit on lanes above their even share, the slow targets' new
  // tasks took the room as the fast ones left it, the cap then dropped the
  // fast target's new tasks, and its emptied lane waited for the slow ones
  // (14 of 100 delivered in 4 s).
  SUBCASE("live ingest") { live = true; }
  EngineHarness h(options);
  Receiver slow;
  Receiver fast;
  slow.setDefault(respondAfter(5000ms));
  fast.setDefault(respondAfter(5ms));  // its backlog drains over many sweeps
  const Hook hook = h.createWebhook();
  std::vector<std::string> targetIds;
  for (int i = 0; i < 3; ++i)
    targetIds.push_back(h.createHttpTarget(hook.webhookId, slow.url("/slow"), retryPolicy(5, 2000),
                                           /*maxConcurrency=*/1, /*timeoutMs=*/10000)
                            .id);
  const TargetRecord quick = h.createHttpTarget(hook.webhookId, fast.url("/fast"));
  targetIds.push_back(quick.id);
  constexpr int kEvents = 100;  // 400 deliveries, ten times the cap
  for (int i = 0; i < kEvents; ++i)
    h.ingestDirect(hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), targetIds, live);

  if (!live) h.startEngine();
  const bool allDelivered = h.waitForCount(hook.webhookId, quick.id, "delivered", kEvents, 4s);
  INFO("delivered=" << h.countWithStatus(hook.webhookId, quick.id, "delivered"));
  REQUIRE(allDelivered);
  CHECK(fast.requestCount() == kEvents);
  CHECK(slow.requestCount() == 3);  // one each, none answered yet
}

TEST_CASE("retries beyond the timer's room wait on disk and are read back in time, each once") {
  HarnessOptions options;
  options.startEngine = false;
  options.sweepInterval = 1h;  // only the timer's reload can bring back what did not fit
  options.maxWaitingRetries = 10;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 2000, 0));
  constexpr int kRetrying = 50;
  std::vector<DeliveryRef> retrying;
  for (int i = 0; i < kRetrying; ++i) {
    const IngestOutcome stored = h.ingestDirect(
        hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), {target.id}, false);
    retrying.push_back({hook.webhookId, stored.deliveries.at(0).id});
  }
  // Due times are taken after the slow part, with room for a busy machine:
  // a row already due when the engine starts would be held as ready, not by
  // the timer. Later rows are due sooner, so the timer also lets go of ones
  // it holds.
  const TimePoint now = SystemClock().now();
  for (int i = 0; i < kRetrying; ++i)
    recordFirstAttempt(h, retrying[i], 503, now - 1s, now + 3s + (kRetrying - i) * 20ms);

  h.startEngine();
  REQUIRE_MESSAGE(SystemClock().now() < now + 3s, "setup outlasted the room left for it");
  CHECK(h.engine().heldCount() == 10);  // the rest wait on disk
  const bool allDelivered =
      h.waitForCount(hook.webhookId, target.id, "delivered", kRetrying, 15s);
  INFO("delivered=" << h.countWithStatus(hook.webhookId, target.id, "delivered"));
  REQUIRE(allDelivered);
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == kRetrying);
  for (const DeliveryRef& d : retrying) CHECK(h.resultRows(d).size() == 2);
  CHECK(h.engine().heldCount() == 0);
}

TEST_CASE("a receiver that fails everything once: retries the timer has no room for still go") {
  HarnessOptions options;
  options.sweepInterval = 1h;
  options.maxWaitingRetries = 10;
  options.breakerThreshold = 1000;  // every failure is a retry, none a breaker's deferral
  EngineHarness h(options);
  Receiver r;
  constexpr int kEvents = 50;
  for (int i = 0; i < kEvents; ++i) r.push(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 1000, 0));
  for (int i = 0; i < kEvents; ++i)
    h.ingestDirect(hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), {target.id});

  const bool allDelivered = h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 20s);
  INFO("delivered=" << h.countWithStatus(hook.webhookId, target.id, "delivered"));
  REQUIRE(allDelivered);
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  std::map<std::string, int> accepted;  // body -> requests answered 200
  for (const ReceivedRequest& req : r.requests())
    if (req.answeredStatus == 200) ++accepted[req.body];
  CHECK(accepted.size() == kEvents);
  for (const auto& entry : accepted) CHECK_MESSAGE(entry.second == 1, entry.first);
  CHECK(h.engine().heldCount() == 0);
}

TEST_CASE("the sweep never schedules a delivery twice") {
  HarnessOptions options;
  options.sweepInterval = 20ms;
  options.breakerThreshold = 1000;  // ten 503s in a row must not open it here
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respondAfter(15ms));
  std::vector<ScriptedResponse> failures(10, respond(503));
  r.script(failures);  // ten deliveries go through a retry too
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100, 0), 4);

  constexpr int kEvents = 60;
  std::map<std::string, DeliveryRef> byBody;
  for (int i = 0; i < kEvents; ++i) {
    const std::string body = json{{"seq", i}}.dump();
    // Half are handed over by "ingest", half only the sweep can find.
    const IngestOutcome stored =
        h.ingestDirect(hook.webhookId, eventWithBody(hook, body), {target.id}, i % 2 == 0);
    byBody.emplace(body, DeliveryRef{hook.webhookId, stored.deliveries.at(0).id});
  }
  std::atomic<bool> done{false};
  std::vector<std::jthread> sweepers;
  for (int i = 0; i < 2; ++i)
    sweepers.emplace_back([&] {
      while (!done) {
        h.engine().sweep();
        std::this_thread::sleep_for(1ms);
      }
    });
  const bool allDelivered =
      h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 20s);
  done = true;
  sweepers.clear();
  INFO("delivered=" << h.countWithStatus(hook.webhookId, target.id, "delivered")
       << " pending=" << h.countWithStatus(hook.webhookId, target.id, "pending")
       << " retrying=" << h.countWithStatus(hook.webhookId, target.id, "retrying")
       << " held=" << h.engine().heldCount() << " requests=" << r.requestCount());
  REQUIRE(allDelivered);
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow

  std::map<std::string, int> requestsPerBody = arrivalsPerBody(r);
  CHECK(r.requestCount() == kEvents + failures.size());
  int failedAttempts = 0;
  for (const auto& [sent, d] : byBody) {
    const std::string& body = sent;  // CAPTURE cannot refer to a binding with clang 14
    CAPTURE(body);
    const auto rows = h.resultRows(d);
    CHECK(requestsPerBody[body] == static_cast<int>(rows.size()));
    REQUIRE(!rows.empty());
    int successes = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i].attempt == static_cast<int>(i) + 1);
      successes += rows[i].success;
    }
    CHECK(successes == 1);
    CHECK(rows.back().success);
    failedAttempts += static_cast<int>(rows.size()) - 1;
  }
  // Which deliveries met the ten 503s depends on timing (a quick retry can
  // meet a second one), but each 503 is one failed attempt of one delivery.
  CHECK(failedAttempts == static_cast<int>(failures.size()));
  CHECK(h.engine().heldCount() == 0);
}

TEST_CASE("the sweep reads target by target and page by page, and admits each delivery once") {
  HarnessOptions options;
  options.sweepInterval = 1h;  // only the sweep called below finds them
  EngineHarness h(options);
  Receiver r;
  constexpr int kEvents = 1100;  // more than one page (1,000 rows) per target
  const UnsubmittedBacklog backlog = storeUnsubmitted(h, r, kEvents, 8);
  REQUIRE(r.requestCount() == 0);
  h.engine().sweep();
  checkDeliveredOnce(h, r, backlog, kEvents, 30s);
}

TEST_CASE("the sweep opens a closed events DB only when something in it is due") {
  HarnessOptions options;
  options.sweepInterval = 1h;  // the test runs the sweep itself
  EngineHarness h(options);
  Receiver r;
  // Each webhook's one delivery: due in an hour, due now, and due in an hour
  // to a target deleted since (which the sweep ends at once).
  const auto withTarget = [&](const char* path) {
    const Hook hook = h.createWebhook();
    return std::pair(hook, h.createHttpTarget(hook.webhookId, r.url(path)));
  };
  const auto [later, laterTarget] = withTarget("/later");
  const auto [due, dueTarget] = withTarget("/due");
  const auto [gone, goneTarget] = withTarget("/gone");
  const auto deferredDelivery = [&](const Hook& hook, const TargetRecord& target) {
    const IngestOutcome stored =
        h.ingestDirect(hook.webhookId, eventWithBody(hook, "{}"), {target.id}, false);
    const std::string id = stored.deliveries.at(0).id;
    auto db = h.eventsDbs().get(hook.webhookId);
    REQUIRE(db.ok());
    REQUIRE(db.value()->deferDelivery(id, h.clock().now() + 1h).ok());
    return DeliveryRef{hook.webhookId, id};
  };
  deferredDelivery(later, laterTarget);
  const DeliveryRef goneDelivery = deferredDelivery(gone, goneTarget);
  h.ingestDirect(due.webhookId, eventWithBody(due, "{}"), {dueTarget.id}, false);
  REQUIRE(h.store().deleteTarget(gone.webhookId, goneTarget.id));
  for (const Hook* hook : {&later, &due, &gone}) {
    h.eventsDbs().letGo(hook->webhookId);
    const auto file = h.eventsDbs().pathFor(hook->webhookId);
    REQUIRE(eventually([&] { return storage::openAlone(file).ok(); }));  // the closer let go
  }
  const uint64_t laterClosings = h.eventsDbs().peek(later.webhookId).closings;

  h.engine().sweep();
  CHECK(h.waitForCount(due.webhookId, dueTarget.id, "delivered", 1, 10s));
  CHECK(h.eventsDbs().peek(later.webhookId).open == nullptr);
  CHECK(h.eventsDbs().peek(later.webhookId).closings == laterClosings);
  CHECK(h.countWithStatus(later.webhookId, laterTarget.id, "pending") == 1);
  CHECK(h.waitForStatus(goneDelivery, "failed", 5s));
  CHECK(r.requestCount() == 1);
}

TEST_CASE("the sweep never takes a delivery ingest committed and has not handed over yet") {
  HarnessOptions options;
  options.sweepInterval = 1h;  // the test runs the sweep itself
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"));
  const InboundEvent event = eventWithBody(hook, R"({"n": 1})");

  // Ingest between its commit and its handoff, held there.
  Dispatcher::Handoff handoff = h.engine().openHandoff();
  const IngestOutcome stored = h.ingestDirect(hook.webhookId, event, {target.id}, false);
  const DeliveryRef d{hook.webhookId, stored.deliveries.at(0).id};
  std::jthread sweep([&] { h.engine().sweep(); });
  // A sweep that took the row sends it now; let that attempt end entirely,
  // so ingest's own hand-over finds nothing holding the delivery.
  if (r.waitForRequests(1, 1s)) {
    REQUIRE(h.waitForStatus(d, "delivered", 5s));
    REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  }
  h.handOver(hook.webhookId, event, stored);
  handoff = nullptr;
  sweep.join();

  REQUIRE(h.waitForStatus(d, "delivered", 5s));
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow
  CHECK(r.requestCount() == 1);
  CHECK(h.resultRows(d).size() == 1);
}

TEST_CASE("ingest under load with a sweep every millisecond: every event reaches the receiver once") {
  HarnessOptions options;
  options.sweepInterval = 1ms;
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100, 0), 8);

  constexpr int kSenders = 8;
  constexpr int kEach = 150;
  std::vector<std::jthread> senders;
  for (int s = 0; s < kSenders; ++s)
    senders.emplace_back([&h, &hook, s] {
      for (int i = 0; i < kEach; ++i) h.post(hook.entrypointId, json{{"s", s}, {"i", i}}.dump());
    });
  senders.clear();
  constexpr size_t kEvents = kSenders * kEach;
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 60s));
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));
  REQUIRE(h.waitUntilNothingHeld());  // no attempt can follow

  const std::map<std::string, int> perBody = arrivalsPerBody(r);
  int duplicates = 0;
  for (const auto& [body, count] : perBody) duplicates += count - 1;
  CHECK(perBody.size() == kEvents);
  CHECK(duplicates == 0);
  CHECK(r.requestCount() == kEvents);
}

TEST_CASE("a delivery released while a reconcile runs is admitted again at once") {
  HarnessOptions options;
  options.sweepInterval = 1h;  // the test runs the sweep itself
  EngineHarness h(options);
  Receiver r;
  r.script({respond(404), respond(404)});  // both end failed at once; then 200s
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"));

  // A reconcile that stays open: the sweep waits for a handoff held here.
  Dispatcher::Handoff handoff = h.engine().openHandoff();
  std::jthread longSweep([&] { h.engine().sweep(); });
  std::this_thread::sleep_for(200ms);  // it has read the (empty) DB and waits

  std::vector<DeliveryRef> released;
  for (const char* body : {R"({"n": 1})", R"({"n": 2})"}) {
    const std::string eventId = h.post(hook.entrypointId, body);
    released.push_back(h.deliveryOf(hook.webhookId, eventId, target.id));
  }
  for (const DeliveryRef& d : released) REQUIRE(h.waitForStatus(d, "failed", 5s));
  REQUIRE(eventually([&] { return h.engine().heldCount() == 0; }));

  // Retried while that reconcile still runs: the engine takes them at once.
  httplib::Client admin("127.0.0.1", h.port());
  admin.set_bearer_token_auth(EngineHarness::kToken);
  for (const DeliveryRef& d : released) {
    auto res = admin.Post("/api/v1/webhooks/" + hook.webhookId + "/deliveries/" + d.id + "/retry",
                          "", "application/json");
    REQUIRE(res);
    REQUIRE(res->status == 200);
  }
  for (const DeliveryRef& d : released) CHECK(h.waitForStatus(d, "delivered", 5s));
  handoff = nullptr;
  longSweep.join();
  CHECK(r.requestCount() == 4);
}

TEST_CASE("a deactivated target's deliveries are paused, and resume when it is reactivated") {
  EngineHarness h;
  Receiver r;
  r.push(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 300, 0));

  // One delivery waiting for its retry when the target is switched off...
  const DeliveryRef waiting =
      h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, R"({"first":1})"), target.id);
  REQUIRE(h.waitForStatus(waiting, "retrying", 5s));
  h.setTargetActive(target, false);
  // ...and three that were stored just before it was.
  std::vector<DeliveryRef> pending;
  for (int i = 0; i < 3; ++i) {
    const IngestOutcome stored =
        h.ingestDirect(hook.webhookId, eventWithBody(hook, json{{"n", i}}.dump()), {target.id});
    pending.push_back({hook.webhookId, stored.deliveries.at(0).id});
  }

  // Past the retry time and several sweeps: nothing moves.
  std::this_thread::sleep_for(900ms);
  CHECK(r.requestCount() == 1);
  CHECK(h.delivery(waiting).status == "retrying");
  CHECK(h.resultRows(waiting).size() == 1);
  for (const DeliveryRef& d : pending) {
    CHECK(h.delivery(d).status == "pending");
    CHECK(h.resultRows(d).empty());
  }

  h.setTargetActive(target, true);
  REQUIRE(h.waitForStatus(waiting, "delivered", 3s));
  CHECK(h.resultRows(waiting).size() == 2);
  for (const DeliveryRef& d : pending) {
    REQUIRE(h.waitForStatus(d, "delivered", 3s));
    CHECK(h.resultRows(d).size() == 1);
  }
  CHECK(r.requestCount() == 5);
}

namespace {

std::string deliveryStatus(const std::filesystem::path& eventsDb) {
  SQLite::Database db = openReadOnly(eventsDb);
  SQLite::Statement q(db, "SELECT status FROM deliveries");
  return q.executeStep() ? q.getColumn(0).getString() : "<none>";
}

}  // namespace

TEST_CASE("kill -9 during a backoff: the restarted daemon waits only the remaining backoff") {
  TempDir dir;
  Receiver r;
  r.setDefault(respond(503));
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(),
                 "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};

  std::string webhookId;
  SteadyTime firstAttempt;
  {
    DaemonProcess daemon(dir.path(), options);
    auto api = DaemonApi(daemon.url()).admin();
    const json webhook = expectJson(
        api.Post("/api/v1/webhooks", json{{"name", "k9"}}.dump(), "application/json"), 201);
    webhookId = webhook.at("id").get<std::string>();
    const std::string entrypointId = webhook.at("entrypoints").at(0).at("id").get<std::string>();
    expectJson(api.Post("/api/v1/webhooks/" + webhookId + "/targets",
                        json{{"name", "receiver"},
                             {"type", "http"},
                             {"config", {{"url", r.url("/k9")}, {"timeout_ms", 2000}}},
                             {"retry", {{"max_retries", 5}, {"base_delay_ms", 6000}, {"jitter", 0}}}}
                            .dump(),
                        "application/json"),
               201);
    expectJson(api.Post("/hooks/" + entrypointId, R"({"order":1})", "application/json"), 200);

    REQUIRE(r.waitForRequests(1, 5s));
    firstAttempt = r.requests()[0].at;
    const auto eventsDb = dir / ("events-" + webhookId + ".db");
    const auto deadline = Steady::now() + 5s;
    while (deliveryStatus(eventsDb) != "retrying" && Steady::now() < deadline)
      std::this_thread::sleep_for(10ms);
    REQUIRE(deliveryStatus(eventsDb) == "retrying");

    // Halfway into the 6 s backoff, an unclean death.
    std::this_thread::sleep_until(firstAttempt + 3000ms);
    CHECK(daemon.kill9() == 128 + 9);
  }
  CHECK(r.requestCount() == 1);
  r.setDefault(respond(200));

  const SteadyTime restarted = Steady::now();
  DaemonProcess again(dir.path(), options);
  REQUIRE(r.waitForRequests(2, 10s));
  const SteadyTime second = r.requests()[1].at;
  // The full backoff from the first attempt, not a fresh one from the
  // restart. The real binary's clock cannot be set, so the bound that tells
  // them apart leaves the 3 s already spent as slack: only a hang breaks it.
  CHECK(msBetween(firstAttempt, second) >= 5950);
  CHECK(msBetween(restarted, second) < 6000);

  const auto eventsDb = dir / ("events-" + webhookId + ".db");
  const auto deadline = Steady::now() + 5s;
  while (deliveryStatus(eventsDb) != "delivered" && Steady::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(deliveryStatus(eventsDb) == "delivered");
  SQLite::Database db = openReadOnly(eventsDb);
  SQLite::Statement q(db, "SELECT attempt, status_code FROM delivery_results ORDER BY attempt");
  std::vector<std::pair<int, int>> rows;
  while (q.executeStep()) rows.emplace_back(q.getColumn(0).getInt(), q.getColumn(1).getInt());
  CHECK(rows == std::vector<std::pair<int, int>>{{1, 503}, {2, 200}});
  CHECK(again.stop() == 0);
}

}  // namespace webhooker::testing
