// Pull targets: a consumer leases a pull target's waiting deliveries, then
// acks, nacks or extends them (docs/api.md#pull). First against the admin
// API in-process with a fake clock (HistoryFixture: leases run out when the
// test moves the clock), reading the events DB directly; last against the
// real daemon: its engine leaves pull deliveries alone, a transform shapes
// what is leased, and a kill -9 loses no ack and re-offers what was not.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/secret.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/expect_json.h"
#include "tests/support/eventually.h"
#include "tests/support/history_fixture.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kUnknownId = "00000000-0000-4000-8000-000000000000";

// HistoryFixture's webhook with a pull target "queue" beside its http ones.
struct PullFixture : HistoryFixture {
  explicit PullFixture(const json& extra = json::object()) {
    json body = {{"name", "queue"}, {"type", "pull"}, {"retry", {{"max_retries", 2}}}};
    body.update(extra);
    pullId = server.createTarget(webhookId, body)["id"];
  }
  httplib::Result call(const std::string& verb, const json& body) {
    return post("/targets/" + pullId + "/" + verb, body.dump());
  }
  json lease(int count, int seconds = 30) {
    auto res = call("lease", {{"count", count}, {"lease_seconds", seconds}});
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 200);
    return json::parse(res->body);
  }
  // The ids a lease answer holds, in order.
  static std::vector<std::string> ids(const json& lease) {
    std::vector<std::string> out;
    for (const json& d : lease["deliveries"]) out.push_back(d["id"]);
    return out;
  }
  // POST .../<verb> for `ids` under `lease`; each id's answer by id.
  std::map<std::string, json> settle(const std::string& verb, const json& lease,
                                     const std::vector<std::string>& ids,
                                     const json& extra = json::object()) {
    json body = {{"lease", lease["lease"]}, {"ids", ids}};
    body.update(extra);
    auto res = call(verb, body);
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 200);
    const json answer = json::parse(res->body);
    std::map<std::string, json> out;
    for (const json& r : answer["results"]) out[r["id"].get<std::string>()] = r;
    REQUIRE(out.size() == ids.size());
    return out;
  }
  std::string column(const std::string& deliveryId, const std::string& name) const {
    auto file = openReadOnly(server.eventsDbPath(webhookId));
    SQLite::Statement q(file, "SELECT COALESCE(" + name + ", 'NULL') FROM deliveries WHERE id = ?");
    q.bind(1, deliveryId);
    REQUIRE(q.executeStep());
    return q.getColumn(0).getString();
  }
  int64_t results(const std::string& deliveryId, const std::string& where = "1") const {
    return countRows(server.eventsDbPath(webhookId), "delivery_results",
                     "delivery_id = '" + deliveryId + "' AND " + where);
  }
  std::string pullId;
};

std::string errorOf(const json& answer) {
  return answer.contains("error") ? answer["error"]["code"].get<std::string>() : "<done>";
}

}  // namespace

TEST_CASE("pull: a lease hands out the oldest due deliveries; ack delivers; a lease runs out") {
  PullFixture f;
  const std::vector<std::string> events = {f.ingest(R"({"n":0})"), f.ingest(R"({"n":1})"),
                                           f.ingest(R"({"n":2})")};
  std::vector<std::string> deliveries;
  for (const std::string& e : events) deliveries.push_back(f.deliveryOf(e, f.pullId));

  const json a = f.lease(2);
  REQUIRE(PullFixture::ids(a) == std::vector<std::string>{deliveries[0], deliveries[1]});
  const std::string token = a["lease"];
  CHECK(token.rfind("whl_", 0) == 0);
  CHECK(a["expires_at"] == formatTime(f.clock.now() + 30s));
  const json& first = a["deliveries"][0];
  CHECK(first["event_id"] == events[0]);
  CHECK(first["attempt"] == 1);
  CHECK(first["body"] == R"({"n":0})");
  CHECK(first["body_encoding"] == "text");
  CHECK(first["content_type"] == "application/json");
  // Only the token's hash is stored, and nowhere the token itself.
  CHECK(f.column(deliveries[0], "lease_hash") == sha256Hex(token));
  CHECK(f.eventsDump().find(token) == std::string::npos);
  CHECK(dumpDatabase(f.server.mainDbPath()).find(token) == std::string::npos);

  // The third is all another consumer gets: the first two are held.
  const json b = f.lease(10);
  REQUIRE(PullFixture::ids(b) == std::vector<std::string>{deliveries[2]});

  auto acked = f.settle("ack", a, {deliveries[0]});
  CHECK(acked[deliveries[0]]["status"] == "delivered");
  CHECK(acked[deliveries[0]]["attempt"] == 1);
  CHECK(f.column(deliveries[0], "status") == "delivered");
  CHECK(f.results(deliveries[0], "success = 1") == 1);
  // Settled once: a second ack, and an ack under a lease that does not hold
  // the id, change nothing.
  const std::string before = f.eventsDump();
  auto again = f.settle("ack", a, {deliveries[0], deliveries[2]});
  CHECK(errorOf(again[deliveries[0]]) == "not_leased");
  CHECK(errorOf(again[deliveries[2]]) == "not_leased");
  CHECK(f.eventsDump() == before);

  // The second is extended to 60 s from now; b's 30 s run out first.
  auto extended = f.settle("extend", a, {deliveries[1]}, {{"lease_seconds", 60}});
  CHECK(extended[deliveries[1]]["expires_at"] == formatTime(f.clock.now() + 60s));
  f.clock.advance(45s);
  auto late = f.settle("ack", b, {deliveries[2]});
  CHECK(errorOf(late[deliveries[2]]) == "lease_expired");
  CHECK(f.column(deliveries[2], "status") == "pending");
  // Run out: offered again, and its attempt was not counted.
  const json c = f.lease(10);
  REQUIRE(PullFixture::ids(c) == std::vector<std::string>{deliveries[2]});
  CHECK(c["deliveries"][0]["attempt"] == 1);
  f.clock.advance(20s);
  const json d = f.lease(10);
  REQUIRE(PullFixture::ids(d) == std::vector<std::string>{deliveries[1]});
  CHECK(f.settle("ack", d, {deliveries[1]})[deliveries[1]]["status"] == "delivered");
  CHECK(f.settle("ack", c, {deliveries[2]})[deliveries[2]]["status"] == "delivered");
  CHECK(f.lease(10)["deliveries"].empty());
  // The http targets' deliveries were never leased.
  CHECK(f.column(f.deliveryOf(events[0], f.ordersId), "lease_hash") == "NULL");
}

TEST_CASE("pull: a nack is an attempt; after max_retries of them the delivery is dead-lettered") {
  PullFixture f;  // max_retries 2: three attempts
  const std::string delivery = f.deliveryOf(f.ingest(R"({"n":1})"), f.pullId);

  const json first = f.lease(1);
  auto nacked = f.settle("nack", first, {delivery}, {{"delay_seconds", 10}});
  CHECK(nacked[delivery]["status"] == "retrying");
  CHECK(nacked[delivery]["attempt"] == 1);
  CHECK(nacked[delivery]["next_attempt_at"] == formatTime(f.clock.now() + 10s));
  CHECK(f.lease(1)["deliveries"].empty());  // not before its time
  f.clock.advance(10s);

  const json second = f.lease(1);
  REQUIRE(PullFixture::ids(second) == std::vector<std::string>{delivery});
  CHECK(second["deliveries"][0]["attempt"] == 2);
  // Without delay_seconds: the target's backoff.
  CHECK(f.settle("nack", second, {delivery})[delivery]["status"] == "retrying");
  CHECK(f.lease(1)["deliveries"].empty());
  f.clock.advance(301s);  // past the largest backoff (300 s)

  const json third = f.lease(1);
  REQUIRE(PullFixture::ids(third) == std::vector<std::string>{delivery});
  auto dead = f.settle("nack", third, {delivery});
  CHECK(dead[delivery]["status"] == "failed");
  CHECK(dead[delivery]["failure_reason"] == "max_attempts");
  CHECK(f.column(delivery, "status") == "failed");
  CHECK(f.column(delivery, "failure_reason") == "max_attempts");
  CHECK(f.results(delivery, "success = 0 AND error = 'nacked by the consumer'") == 3);
  f.clock.advance(1h);
  CHECK(f.lease(10)["deliveries"].empty());
}

TEST_CASE("pull: ordering fifo hands out one delivery at a time, the next only after the first") {
  PullFixture f(json{{"ordering", "fifo"}});
  std::vector<std::string> deliveries;
  for (int i = 0; i < 3; ++i)
    deliveries.push_back(f.deliveryOf(f.ingest(json{{"n", i}}.dump()), f.pullId));

  const json a = f.lease(10);
  REQUIRE(PullFixture::ids(a) == std::vector<std::string>{deliveries[0]});
  CHECK(f.lease(10)["deliveries"].empty());  // the head is held
  f.settle("nack", a, {deliveries[0]}, {{"delay_seconds", 5}});
  CHECK(f.lease(10)["deliveries"].empty());  // the head waits: nothing passes it
  f.clock.advance(5s);
  const json b = f.lease(10);
  REQUIRE(PullFixture::ids(b) == std::vector<std::string>{deliveries[0]});
  f.settle("ack", b, {deliveries[0]});
  const json c = f.lease(10);
  REQUIRE(PullFixture::ids(c) == std::vector<std::string>{deliveries[1]});
  // A head whose lease runs out is the head again.
  f.clock.advance(31s);
  REQUIRE(PullFixture::ids(f.lease(10)) == std::vector<std::string>{deliveries[1]});
}

TEST_CASE("pull: consumers leasing at once never hold the same delivery") {
  PullFixture f;
  constexpr int kEvents = 120;
  std::set<std::string> all;
  for (const std::string& e : f.ingestMany(kEvents)) all.insert(f.deliveryOf(e, f.pullId));

  std::mutex mutex;
  std::vector<std::string> leased;  // every id handed out, by every consumer
  std::vector<std::thread> consumers;
  for (int i = 0; i < 4; ++i)
    consumers.emplace_back([&] {
      auto c = f.server.client();
      const std::string path = "/api/v1/webhooks/" + f.webhookId + "/targets/" + f.pullId + "/lease";
      while (true) {
        auto res = c.Post(path, json{{"count", 7}}.dump(), "application/json");
        if (!res || res->status != 200) return;
        const json answer = json::parse(res->body);
        if (answer["deliveries"].empty()) return;
        std::lock_guard lock(mutex);
        for (const json& d : answer["deliveries"]) leased.push_back(d["id"]);
        if (leased.size() > 2 * all.size()) return;  // handed out again and again: failed
      }
    });
  for (auto& t : consumers) t.join();
  std::vector<std::string> sorted = leased;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  CHECK(std::set<std::string>(leased.begin(), leased.end()) == all);
}

TEST_CASE("pull: bad input is refused with 400 and changes nothing") {
  PullFixture f;
  const std::string delivery = f.deliveryOf(f.ingest(R"({"n":1})"), f.pullId);
  const json held = f.lease(1, 300);
  const std::string token = held["lease"];
  // Every pull state is in the events DB (the main DB gains only the audit
  // log's rows of these requests).
  const std::string events = f.eventsDump();

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lease", R"({"count": 0})"},
      {"lease", R"({"count": 101})"},
      {"lease", R"({"count": "5"})"},
      {"lease", R"({"lease_seconds": 0})"},
      {"lease", R"({"lease_seconds": 3601})"},
      {"lease", R"({"count": 1, "wait": 5})"},
      {"lease", R"([1])"},
      {"lease", R"({"count": )"},
      {"ack", "{}"},
      {"ack", json{{"lease", token}}.dump()},
      {"ack", json{{"lease", token}, {"ids", json::array()}}.dump()},
      {"ack", json{{"lease", token}, {"ids", {"not-an-id"}}}.dump()},
      {"ack", json{{"lease", token}, {"ids", {delivery, delivery}}}.dump()},
      {"ack", json{{"lease", token}, {"ids", std::vector<std::string>(101, delivery)}}.dump()},
      {"ack", json{{"lease", "abc"}, {"ids", {delivery}}}.dump()},
      {"ack", json{{"lease", 5}, {"ids", {delivery}}}.dump()},
      {"ack", json{{"lease", token}, {"ids", {delivery}}, {"delay_seconds", 1}}.dump()},
      {"nack", json{{"lease", token}, {"ids", {delivery}}, {"delay_seconds", -1}}.dump()},
      {"nack", json{{"lease", token}, {"ids", {delivery}}, {"delay_seconds", 86401}}.dump()},
      {"nack", json{{"lease", token}, {"ids", {delivery}}, {"delay_seconds", "1"}}.dump()},
      {"extend", json{{"lease", token}, {"ids", {delivery}}, {"lease_seconds", 0}}.dump()},
      {"extend", json{{"lease", token}, {"ids", {delivery}}, {"lease_seconds", 3601}}.dump()},
  };
  for (const auto& bad : cases) {
    const std::string& verb = bad.first;
    const std::string& body = bad.second;
    CAPTURE(verb);
    CAPTURE(body);
    auto res = f.post("/targets/" + f.pullId + "/" + verb, body);
    CHECK(statusOf(res) == 400);
    CHECK(errorCode(res).find(' ') == std::string::npos);  // the JSON error shape
  }
  // Not a pull target; no such target.
  auto http = f.post("/targets/" + f.ordersId + "/lease", "{}");
  CHECK(statusOf(http) == 409);
  CHECK(errorCode(http) == "not_pull_target");
  CHECK(statusOf(f.post("/targets/" + kUnknownId + "/lease", "{}")) == 404);
  // An unknown delivery under a real lease: answered for that id only.
  auto unknown = f.settle("ack", held, {kUnknownId});
  CHECK(errorOf(unknown[kUnknownId]) == "not_leased");
  CHECK(f.eventsDump() == events);
}

TEST_CASE("pull: a webhook with no events file leases nothing, settles nothing, makes no file") {
  PullFixture f;  // its webhook's file is made; the other webhook has had no event
  const std::string otherPull =
      f.server.createTarget(f.otherWebhookId, {{"name", "queue"}, {"type", "pull"}})["id"];
  auto admin = f.server.client();
  const auto call = [&](const std::string& webhookId, const std::string& targetId,
                        const std::string& verb, const json& body) {
    auto res = admin.Post("/api/v1/webhooks/" + webhookId + "/targets/" + targetId + "/" + verb,
                          body.dump(), "application/json");
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 200);
    return json::parse(res->body);
  };

  const json lease = call(f.otherWebhookId, otherPull, "lease", {{"lease_seconds", 60}});
  CHECK(lease["lease"].get<std::string>().rfind("whl_", 0) == 0);
  CHECK(lease["expires_at"] == formatTime(f.clock.now() + 60s));
  CHECK(lease["deliveries"] == json::array());
  // Each verb answers an id as it does for a webhook with events whose lease
  // does not hold it.
  const json withEvents = f.lease(1);
  for (const char* verb : {"ack", "nack", "extend"}) {
    CAPTURE(verb);
    const json settled =
        call(f.otherWebhookId, otherPull, verb, {{"lease", lease["lease"]}, {"ids", {kUnknownId}}});
    REQUIRE(settled["results"].size() == 1);
    CHECK(errorOf(settled["results"][0]) == "not_leased");
    CHECK(settled == call(f.webhookId, f.pullId, verb,
                          {{"lease", withEvents["lease"]}, {"ids", {kUnknownId}}}));
  }
  CHECK_FALSE(std::filesystem::exists(f.server.eventsDbPath(f.otherWebhookId)));
  CHECK(f.server.eventsDbs().peek(f.otherWebhookId).open == nullptr);
}

TEST_CASE("pull: a token with operate may lease and ack; one with read may not") {
  PullFixture f;
  const std::string delivery = f.deliveryOf(f.ingest(R"({"n":1})"), f.pullId);
  std::map<std::string, std::string> tokens;
  for (const char* scope : {"read", "operate"}) {
    auto c = f.server.client();
    auto res = postJson(c, "/api/v1/webhooks/" + f.webhookId + "/tokens",
                        {{"name", scope}, {"scopes", {scope}}});
    REQUIRE(statusOf(res) == 201);
    tokens[scope] = jsonOf(res)["token"];
  }
  const auto as = [&](const std::string& scope, const std::string& verb, const json& body) {
    httplib::Client c("127.0.0.1", f.server.port());
    c.set_bearer_token_auth(tokens[scope]);
    return c.Post("/api/v1/webhooks/" + f.webhookId + "/targets/" + f.pullId + "/" + verb,
                  body.dump(), "application/json");
  };
  const std::string before = f.eventsDump();
  auto refused = as("read", "lease", {{"count", 1}});
  CHECK(statusOf(refused) == 403);
  CHECK(errorCode(refused) == "forbidden");
  CHECK(f.eventsDump() == before);

  auto leased = as("operate", "lease", {{"count", 1}});
  REQUIRE(statusOf(leased) == 200);
  const json lease = jsonOf(leased);
  REQUIRE(PullFixture::ids(lease) == std::vector<std::string>{delivery});
  const json ack = {{"lease", lease["lease"]}, {"ids", {delivery}}};
  CHECK(statusOf(as("read", "ack", ack)) == 403);
  CHECK(f.column(delivery, "status") == "pending");
  CHECK(statusOf(as("operate", "ack", ack)) == 200);
  CHECK(f.column(delivery, "status") == "delivered");
}

namespace {

}  // namespace

TEST_CASE("pull: kill -9 loses no ack and re-offers every unacknowledged delivery") {
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv()};
  constexpr int kEvents = 20;
  std::string webhookId, targetPath;
  std::set<int> acked;  // the "n" of each acknowledged event
  {
    DaemonProcess daemon(dir.path(), options);
    auto api = DaemonApi(daemon.url()).admin();
    const json webhook = expectJson(
        api.Post("/api/v1/webhooks", json{{"name", "pulled"}}.dump(), "application/json"), 201);
    webhookId = webhook["id"];
    const std::string entrypoint = webhook["entrypoints"][0]["id"];
    // The transform runs before a delivery is offered: the body leased is its output.
    const json target = expectJson(
        api.Post("/api/v1/webhooks/" + webhookId + "/targets",
                 json{{"name", "queue"}, {"type", "pull"}, {"transform", {{"jq", "{m: .body.n}"}}}}
                     .dump(),
                 "application/json"),
        201);
    targetPath = "/api/v1/webhooks/" + webhookId + "/targets/" + target["id"].get<std::string>();
    for (int n = 0; n < kEvents; ++n)
      expectJson(api.Post("/hooks/" + entrypoint, json{{"n", n}}.dump(), "application/json"), 200);

    // Ten leased for a second, five of them acked; ten never leased.
    const json lease = expectJson(
        api.Post(targetPath + "/lease", json{{"count", 10}, {"lease_seconds", 1}}.dump(),
                 "application/json"),
        200);
    REQUIRE(lease["deliveries"].size() == 10);
    std::vector<std::string> ackIds;
    for (int i = 0; i < 5; ++i) {
      const json& d = lease["deliveries"][i];
      CHECK(d["attempt"] == 1);  // the engine made no attempt of its own
      const json body = json::parse(d["body"].get<std::string>());
      REQUIRE(body.contains("m"));
      acked.insert(body["m"].get<int>());
      ackIds.push_back(d["id"]);
    }
    const json answer = expectJson(
        api.Post(targetPath + "/ack", json{{"lease", lease["lease"]}, {"ids", ackIds}}.dump(),
                 "application/json"),
        200);
    for (const json& r : answer["results"]) CHECK(r["status"] == "delivered");
    CHECK(daemon.kill9() == 128 + 9);
  }

  DaemonProcess again(dir.path(), options);
  auto api = DaemonApi(again.url()).admin();
  // Once the leases have run out, every unacknowledged delivery is offered
  // again, none twice and no acknowledged one.
  std::vector<int> offered;
  const bool drained = eventually(
      [&] {
        const json lease = expectJson(
            api.Post(targetPath + "/lease", json{{"count", 100}}.dump(), "application/json"), 200);
        std::vector<std::string> ids;
        for (const json& d : lease["deliveries"]) {
          offered.push_back(json::parse(d["body"].get<std::string>())["m"].get<int>());
          ids.push_back(d["id"]);
        }
        if (!ids.empty())
          expectJson(api.Post(targetPath + "/ack", json{{"lease", lease["lease"]}, {"ids", ids}}.dump(),
                              "application/json"),
                     200);
        return offered.size() >= static_cast<size_t>(kEvents) - acked.size();
      },
      10s);
  CHECK(drained);
  std::sort(offered.begin(), offered.end());
  CHECK(std::adjacent_find(offered.begin(), offered.end()) == offered.end());
  std::set<int> everything(acked);
  for (int n : offered) {
    CHECK(acked.count(n) == 0);
    everything.insert(n);
  }
  CHECK(everything.size() == static_cast<size_t>(kEvents));
  CHECK(countRows(dir.path() / ("events-" + webhookId + ".db"), "deliveries",
                  "status = 'delivered'") == kEvents);
  CHECK(again.stop() == 0);
}

}  // namespace webhooker::testing
