// GET /api/v1/webhooks/{id}/stats over HTTP, against real SQLite files:
// counts by status in all and per target, each target's latest failure,
// the last 24 hours hour by hour (with a fake clock), the breaker of a real
// engine delivering to a loopback receiver that fails, and bad requests. A
// file the pool does not hold is read alone: no WAL or -shm, same answer.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "base/time_format.h"
#include "tests/support/eventually.h"
#include "tests/support/engine_harness.h"
#include "tests/support/history_fixture.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json counts(int64_t pending, int64_t retrying, int64_t delivered, int64_t failed) {
  return {{"pending", pending}, {"retrying", retrying}, {"delivered", delivered}, {"failed", failed}};
}

const json& targetEntry(const json& stats, const std::string& targetId) {
  for (const json& t : stats["targets"])
    if (t["target_id"] == targetId) return t;
  FAIL("no stats for target " << targetId);
  return stats;  // not reached
}

std::string hourOf(TimePoint t) { return formatTime(std::chrono::floor<std::chrono::hours>(t)); }

const json& hourEntry(const json& stats, const std::string& hour) {
  for (const json& h : stats["hourly"])
    if (h["hour"] == hour) return h;
  FAIL("no hourly entry for " << hour);
  return stats;  // not reached
}

// The -wal and -shm beside an events file, with their sizes.
std::map<std::string, uintmax_t> walAndShm(const std::filesystem::path& file) {
  std::map<std::string, uintmax_t> out;
  for (const char* suffix : {"-wal", "-shm"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file.string() + suffix, ec);
    if (!ec) out[suffix] = size;
  }
  return out;
}

}  // namespace

TEST_CASE("stats of a file the pool does not hold: read alone, no WAL or -shm made, the same answer") {
  FakeClock clock;
  TestServer server{TestServerOptions{.clock = &clock}};
  EventsDbPool& pool = server.eventsDbs();
  const std::string quietId = server.createWebhook("quiet")["id"].get<std::string>();
  const json busy = server.createWebhook("busy");
  const std::string busyId = busy["id"].get<std::string>();
  server.createTarget(busyId, HistoryFixture::targetBody("orders"));
  for (int i = 0; i < 3; ++i) {
    auto res = server.anonymousClient().Post(
        "/hooks/" + busy["entrypoints"][0]["id"].get<std::string>(), "{}", "application/json");
    REQUIRE(statusOf(res) == 200);
    clock.advance(1s);
  }
  {
    // One delivery failed, one retrying: every part of the answer has something.
    auto db = pool.get(busyId);
    REQUIRE(db);
    auto unfinished = db.value()->unfinishedDeliveries();
    REQUIRE(unfinished);
    REQUIRE(unfinished->size() == 3);
    AttemptRecord failed;
    failed.deliveryId = unfinished.value()[0].id;
    failed.statusCode = 410;
    failed.error = "HTTP 410";
    failed.newStatus = DeliveryStatus::kFailed;
    REQUIRE(db.value()->recordAttempt(failed));
    AttemptRecord retry;
    retry.deliveryId = unfinished.value()[1].id;
    retry.error = "connection refused";
    retry.newStatus = DeliveryStatus::kRetrying;
    retry.nextAttemptAt = clock.now() + 1h;
    REQUIRE(db.value()->recordAttempt(retry));
  }
  const auto stats = [&](const std::string& id) {
    auto c = server.client();
    auto res = c.Get("/api/v1/webhooks/" + id + "/stats");
    REQUIRE(statusOf(res) == 200);
    return json::parse(res->body);
  };

  // Busy: read through the pool while it holds the file, then alone once
  // the pool has closed it as an eviction does (its WAL kept as it was).
  REQUIRE(pool.peek(busyId).open);
  const json busyOpen = stats(busyId);
  CHECK(busyOpen["events"] == 3);
  CHECK(busyOpen["deliveries"] == counts(1, 1, 0, 1));
  std::weak_ptr<EventsDb> closing = pool.peek(busyId).open;
  pool.letGo(busyId);
  REQUIRE(eventually([&] { return closing.expired(); }));
  const auto busyFiles = walAndShm(server.eventsDbPath(busyId));
  const size_t openBefore = pool.openCount();
  CHECK(stats(busyId) == busyOpen);
  CHECK(walAndShm(server.eventsDbPath(busyId)) == busyFiles);
  CHECK_FALSE(pool.peek(busyId).open);

  // Quiet: never written, so no file, and a view makes none.
  REQUIRE_FALSE(std::filesystem::exists(server.eventsDbPath(quietId)));
  const json quietAlone = stats(quietId);
  CHECK_FALSE(std::filesystem::exists(server.eventsDbPath(quietId)));
  CHECK(walAndShm(server.eventsDbPath(quietId)).empty());
  CHECK_FALSE(pool.peek(quietId).open);
  CHECK(pool.openCount() == openBefore);  // nothing opened, so nothing evicted
  CHECK(quietAlone["events"] == 0);
  CHECK(quietAlone["deliveries"] == counts(0, 0, 0, 0));
  CHECK(quietAlone["hourly"].size() == 24);
  // Its file made, as a first write makes it, and read through the pool:
  // the same answer.
  REQUIRE(pool.get(quietId));
  CHECK(stats(quietId) == quietAlone);
}

TEST_CASE("stats count events and deliveries by status, in all and per target") {
  HistoryFixture f;
  const auto events = f.ingestMany(4);  // each with a delivery to orders and to audit
  f.fail(f.deliveryOf(events[0], f.ordersId), 3);
  f.deliver(f.deliveryOf(events[1], f.ordersId));
  f.fail(f.deliveryOf(events[2], f.auditId), 1);
  f.clock.advance(1s);
  AttemptRecord retrying;
  retrying.deliveryId = f.deliveryOf(events[3], f.auditId);
  retrying.error = "connection refused";
  retrying.newStatus = DeliveryStatus::kRetrying;
  retrying.nextAttemptAt = f.clock.now() + 2s;
  REQUIRE(f.db->recordAttempt(retrying));

  auto c = f.server.client();
  auto res = c.Get("/api/v1/webhooks/" + f.webhookId + "/stats");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(res->get_header_value("Content-Type").find("application/json") == 0);
  const json stats = json::parse(res->body);
  CHECK(stats["webhook_id"] == f.webhookId);
  CHECK(stats["events"] == 4);
  CHECK(stats["deliveries"] == counts(4, 1, 1, 2));

  REQUIRE(stats["targets"].size() == 2);
  const json& orders = targetEntry(stats, f.ordersId);
  CHECK(orders["target_name"] == "orders");
  CHECK(orders["target_type"] == "http");
  CHECK(orders["active"] == true);
  CHECK(orders["deliveries"] == counts(2, 0, 1, 1));
  CHECK(orders["breaker"] == json{{"state", "closed"}, {"consecutive_failures", 0}, {"retry_in_ms", 0}});
  CHECK(orders["last_failure"]["delivery_id"] == f.deliveryOf(events[0], f.ordersId));
  CHECK(orders["last_failure"]["event_id"] == events[0]);
  CHECK(orders["last_failure"]["status_code"] == 503);
  CHECK(orders["last_failure"]["error"] == "HTTP 503");
  // The newest failed attempt, not the one that ended a delivery.
  const json& audit = targetEntry(stats, f.auditId);
  CHECK(audit["deliveries"] == counts(2, 1, 0, 1));
  CHECK(audit["last_failure"]["delivery_id"] == retrying.deliveryId);
  CHECK(audit["last_failure"]["status_code"].is_null());
  CHECK(audit["last_failure"]["error"] == "connection refused");
  CHECK(audit["last_failure"]["at"] == formatTime(f.clock.now()));

  // No target config, credential or secret comes with it.
  CHECK(res->body.find(kFixtureSigningSecret) == std::string::npos);
  CHECK(res->body.find(kFixtureAuthHeader) == std::string::npos);
  CHECK(res->body.find("receiver.example.com") == std::string::npos);

  // Another webhook's file is another webhook's business.
  auto other = c.Get("/api/v1/webhooks/" + f.otherWebhookId + "/stats");
  REQUIRE(other);
  const json otherStats = json::parse(other->body);
  CHECK(otherStats["events"] == 0);
  CHECK(otherStats["deliveries"] == counts(0, 0, 0, 0));
  REQUIRE(otherStats["targets"].size() == 1);
  CHECK(otherStats["targets"][0]["last_failure"].is_null());
}

TEST_CASE("a deleted target is not listed, but its deliveries still count; an inactive one shows so") {
  HistoryFixture f;
  const auto events = f.ingestMany(2);
  f.fail(f.deliveryOf(events[0], f.auditId), 1);
  auto c = f.server.client();
  REQUIRE(statusOf(c.Delete("/api/v1/webhooks/" + f.webhookId + "/targets/" + f.auditId)) == 204);
  REQUIRE(statusOf(patchJson(c, "/api/v1/webhooks/" + f.webhookId + "/targets/" + f.ordersId,
                             {{"active", false}})) == 200);

  const json stats = f.get("/stats");
  CHECK(stats["deliveries"] == counts(3, 0, 0, 1));
  REQUIRE(stats["targets"].size() == 1);
  CHECK(stats["targets"][0]["target_id"] == f.ordersId);
  CHECK(stats["targets"][0]["active"] == false);
  CHECK(stats["targets"][0]["deliveries"] == counts(2, 0, 0, 0));
}

TEST_CASE("hourly: the last 24 hours oldest first, events by arrival, failures by when they failed") {
  HistoryFixture f;
  const TimePoint first = f.clock.now();
  const std::string early = f.ingest("{}");
  f.clock.advance(3h);
  f.ingest("{}");
  f.ingest("{}");
  f.fail(f.deliveryOf(early, f.ordersId), 1);  // fails now, 3 hours after it arrived
  const TimePoint now = f.clock.now();

  json stats = f.get("/stats");
  const json& hours = stats["hourly"];
  REQUIRE(hours.size() == 24);
  CHECK(hours.back()["hour"] == hourOf(now));
  CHECK(hours.front()["hour"] == hourOf(now - 23h));
  for (size_t i = 1; i < hours.size(); ++i) {
    const auto a = parseTime(hours[i - 1]["hour"].get<std::string>());
    const auto b = parseTime(hours[i]["hour"].get<std::string>());
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*b - *a == 1h);
  }
  CHECK(hourEntry(stats, hourOf(first))["received"] == 1);
  CHECK(hourEntry(stats, hourOf(first))["failed"] == 0);
  CHECK(hourEntry(stats, hourOf(now))["received"] == 2);
  CHECK(hourEntry(stats, hourOf(now))["failed"] == 1);
  int64_t received = 0;
  int64_t failed = 0;
  for (const json& h : hours) {
    received += h["received"].get<int64_t>();
    failed += h["failed"].get<int64_t>();
  }
  CHECK(received == 3);
  CHECK(failed == 1);

  // A retried dead letter leaves its hour; a day later the chart is empty,
  // while the totals still count what is stored.
  auto c = f.server.client();
  REQUIRE(statusOf(c.Post("/api/v1/webhooks/" + f.webhookId + "/deliveries/" +
                               f.deliveryOf(early, f.ordersId) + "/retry",
                           "", "application/json")) == 200);
  CHECK(hourEntry(f.get("/stats"), hourOf(now))["failed"] == 0);
  f.clock.advance(25h);
  stats = f.get("/stats");
  for (const json& h : stats["hourly"]) {
    CHECK(h["received"] == 0);
    CHECK(h["failed"] == 0);
  }
  CHECK(stats["events"] == 3);
}

TEST_CASE("stats: unknown or malformed webhook 404, unknown parameter 400, no token 401") {
  HistoryFixture f;
  auto c = f.server.client();
  const std::string before = f.eventsDump();
  auto missing = c.Get("/api/v1/webhooks/7d9c1f0e-4a2b-4c3d-8e5f-6a7b8c9d0e1f/stats");
  CHECK(statusOf(missing) == 404);
  CHECK(errorCode(missing) == "not_found");
  CHECK(statusOf(c.Get("/api/v1/webhooks/not-a-uuid/stats")) == 404);
  auto param = c.Get("/api/v1/webhooks/" + f.webhookId + "/stats?hours=48");
  CHECK(statusOf(param) == 400);
  CHECK(errorCode(param) == "unknown_parameter");
  auto anonymous = f.server.anonymousClient();
  auto refused = anonymous.Get("/api/v1/webhooks/" + f.webhookId + "/stats");
  CHECK(statusOf(refused) == 401);
  CHECK(errorCode(refused) == "unauthorized");
  CHECK(f.eventsDump() == before);
}

TEST_CASE("a target's breaker: open after failures of a real receiver, with the time to its probe") {
  HarnessOptions options;
  options.breakerThreshold = 2;
  options.breakerCooldown = 60s;
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respond(500));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/"), retryPolicy(5, 100));
  h.post(hook.entrypointId, "{}");
  REQUIRE(r.waitForRequests(2, 5s));
  // The receiver has answered; the target records the failure just after.
  for (int i = 0; i < 500 && h.breakers().openCount() == 0; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(h.breakers().openCount() == 1);

  httplib::Client c("127.0.0.1", h.port());
  c.set_bearer_token_auth(EngineHarness::kToken);
  auto res = c.Get("/api/v1/webhooks/" + hook.webhookId + "/stats");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const json t = targetEntry(json::parse(res->body), target.id);
  CHECK(t["breaker"]["state"] == "open");
  CHECK(t["breaker"]["consecutive_failures"] == 2);
  CHECK(t["breaker"]["retry_in_ms"].get<int64_t>() > 50'000);
  CHECK(t["breaker"]["retry_in_ms"].get<int64_t>() <= 60'000);
  CHECK(t["last_failure"]["status_code"] == 500);
  CHECK(t["deliveries"] == counts(0, 1, 0, 0));

  // Targets without a breaker say so.
  const TargetRecord log = h.createTarget(hook.webhookId, "log", json::object());
  const json again = json::parse(c.Get("/api/v1/webhooks/" + hook.webhookId + "/stats")->body);
  CHECK(targetEntry(again, log.id)["breaker"].is_null());
}

}  // namespace webhooker::testing
