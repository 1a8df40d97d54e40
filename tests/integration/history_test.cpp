// The history API (DESIGN §7): events of a webhook with their deliveries,
// one event with every attempt, deliveries by status and target — over
// loopback HTTP against real SQLite files. Events arrive through the real
// ingest path with a fake clock (so received_at is chosen by the test);
// delivery outcomes are written through a second EventsDb connection, the
// storage API the targets use. Bad input must be refused and change nothing.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/secret.h"
#include "tests/support/engine_harness.h"
#include "tests/support/history_fixture.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::vector<std::string> idsOf(const json& rows) {
  std::vector<std::string> out;
  for (const json& r : rows) out.push_back(r["id"]);
  return out;
}

std::vector<std::string> reversed(std::vector<std::string> v) {
  return {v.rbegin(), v.rend()};
}

// Follows next_cursor from `firstQuery` ("?limit=3&...") to the end.
std::vector<json> allPages(HistoryFixture& f, const std::string& path, const std::string& listKey,
                           const std::string& query) {
  std::vector<json> pages;
  json page = f.get(path + query);
  pages.push_back(page);
  while (page["next_cursor"].is_string()) {
    REQUIRE(pages.size() < 100);
    page = f.get(path + query + "&cursor=" + page["next_cursor"].get<std::string>());
    pages.push_back(page);
  }
  for (const json& p : pages) CHECK(p[listKey].is_array());
  return pages;
}

}  // namespace

TEST_CASE("events list: newest first, filtered by delivery status, target and time") {
  HistoryFixture f;
  const auto events = f.ingestMany(7);  // at start + 0 .. 6 s
  for (int i = 0; i < 3; ++i) f.fail(f.deliveryOf(events[i], f.ordersId), 3);
  for (int i = 3; i < 7; ++i) f.deliver(f.deliveryOf(events[i], f.ordersId));
  for (int i = 0; i < 6; ++i) f.deliver(f.deliveryOf(events[i], f.auditId));
  // events[6] to audit stays pending.

  const json all = f.get("/events");
  CHECK(idsOf(all["events"]) == reversed(events));
  CHECK(all["next_cursor"].is_null());
  const json& newest = all["events"][0];
  CHECK(newest["method"] == "POST");
  CHECK(newest["content_type"] == "application/json");
  CHECK(newest["body_size"] == 7);
  CHECK(newest["received_at"] == f.timeAt(6));
  CHECK_FALSE(newest.contains("body"));  // only the event view carries bodies
  REQUIRE(newest["deliveries"].size() == 2);
  std::set<std::string> names;
  for (const json& d : newest["deliveries"]) names.insert(d["target_name"].get<std::string>());
  CHECK(names == std::set<std::string>{"orders", "audit"});

  SUBCASE("status") {
    CHECK(idsOf(f.get("/events?status=failed")["events"]) ==
          std::vector<std::string>{events[2], events[1], events[0]});
    CHECK(idsOf(f.get("/events?status=pending")["events"]) == std::vector<std::string>{events[6]});
    CHECK(f.get("/events?status=retrying")["events"].empty());
  }
  SUBCASE("target and status together: a delivery matching both") {
    CHECK(idsOf(f.get("/events?status=delivered&target_id=" + f.ordersId)["events"]) ==
          std::vector<std::string>{events[6], events[5], events[4], events[3]});
    CHECK(f.get("/events?status=failed&target_id=" + f.auditId)["events"].empty());
    CHECK(f.get("/events?target_id=" + f.auditId)["events"].size() == 7);
  }
  SUBCASE("since is inclusive, until exclusive; other spellings of a time work") {
    CHECK(idsOf(f.get("/events?since=" + f.timeAt(2) + "&until=" + f.timeAt(5))["events"]) ==
          std::vector<std::string>{events[4], events[3], events[2]});
    CHECK(idsOf(f.get("/events?since=" + f.timeAt(5))["events"]) ==
          std::vector<std::string>{events[6], events[5]});
    // A UTC offset, escaped as a client must ('+' is a space in a query).
    const std::string at4 = f.timeAt(4);  // "...THH:MM:SS.mmmZ"
    const int hour = std::stoi(at4.substr(11, 2));
    const std::string shifted = at4.substr(0, 11) + (hour < 9 ? "0" : "") +
                                std::to_string(hour + 1) + at4.substr(13, 10) + "%2B01:00";
    CHECK(idsOf(f.get("/events?until=" + shifted)["events"]) ==
          std::vector<std::string>{events[3], events[2], events[1], events[0]});
    CHECK(f.get("/events?since=" + f.timeAt(3) + "&until=" + f.timeAt(3))["events"].empty());
  }
}

TEST_CASE("event pages are disjoint, complete, and stable while new events arrive") {
  HistoryFixture f;
  const auto events = f.ingestMany(7);

  const auto pages = allPages(f, "/events", "events", "?limit=3");
  REQUIRE(pages.size() == 3);
  CHECK(pages[0]["events"].size() == 3);
  CHECK(pages[1]["events"].size() == 3);
  CHECK(pages[2]["events"].size() == 1);
  CHECK(pages[2]["next_cursor"].is_null());
  std::vector<std::string> seen;
  for (const json& p : pages)
    for (const auto& id : idsOf(p["events"])) seen.push_back(id);
  CHECK(seen == reversed(events));

  SUBCASE("new events do not shift a page already handed out") {
    const json first = f.get("/events?limit=3");
    const std::string cursor = first["next_cursor"];
    f.ingestMany(4);  // newer than everything listed
    const json second = f.get("/events?limit=3&cursor=" + cursor);
    CHECK(idsOf(second["events"]) == std::vector<std::string>{events[3], events[2], events[1]});
  }
  SUBCASE("events received in the same millisecond are neither repeated nor skipped") {
    // The clock stands still: ties on received_at are broken by id.
    std::vector<std::string> tied;
    auto c = f.server.anonymousClient();
    for (int i = 0; i < 5; ++i) {
      auto res = c.Post("/hooks/" + f.entrypointId, "{}", "application/json");
      REQUIRE(res);
      tied.push_back(json::parse(res->body)["event_id"]);
    }
    std::set<std::string> all;
    size_t total = 0;
    for (const json& p : allPages(f, "/events", "events", "?limit=2")) {
      for (const auto& id : idsOf(p["events"])) all.insert(id);
      total += p["events"].size();
    }
    CHECK(total == 12);
    CHECK(all.size() == 12);
  }
  SUBCASE("filters hold across pages") {
    for (int i = 0; i < 5; ++i) f.fail(f.deliveryOf(events[i], f.ordersId), 1);
    std::vector<std::string> failed;
    for (const json& p : allPages(f, "/events", "events", "?status=failed&limit=2"))
      for (const auto& id : idsOf(p["events"])) failed.push_back(id);
    CHECK(failed ==
          std::vector<std::string>{events[4], events[3], events[2], events[1], events[0]});
  }
}

TEST_CASE("deliveries list: the dead-letter view by status and target, with the last error") {
  HistoryFixture f;
  const auto events = f.ingestMany(5);
  for (int i = 0; i < 4; ++i) f.fail(f.deliveryOf(events[i], f.ordersId), 2);
  f.deliver(f.deliveryOf(events[4], f.ordersId));
  f.fail(f.deliveryOf(events[0], f.auditId), 1);

  const json failed = f.get("/deliveries?status=failed");
  REQUIRE(failed["deliveries"].size() == 5);
  for (const json& d : failed["deliveries"]) {
    CHECK(d["status"] == "failed");
    CHECK(d["failure_reason"] == "max_attempts");
    CHECK(d["last_status_code"] == 503);
    CHECK(d["last_error"] == "HTTP 503");
    CHECK(d["target_type"] == "http");
    CHECK(d["last_attempt_at"].is_string());
    CHECK_FALSE(d.contains("config"));
  }
  // Newest first: the deliveries of events[3] lead.
  CHECK(failed["deliveries"][0]["event_id"] == events[3]);
  CHECK(failed["deliveries"][0]["attempts"] == 2);

  const json orders = f.get("/deliveries?status=failed&target_id=" + f.ordersId);
  CHECK(orders["deliveries"].size() == 4);
  for (const json& d : orders["deliveries"]) CHECK(d["target_name"] == "orders");
  CHECK(f.get("/deliveries?target_id=" + f.auditId)["deliveries"].size() == 5);
  CHECK(f.get("/deliveries?status=pending")["deliveries"].size() == 4);
  CHECK(f.get("/deliveries")["deliveries"].size() == 10);

  std::set<std::string> paged;
  size_t total = 0;
  for (const json& p : allPages(f, "/deliveries", "deliveries", "?status=failed&limit=2")) {
    for (const auto& id : idsOf(p["deliveries"])) paged.insert(id);
    total += p["deliveries"].size();
  }
  CHECK(total == 5);
  CHECK(paged == [&] {
    std::set<std::string> s;
    for (const auto& id : idsOf(failed["deliveries"])) s.insert(id);
    return s;
  }());
}

TEST_CASE("an event shows its request, body, deliveries and every attempt; no target config") {
  HistoryFixture f;
  const std::string body = R"({"order":42,"note":"grüße"})";
  const std::string eventId = f.ingest(body, "application/json; charset=utf-8", "?source=shop");
  f.fail(f.deliveryOf(eventId, f.ordersId), 3);

  auto res = f.rawGet("/api/v1/webhooks/" + f.webhookId + "/events/" + eventId);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(res->body.find(kFixtureSigningSecret) == std::string::npos);
  CHECK(res->body.find(kFixtureAuthHeader) == std::string::npos);
  CHECK(res->body.find("receiver.example.com") == std::string::npos);
  const json e = json::parse(res->body);
  CHECK(e["id"] == eventId);
  CHECK(e["body"] == body);
  CHECK(e["body_encoding"] == "text");
  CHECK(e["body_size"] == body.size());
  CHECK(e["query"] == "source=shop");
  CHECK(e["path"] == "/hooks/" + f.entrypointId);
  bool sawSource = false;
  for (const json& h : e["headers"])
    if (h[0] == "X-Source" && h[1] == "test") sawSource = true;
  CHECK(sawSource);

  REQUIRE(e["deliveries"].size() == 2);
  for (const json& d : e["deliveries"]) {
    CHECK_FALSE(d.contains("config"));
    if (d["target_id"] == f.ordersId) {
      CHECK(d["status"] == "failed");
      CHECK(d["target_name"] == "orders");
      REQUIRE(d["results"].size() == 3);
      for (int i = 0; i < 3; ++i) {
        const json& r = d["results"][i];
        CHECK(r["attempt"] == i + 1);
        CHECK(r["status_code"] == 503);
        CHECK(r["error"] == "HTTP 503");
        CHECK(r["duration_ms"] == 11 + i);
        CHECK(r["success"] == false);
        CHECK(r["response_body"] == "busy " + std::to_string(i + 1));
        CHECK(r["created_at"].is_string());
      }
    } else {
      CHECK(d["status"] == "pending");
      CHECK(d["results"].empty());
    }
  }
}

TEST_CASE("bodies that are not text come back as base64, byte for byte") {
  HistoryFixture f;
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  const std::string binaryId = f.ingest(binary, "application/octet-stream");
  // Text by its type, but not valid UTF-8: still base64 rather than mangled.
  const std::string badText = std::string("caf\xe9 \xff\xfe", 7);
  const std::string badTextId = f.ingest(badText, "text/plain");

  const json b = f.get("/events/" + binaryId);
  CHECK(b["body_encoding"] == "base64");
  CHECK(b["body_size"] == 256);
  CHECK(base64Decode(b["body"].get<std::string>()) == binary);
  const json t = f.get("/events/" + badTextId);
  CHECK(t["body_encoding"] == "base64");
  CHECK(base64Decode(t["body"].get<std::string>()) == badText);
}

TEST_CASE("bad query input is a 400 with a clear error, and nothing changes") {
  HistoryFixture f;
  const auto events = f.ingestMany(3);
  f.fail(f.deliveryOf(events[0], f.ordersId), 2);
  const std::string eventsDump = dumpDatabase(f.server.eventsDbPath(f.webhookId));
  const std::string mainDump = dumpDatabase(f.server.mainDbPath());
  const auto files = eventsDbFiles(f.server.dataDir());
  const std::string base = "/api/v1/webhooks/" + f.webhookId;
  const std::string deliveriesCursor =
      f.get("/deliveries?limit=1")["next_cursor"].get<std::string>();

  struct Case {
    std::string path;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"/events?status=dead", "invalid_field"},
      {"/events?status=", "invalid_field"},
      {"/deliveries?status=FAILED", "invalid_field"},
      {"/events?since=yesterday", "invalid_field"},
      {"/events?until=2026-13-01", "invalid_field"},
      {"/events?since=2026-11-29T17:48", "invalid_field"},
      {"/events?since=" + f.timeAt(5) + "&until=" + f.timeAt(1), "invalid_time_range"},
      {"/deliveries?since=2026-11-30&until=2026-11-29", "invalid_time_range"},
      {"/events?limit=0", "invalid_field"},
      {"/events?limit=501", "invalid_field"},
      {"/events?limit=ten", "invalid_field"},
      {"/events?limit=5x", "invalid_field"},
      {"/deliveries?limit=-1", "invalid_field"},
      {"/events?cursor=not-a-cursor", "invalid_cursor"},
      {"/events?cursor=" + deliveriesCursor, "invalid_cursor"},  // another listing's
      {"/events?cursor=" + base64Encode("events|yesterday|x"), "invalid_cursor"},
      {"/events?state=failed", "unknown_parameter"},
      {"/events?status=failed&status=pending", "invalid_parameter"},
      {"/events/" + events[0] + "?verbose=1", "unknown_parameter"},
      {"/events?target_id=orders", "invalid_field"},
      {"/events?target_id=" + f.otherTargetId, "unknown_target"},
      {"/deliveries?target_id=" + f.otherTargetId, "unknown_target"},
      {"/deliveries?target_id=00000000-0000-4000-8000-000000000000", "unknown_target"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    auto res = f.rawGet(base + c.path);
    CHECK(statusOf(res) == 400);
    CHECK(errorCode(res) == c.code);
  }
  CHECK(dumpDatabase(f.server.eventsDbPath(f.webhookId)) == eventsDump);
  CHECK(dumpDatabase(f.server.mainDbPath()) == mainDump);
  CHECK(eventsDbFiles(f.server.dataDir()) == files);
}

TEST_CASE("unknown or malformed ids are 404, and no events file is created for them") {
  HistoryFixture f;
  const std::string eventId = f.ingest("{}");
  const auto files = eventsDbFiles(f.server.dataDir());
  const std::string unknown = "00000000-0000-4000-8000-000000000000";
  const std::string base = "/api/v1/webhooks/" + f.webhookId;
  for (const std::string& path :
       {"/api/v1/webhooks/" + unknown + "/events", "/api/v1/webhooks/" + unknown + "/deliveries",
        std::string("/api/v1/webhooks/not-a-uuid/events"),
        "/api/v1/webhooks/" + unknown + "/events/" + eventId,
        base + "/events/" + unknown, base + "/events/not-a-uuid",
        // The event exists, but in another webhook.
        "/api/v1/webhooks/" + f.otherWebhookId + "/events/" + eventId}) {
    CAPTURE(path);
    auto res = f.rawGet(path);
    CHECK(statusOf(res) == 404);
    CHECK(errorCode(res) == "not_found");
  }
  CHECK(eventsDbFiles(f.server.dataDir()) == files);
}

TEST_CASE("a real delivery's attempts: status code, error, duration and a capped response body") {
  EngineHarness h;
  Receiver r;
  const std::string big(10'000, 'x');
  ScriptedResponse bigFailure = respond(500);
  bigFailure.body = big;
  r.script({bigFailure});
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(2, 50));
  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(ref, "delivered", 5s));

  httplib::Client c("127.0.0.1", h.port());
  c.set_bearer_token_auth(EngineHarness::kToken);
  auto res = c.Get("/api/v1/webhooks/" + hook.webhookId + "/events/" + eventId);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const json e = json::parse(res->body);
  REQUIRE(e["deliveries"].size() == 1);
  const json& results = e["deliveries"][0]["results"];
  REQUIRE(results.size() == 2);
  CHECK(results[0]["status_code"] == 500);
  CHECK(results[0]["success"] == false);
  CHECK(results[0]["response_body"].get<std::string>().size() == 4096);
  CHECK(results[0]["duration_ms"].is_number_integer());
  CHECK(results[1]["status_code"] == 200);
  CHECK(results[1]["success"] == true);
  CHECK(results[1]["response_body"] == "ok");

  // A receiver that is not there: the error text is in the attempt.
  const TargetRecord gone = h.createHttpTarget(
      hook.webhookId, "http://127.0.0.1:" + std::to_string(unusedLoopbackPort()) + "/in",
      retryPolicy(0, 100));
  const std::string second = h.post(hook.entrypointId, "{}");
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, second, gone.id), "failed", 5s));
  auto shown = c.Get("/api/v1/webhooks/" + hook.webhookId + "/events/" + second);
  REQUIRE(shown);
  bool sawError = false;
  const json secondEvent = json::parse(shown->body);
  for (const json& d : secondEvent["deliveries"])
    if (d["target_id"] == gone.id) {
      REQUIRE(d["results"].size() == 1);
      CHECK(d["results"][0]["status_code"].is_null());
      CHECK_FALSE(d["results"][0]["error"].get<std::string>().empty());
      CHECK(d["last_error"] == d["results"][0]["error"]);
      sawError = true;
    }
  CHECK(sawError);
}

}  // namespace webhooker::testing
