// Redrive (DESIGN §7): retrying a dead letter as a new attempt series,
// redelivering an event as new deliveries, and bulk replay — first against
// the admin API with a recording dispatcher (what was written, what was
// handed to the engine, and that refused input changes nothing), then
// through the real engine to loopback receivers, and last as a user lives
// it: a receiver down for a target's whole retry window, dead letters, and
// one `webhooker replay` command against the real daemon.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/time_format.h"
#include "tests/support/daemon_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/history_fixture.h"
#include "tests/support/receiver.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kUnknownId = "00000000-0000-4000-8000-000000000000";

int seriesStartOf(const std::filesystem::path& file, const std::string& deliveryId) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db, "SELECT series_start FROM deliveries WHERE id = ?");
  q.bind(1, deliveryId);
  REQUIRE(q.executeStep());
  return q.getColumn(0).getInt();
}

std::string statusIn(const HistoryFixture& f, const std::string& deliveryId) {
  SQLite::Database db = openReadOnly(f.server.eventsDbPath(f.webhookId));
  SQLite::Statement q(db, "SELECT status FROM deliveries WHERE id = ?");
  q.bind(1, deliveryId);
  REQUIRE(q.executeStep());
  return q.getColumn(0).getString();
}

// Captures both databases, the events files and what reached the engine;
// check() fails if any of them changed.
class Unchanged {
 public:
  explicit Unchanged(const HistoryFixture& f)
      : f_(f),
        events_(f.eventsDump()),
        main_(dumpDatabase(f.server.mainDbPath())),
        files_(eventsDbFiles(f.server.dataDir())),
        tasks_(f.server.dispatcher().tasks().size()) {}
  void check() const {
    CHECK(f_.eventsDump() == events_);
    CHECK(dumpDatabase(f_.server.mainDbPath()) == main_);
    CHECK(eventsDbFiles(f_.server.dataDir()) == files_);
    CHECK(f_.server.dispatcher().tasks().size() == tasks_);
  }

 private:
  const HistoryFixture& f_;
  const std::string events_;
  const std::string main_;
  const std::set<std::string> files_;
  const size_t tasks_;
};

httplib::Client harnessClient(const EngineHarness& h) {
  httplib::Client c("127.0.0.1", h.port());
  c.set_tcp_nodelay(true);
  c.set_read_timeout(std::chrono::seconds(30));
  c.set_bearer_token_auth(EngineHarness::kToken);
  return c;
}

json postOk(httplib::Client& c, const std::string& path, const json& body, int status = 200) {
  auto res = c.Post(path, body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == status);
  return json::parse(res->body);
}

// A breaker that reopens quickly, so a test can fail a delivery many times.
HarnessOptions quickBreaker() {
  HarnessOptions o;
  o.breakerCooldown = 50ms;
  return o;
}

}  // namespace

// --- The API: what is written and handed over ------------------------------

TEST_CASE("retry starts a new attempt series on a failed delivery; its results stay") {
  HistoryFixture f;
  const std::string eventId = f.ingest("{}");
  const std::string deliveryId = f.deliveryOf(eventId, f.ordersId);
  f.fail(deliveryId, 3);
  f.server.dispatcher().clear();

  auto res = f.post("/deliveries/" + deliveryId + "/retry", "");
  REQUIRE(statusOf(res) == 200);
  const json d = jsonOf(res);
  CHECK(d["id"] == deliveryId);
  CHECK(d["status"] == "pending");
  CHECK(d["attempts"] == 3);
  CHECK(d["series_start"] == 3);
  CHECK(d["failure_reason"].is_null());
  CHECK(d["next_attempt_at"].is_null());
  CHECK(d["target_name"] == "orders");
  CHECK(res->body.find(kFixtureSigningSecret) == std::string::npos);

  const auto path = f.server.eventsDbPath(f.webhookId);
  CHECK(seriesStartOf(path, deliveryId) == 3);
  CHECK(countRows(path, "delivery_results", "delivery_id = '" + deliveryId + "'") == 3);
  const auto tasks = f.server.dispatcher().tasks();
  REQUIRE(tasks.size() == 1);
  CHECK(tasks[0].deliveryId == deliveryId);
  CHECK(tasks[0].eventId == eventId);
  CHECK(tasks[0].webhookId == f.webhookId);
  CHECK(tasks[0].targetType == webhooker::TargetType::kHttp);
  CHECK(tasks[0].attempt == 4);
  CHECK(tasks[0].seriesStart == 3);
  CHECK(tasks[0].attemptInSeries() == 1);

  // Now pending: a second retry is refused and changes nothing.
  Unchanged unchanged(f);
  auto again = f.post("/deliveries/" + deliveryId + "/retry", "");
  CHECK(statusOf(again) == 409);
  CHECK(errorCode(again) == "conflict");
  unchanged.check();
}

TEST_CASE("retry refuses unfinished, delivered and unknown deliveries and deleted targets") {
  HistoryFixture f;
  const auto events = f.ingestMany(2);
  const std::string pending = f.deliveryOf(events[0], f.auditId);
  const std::string delivered = f.deliveryOf(events[1], f.auditId);
  f.deliver(delivered);
  const std::string failedOrders = f.deliveryOf(events[0], f.ordersId);
  f.fail(failedOrders, 2);

  Unchanged unchanged(f);
  for (const std::string& id : {pending, delivered}) {
    auto res = f.post("/deliveries/" + id + "/retry", "");
    CHECK(statusOf(res) == 409);
    CHECK(errorCode(res) == "conflict");
  }
  for (const std::string& path :
       {"/deliveries/" + kUnknownId + "/retry", std::string("/deliveries/not-a-uuid/retry")}) {
    auto res = f.post(path, "");
    CHECK(statusOf(res) == 404);
    CHECK(errorCode(res) == "not_found");
  }
  auto c = f.server.client();
  auto unknownWebhook =
      c.Post("/api/v1/webhooks/" + kUnknownId + "/deliveries/" + failedOrders + "/retry", "",
             "application/json");
  CHECK(statusOf(unknownWebhook) == 404);
  // The delivery exists, but in another webhook's events DB.
  auto elsewhere =
      c.Post("/api/v1/webhooks/" + f.otherWebhookId + "/deliveries/" + failedOrders + "/retry",
             "", "application/json");
  CHECK(statusOf(elsewhere) == 404);
  unchanged.check();

  REQUIRE(statusOf(c.Delete("/api/v1/webhooks/" + f.webhookId + "/targets/" + f.ordersId)) == 204);
  Unchanged afterDelete(f);
  auto deleted = f.post("/deliveries/" + failedOrders + "/retry", "");
  CHECK(statusOf(deleted) == 409);
  CHECK(errorCode(deleted) == "target_deleted");
  CHECK(jsonOf(deleted)["error"]["message"].get<std::string>().find("deleted") !=
        std::string::npos);
  afterDelete.check();
}

TEST_CASE("redeliver creates new pending deliveries for an event") {
  HistoryFixture f;
  const std::string eventId = f.ingest(R"({"n":1})");
  f.deliver(f.deliveryOf(eventId, f.ordersId));
  f.server.dispatcher().clear();
  const auto path = f.server.eventsDbPath(f.webhookId);

  SUBCASE("to every active target by default") {
    auto c = f.server.client();
    REQUIRE(statusOf(patchJson(c, "/api/v1/webhooks/" + f.webhookId + "/targets/" + f.auditId,
                               {{"active", false}})) == 200);
    auto res = f.post("/events/" + eventId + "/redeliver", "");
    REQUIRE(statusOf(res) == 201);
    const json body = jsonOf(res);
    CHECK(body["event_id"] == eventId);
    REQUIRE(body["deliveries"].size() == 1);
    const json& d = body["deliveries"][0];
    CHECK(d["target_id"] == f.ordersId);
    CHECK(d["target_name"] == "orders");
    CHECK(d["status"] == "pending");
    CHECK(countRows(path, "deliveries", "event_id = '" + eventId + "'") == 3);
    CHECK(statusIn(f, d["id"]) == "pending");
    const auto tasks = f.server.dispatcher().tasks();
    REQUIRE(tasks.size() == 1);
    CHECK(tasks[0].deliveryId == d["id"]);
    CHECK(tasks[0].attempt == 1);
    CHECK(tasks[0].seriesStart == 0);
  }
  SUBCASE("to the targets named, each once") {
    auto res = f.post("/events/" + eventId + "/redeliver",
                      json{{"target_ids", {f.auditId, f.auditId}}}.dump());
    REQUIRE(statusOf(res) == 201);
    REQUIRE(jsonOf(res)["deliveries"].size() == 1);
    CHECK(jsonOf(res)["deliveries"][0]["target_id"] == f.auditId);
    CHECK(countRows(path, "deliveries", "target_id = '" + f.auditId + "'") == 2);
  }
  SUBCASE("bad input changes nothing") {
    auto c = f.server.client();
    REQUIRE(statusOf(patchJson(c, "/api/v1/webhooks/" + f.webhookId + "/targets/" + f.auditId,
                               {{"active", false}})) == 200);
    const json gone = f.server.createTarget(f.webhookId, HistoryFixture::targetBody("gone"));
    REQUIRE(statusOf(c.Delete("/api/v1/webhooks/" + f.webhookId + "/targets/" +
                              gone["id"].get<std::string>())) == 204);
    Unchanged unchanged(f);
    struct Case {
      std::string body;
      int status;
      std::string code;
    };
    const std::vector<Case> cases = {
        {R"({"target_ids": "x"})", 400, "invalid_field"},
        {R"({"target_ids": []})", 400, "invalid_field"},
        {R"({"target_ids": [1]})", 400, "invalid_field"},
        {R"({"target_ids": ["orders"]})", 400, "invalid_field"},
        {json{{"target_ids", {f.ordersId, f.otherTargetId}}}.dump(), 400, "unknown_target"},
        {json{{"target_ids", {kUnknownId}}}.dump(), 400, "unknown_target"},
        {json{{"target_ids", {f.ordersId, gone["id"]}}}.dump(), 409, "target_deleted"},
        {json{{"target_ids", {f.auditId}}}.dump(), 409, "target_inactive"},
        {json{{"targets", {f.ordersId}}}.dump(), 400, "unknown_field"},
        {"{not json", 400, "invalid_json"},
        {"[]", 400, "expected_object"},
    };
    for (const Case& k : cases) {
      CAPTURE(k.body);
      auto res = f.post("/events/" + eventId + "/redeliver", k.body);
      CHECK(statusOf(res) == k.status);
      CHECK(errorCode(res) == k.code);
    }
    for (const std::string& p : {"/events/" + kUnknownId + "/redeliver",
                                 std::string("/events/not-a-uuid/redeliver")}) {
      auto res = f.post(p, "");
      CHECK(statusOf(res) == 404);
      CHECK(errorCode(res) == "not_found");
    }
    unchanged.check();
  }
  SUBCASE("no active target is a conflict") {
    auto c = f.server.client();
    for (const std::string& t : {f.ordersId, f.auditId})
      REQUIRE(statusOf(patchJson(c, "/api/v1/webhooks/" + f.webhookId + "/targets/" + t,
                                 {{"active", false}})) == 200);
    Unchanged unchanged(f);
    auto res = f.post("/events/" + eventId + "/redeliver", "{}");
    CHECK(statusOf(res) == 409);
    CHECK(errorCode(res) == "no_active_targets");
    unchanged.check();
  }
}

TEST_CASE("replay: a dry run counts exactly what the real run then resets") {
  HistoryFixture f;
  const auto events = f.ingestMany(6);  // at start + 0 .. 5 s
  for (int i = 0; i < 4; ++i) f.fail(f.deliveryOf(events[i], f.ordersId), 3);
  f.deliver(f.deliveryOf(events[4], f.ordersId));
  // events[5] to orders stays pending.
  f.fail(f.deliveryOf(events[0], f.auditId), 1);
  for (int i = 1; i < 6; ++i) f.deliver(f.deliveryOf(events[i], f.auditId));
  f.server.dispatcher().clear();

  auto count = [&](const json& body) {
    json dry = body;
    dry["dry_run"] = true;
    auto res = f.post("/replay", dry.dump());
    REQUIRE(statusOf(res) == 200);
    CHECK(jsonOf(res)["dry_run"] == true);
    return jsonOf(res)["count"].get<int64_t>();
  };
  {
    Unchanged unchanged(f);
    CHECK(count(json::object()) == 5);
    CHECK(count({{"status", "failed"}}) == 5);
    CHECK(count({{"target_id", f.ordersId}}) == 4);
    CHECK(count({{"target_id", f.auditId}}) == 1);
    CHECK(count({{"since", f.timeAt(2)}}) == 2);
    CHECK(count({{"until", f.timeAt(1)}}) == 2);
    CHECK(count({{"since", f.timeAt(1)}, {"until", f.timeAt(3)}}) == 2);
    CHECK(count({{"status", "all"}, {"target_id", f.ordersId}}) == 5);
    CHECK(count({{"status", "all"}}) == 11);
    unchanged.check();
  }

  const json filter = {{"since", f.timeAt(1)}, {"target_id", f.ordersId}};
  CHECK(count(filter) == 3);
  auto res = f.post("/replay", filter.dump());
  REQUIRE(statusOf(res) == 200);
  CHECK(jsonOf(res)["count"] == 3);
  CHECK(jsonOf(res)["dry_run"] == false);
  const auto path = f.server.eventsDbPath(f.webhookId);
  for (int i = 1; i < 4; ++i) {
    const std::string id = f.deliveryOf(events[i], f.ordersId);
    CAPTURE(i);
    CHECK(statusIn(f, id) == "pending");
    CHECK(seriesStartOf(path, id) == 3);
    CHECK(countRows(path, "deliveries", "id = '" + id + "' AND failure_reason IS NULL") == 1);
    CHECK(countRows(path, "delivery_results", "delivery_id = '" + id + "'") == 3);
  }
  CHECK(statusIn(f, f.deliveryOf(events[0], f.ordersId)) == "failed");
  CHECK(statusIn(f, f.deliveryOf(events[0], f.auditId)) == "failed");
  // Handed to the engine oldest event first, as new series.
  const auto tasks = f.server.dispatcher().tasks();
  REQUIRE(tasks.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(tasks[i].deliveryId == f.deliveryOf(events[i + 1], f.ordersId));
    CHECK(tasks[i].attempt == 4);
    CHECK(tasks[i].seriesStart == 3);
    CHECK(tasks[i].targetType == webhooker::TargetType::kHttp);
  }
  CHECK(count(filter) == 0);

  SUBCASE("status all restarts delivered deliveries too") {
    f.server.dispatcher().clear();
    auto all = f.post("/replay", json{{"status", "all"}, {"target_id", f.auditId}}.dump());
    REQUIRE(statusOf(all) == 200);
    CHECK(jsonOf(all)["count"] == 6);
    CHECK(f.server.dispatcher().tasks().size() == 6);
    CHECK(statusIn(f, f.deliveryOf(events[3], f.auditId)) == "pending");
    CHECK(seriesStartOf(path, f.deliveryOf(events[3], f.auditId)) == 1);
  }
  SUBCASE("deliveries of a deleted target are left alone") {
    auto c = f.server.client();
    REQUIRE(statusOf(c.Delete("/api/v1/webhooks/" + f.webhookId + "/targets/" + f.auditId)) ==
            204);
    CHECK(count(json::object()) == 1);  // events[0] to orders only
    auto run = f.post("/replay", "");
    REQUIRE(statusOf(run) == 200);
    CHECK(jsonOf(run)["count"] == 1);
    CHECK(statusIn(f, f.deliveryOf(events[0], f.auditId)) == "failed");
  }
}

TEST_CASE("replay: bad input is a 4xx with a clear error, and nothing changes") {
  HistoryFixture f;
  const auto events = f.ingestMany(3);
  for (const auto& e : events) f.fail(f.deliveryOf(e, f.ordersId), 2);
  auto c = f.server.client();
  const json gone = f.server.createTarget(f.webhookId, HistoryFixture::targetBody("gone"));
  REQUIRE(statusOf(c.Delete("/api/v1/webhooks/" + f.webhookId + "/targets/" +
                            gone["id"].get<std::string>())) == 204);
  f.server.dispatcher().clear();
  Unchanged unchanged(f);

  struct Case {
    json body;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {{{"status", "pending"}}, 400, "invalid_field"},
      {{{"status", "FAILED"}}, 400, "invalid_field"},
      {{{"status", 1}}, 400, "invalid_field"},
      {{{"since", "yesterday"}}, 400, "invalid_field"},
      {{{"until", "2026-11-29T25:00:00Z"}}, 400, "invalid_field"},
      {{{"since", 1795000000}}, 400, "invalid_field"},
      {{{"since", f.timeAt(2)}, {"until", f.timeAt(1)}}, 400, "invalid_time_range"},
      {{{"dry_run", "yes"}}, 400, "invalid_field"},
      {{{"target_id", "orders"}}, 400, "invalid_field"},
      {{{"target_id", f.otherTargetId}}, 400, "unknown_target"},
      {{{"target_id", kUnknownId}}, 400, "unknown_target"},
      {{{"target_id", gone["id"]}}, 409, "target_deleted"},
      {{{"status", "failed"}, {"targets", "all"}}, 400, "unknown_field"},
      // A dry run flag does not make bad input acceptable.
      {{{"dry_run", true}, {"since", "soon"}}, 400, "invalid_field"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.body.dump());
    auto res = f.post("/replay", k.body.dump());
    CHECK(statusOf(res) == k.status);
    CHECK(errorCode(res) == k.code);
  }
  for (const std::string& raw : {std::string("{not json"), std::string("[1]")}) {
    auto res = f.post("/replay", raw);
    CHECK(statusOf(res) == 400);
  }
  for (const std::string& webhook : {kUnknownId, std::string("not-a-uuid")}) {
    auto res = c.Post("/api/v1/webhooks/" + webhook + "/replay", "{}", "application/json");
    CHECK(statusOf(res) == 404);
    CHECK(errorCode(res) == "not_found");
  }
  unchanged.check();
}

// --- Through the engine, to loopback receivers ------------------------------

TEST_CASE("a retried dead letter gets a full new retry budget and keeps its old attempts") {
  EngineHarness h(quickBreaker());
  Receiver r;
  r.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(2, 30));
  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).attempts == 3);

  auto c = harnessClient(h);
  const std::string retryPath =
      "/api/v1/webhooks/" + hook.webhookId + "/deliveries/" + ref.id + "/retry";
  postOk(c, retryPath, json::object());
  // The receiver is still down: three more attempts (not zero), then failed again.
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  DeliveryRow row = h.delivery(ref);
  CHECK(row.attempts == 6);
  CHECK(row.failureReason == "max_attempts");
  auto rows = h.resultRows(ref);
  REQUIRE(rows.size() == 6);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].attempt == static_cast<int>(i) + 1);
    CHECK(rows[i].statusCode == 503);
  }
  CHECK(r.requestCount() == 6);

  r.setDefault(respond(200));
  postOk(c, retryPath, json::object());
  REQUIRE(h.waitForStatus(ref, "delivered", 10s));
  CHECK(h.delivery(ref).attempts == 7);
  CHECK(h.resultRows(ref).size() == 7);
  CHECK(seriesStartOf(h.eventsDbPath(hook.webhookId), ref.id) == 6);
}

TEST_CASE("redelivered events reach the receiver again as new deliveries") {
  EngineHarness h;
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"));
  const std::string eventId = h.post(hook.entrypointId, R"({"order":7})");
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 1, 5s));

  auto c = harnessClient(h);
  const json created = postOk(
      c, "/api/v1/webhooks/" + hook.webhookId + "/events/" + eventId + "/redeliver",
      json::object(), 201);
  REQUIRE(created["deliveries"].size() == 1);
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 2, 5s));
  const auto deliveries = h.deliveriesOf(hook.webhookId, target.id);
  REQUIRE(deliveries.size() == 2);
  CHECK(deliveries[1].id == created["deliveries"][0]["id"]);
  CHECK(deliveries[1].attempts == 1);
  REQUIRE(r.waitForRequests(2, 5s));
  const auto requests = r.requests();
  CHECK(requests[0].body == R"({"order":7})");
  CHECK(requests[1].body == R"({"order":7})");
}

TEST_CASE("a replay goes through the target's lane: never above max_concurrency") {
  EngineHarness h;
  Receiver r;
  r.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  // No retries: every event dead-letters at its first attempt.
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(0, 100), /*maxConcurrency=*/2);
  constexpr size_t kEvents = 12;
  for (size_t i = 0; i < kEvents; ++i) h.post(hook.entrypointId, json{{"n", i}}.dump());
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "failed", kEvents, 10s));

  // Slow answers make every lane slot fill up.
  Receiver slow;
  slow.setDefault(respondAfter(100ms, 200));
  TargetRecord moved = h.store().getTarget(hook.webhookId, target.id).value();
  moved.configJson = json{{"url", slow.url("/in")}, {"timeout_ms", 5000}}.dump();
  REQUIRE(h.store().updateTarget(moved));
  h.engine().targetChanged(hook.webhookId, target.id);

  auto c = harnessClient(h);
  const json replayed = postOk(c, "/api/v1/webhooks/" + hook.webhookId + "/replay", json::object());
  CHECK(replayed["count"] == kEvents);
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 20s));
  CHECK(slow.requestCount() == kEvents);
  CHECK(slow.maxInFlight() <= 2);
  CHECK(slow.maxInFlight() == 2);  // and the lane was used, not serialised
}

TEST_CASE("recovery after a restart keeps a redriven delivery's attempt series") {
  HarnessOptions options = quickBreaker();
  options.startEngine = false;
  EngineHarness h(options);
  Receiver r;
  r.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(2, 30));
  InboundEvent event;
  event.method = "POST";
  event.path = "/hooks/" + hook.entrypointId;
  event.contentType = "application/json";
  event.body = "{}";
  const IngestOutcome stored = h.ingestDirect(hook.webhookId, event, {target.id}, false);
  const std::string deliveryId = stored.deliveries.at(0).id;

  // As the previous run left it: a dead letter after three attempts,
  // retried, and the first attempt of the new series failed.
  auto db = h.eventsDbs().get(hook.webhookId).value();
  for (int i = 1; i <= 4; ++i) {
    AttemptRecord a;
    a.deliveryId = deliveryId;
    a.attempt = i;
    a.statusCode = 503;
    a.newStatus = i == 3 ? DeliveryStatus::kFailed : DeliveryStatus::kRetrying;
    if (i == 3) a.failureReason = webhooker::FailureKind::kMaxAttempts;
    if (i == 4) a.nextAttemptAt = h.clock().now() + 30ms;
    REQUIRE(db->recordAttempt(a));
    if (i == 3) REQUIRE(db->retryDelivery(deliveryId));
  }

  h.startEngine();
  const DeliveryRef ref{hook.webhookId, deliveryId};
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  // Attempts 5 and 6 are the series' second and third: the budget of 2
  // retries counts from series_start, not from the first attempt ever.
  CHECK(h.delivery(ref).attempts == 6);
  CHECK(h.delivery(ref).failureReason == "max_attempts");
  CHECK(r.requestCount() == 2);
}

// --- As a user lives it: the real daemon and the CLI -----------------------

TEST_CASE("an outage: dead letters, the receiver returns, one replay command delivers them all") {
  constexpr int kEvents = 6;
  Receiver receiver;
  receiver.setDefault(respond(503));  // down for the whole retry window
  TempDir dir;
  DaemonOptions options;
  options.env = {"WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  // A short breaker cooldown so the retry window passes in seconds.
  options.args = {"--breaker-cooldown-ms", "100"};
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(daemon.adminToken());
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + *daemon.adminToken()};
  httplib::Client api(daemon.url());
  api.set_tcp_nodelay(true);
  api.set_bearer_token_auth(*daemon.adminToken());

  const json webhook = postOk(api, "/api/v1/webhooks", {{"name", "shop"}}, 201);
  const std::string webhookId = webhook["id"];
  const std::string hook = webhook["entrypoints"][0]["url"];
  const json target = postOk(
      api, "/api/v1/webhooks/" + webhookId + "/targets",
      {{"name", "orders"},
       {"type", "http"},
       {"max_concurrency", 2},
       {"config", {{"url", receiver.url("/in")}}},
       {"retry", {{"max_retries", 2}, {"base_delay_ms", 100}, {"max_delay_ms", 1000}}}},
      201);
  const std::string since = formatTime(SystemClock().now());
  httplib::Client sender(daemon.url());
  std::vector<std::string> eventIds;
  for (int i = 0; i < kEvents; ++i) {
    auto res = sender.Post(hook, json{{"order", i}}.dump(), "application/json");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    eventIds.push_back(json::parse(res->body)["event_id"]);
  }

  auto deliveries = [&](const std::string& status) {
    auto res = api.Get("/api/v1/webhooks/" + webhookId + "/deliveries?limit=500&status=" + status);
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return json::parse(res->body)["deliveries"];
  };
  auto waitFor = [&](const std::string& status, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (deliveries(status).size() < kEvents && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(50ms);
    return deliveries(status).size() == kEvents;
  };
  REQUIRE(waitFor("failed", 30s));
  for (const json& d : deliveries("failed")) {
    CHECK(d["failure_reason"] == "max_attempts");
    CHECK(d["attempts"] == 3);
    CHECK(d["last_status_code"] == 503);
  }
  const size_t requestsWhileDown = receiver.requestCount();
  CHECK(requestsWhileDown == 3 * kEvents);

  // The dead-letter view, as a table.
  const auto dead = runWebhooker(
      {"deliveries", "list", webhookId, "--status", "failed", "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(dead.exitCode == 0, dead.err);
  CHECK(firstMatch(dead.out, "^ID +EVENT +EVENT_TYPE +TARGET +STATUS"));
  size_t rows = 0;
  for (size_t at = 0; (at = dead.out.find(" orders ", at)) != std::string::npos; ++at) ++rows;
  CHECK(rows == kEvents);

  receiver.setDefault(respond(200));  // back up

  const auto dry = runWebhooker(
      {"replay", webhookId, "--since", since, "--dry-run", "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(dry.exitCode == 0, dry.err);
  CHECK(dry.out == std::to_string(kEvents) + " deliveries would be replayed (dry run)\n");
  CHECK(receiver.requestCount() == requestsWhileDown);  // a dry run sends nothing

  const auto replay =
      runWebhooker({"replay", webhookId, "--since", since, "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(replay.exitCode == 0, replay.err);
  CHECK(replay.out == "replayed " + std::to_string(kEvents) + " deliveries\n");

  REQUIRE(waitFor("delivered", 30s));
  CHECK(deliveries("failed").empty());
  for (const json& d : deliveries("delivered")) {
    CHECK(d["attempts"] == 4);
    CHECK(d["series_start"] == 3);
    CHECK(d["last_status_code"] == 200);
  }
  CHECK(receiver.requestCount() == 4 * kEvents);
  CHECK(receiver.maxInFlight() <= 2);

  // The whole story of one event, readable.
  const auto shown =
      runWebhooker({"events", "show", webhookId, eventIds[0], "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(shown.exitCode == 0, shown.err);
  CHECK(shown.out.find(R"({"order":0})") != std::string::npos);
  CHECK(firstMatch(shown.out, "\\n\\S+ +4 +200 +yes "));
  CHECK(firstMatch(shown.out, "\\n\\S+ +3 +503 +no "));

  // One retry of a delivered delivery is refused; a redelivery makes a new one.
  const std::string firstDelivery = deliveries("delivered")[0]["id"];
  const auto refused =
      runWebhooker({"deliveries", "retry", webhookId, firstDelivery, "--url", daemon.url()}, env);
  CHECK(refused.exitCode == 1);
  CHECK(refused.err.find("only failed deliveries can be retried") != std::string::npos);
  const auto again = runWebhooker({"redeliver", webhookId, eventIds[0], "--target",
                                   target["id"].get<std::string>(), "--url", daemon.url()},
                                  env);
  REQUIRE_MESSAGE(again.exitCode == 0, again.err);
  CHECK(again.out.find("created 1 delivery\n") == 0);
  const auto listed = runWebhooker({"events", "list", webhookId, "--limit", "2", "--url",
                                    daemon.url(), "--json"},
                                   env);
  REQUIRE_MESSAGE(listed.exitCode == 0, listed.err);
  const json page = json::parse(listed.out);
  CHECK(page["events"].size() == 2);
  CHECK(page["next_cursor"].is_string());
  CHECK(daemon.stop() == 0);
}

}  // namespace webhooker::testing
