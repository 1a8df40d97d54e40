// HistoryFixture: the admin API in-process (TestServer, recording
// dispatcher) with a fake clock, for the history and redrive tests. One
// webhook with two http targets ("orders", "audit") whose config holds
// canary credentials, a second webhook with a target of its own, events
// ingested through the real /hooks/ path one second apart, and a second
// connection to the events DB to record delivery outcomes through the
// storage API the targets use.
//
// Driven from the test's thread only.
#pragma once

#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/time_format.h"
#include "storage/events_db.h"
#include "tests/support/fake_clock.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {

inline const std::string kFixtureSigningSecret =
    "whsec_bGVha2VkLXNpZ25pbmctc2VjcmV0LWNhbmFyeS0xMjM0";
inline const std::string kFixtureAuthHeader = "Bearer history-canary-5e1f";

class HistoryFixture {
 public:
  using json = nlohmann::json;

  HistoryFixture() {
    const json webhook = server.createWebhook("shop");
    webhookId = webhook["id"];
    entrypointId = webhook["entrypoints"][0]["id"];
    ordersId = server.createTarget(webhookId, targetBody("orders"))["id"];
    auditId = server.createTarget(webhookId, targetBody("audit"))["id"];
    const json other = server.createWebhook("other");
    otherWebhookId = other["id"];
    otherTargetId = server.createTarget(otherWebhookId, targetBody("elsewhere"))["id"];
    auto opened = EventsDb::open(server.eventsDbPath(webhookId), DbOptions{}, clock);
    REQUIRE(opened);
    db = opened.value();
  }

  static json targetBody(const std::string& name) {
    return {{"name", name},
            {"type", "http"},
            {"config",
             {{"url", "https://receiver.example.com/" + name},
              {"headers", {{"Authorization", kFixtureAuthHeader}}},
              {"signing_secret", kFixtureSigningSecret}}}};
  }

  // POSTs an event to the entrypoint, then moves the clock one second.
  std::string ingest(const std::string& body, const std::string& contentType = "application/json",
                     const std::string& query = "") {
    auto c = server.anonymousClient();
    auto res = c.Post("/hooks/" + entrypointId + query, {{"X-Source", "test"}}, body,
                      contentType.c_str());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    const std::string id = json::parse(res->body)["event_id"];
    clock.advance(std::chrono::seconds(1));
    return id;
  }

  std::vector<std::string> ingestMany(int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back(ingest(json{{"n", i}}.dump()));
    return ids;
  }

  std::string timeAt(int secondsAfterStart) const {
    return formatTime(start + std::chrono::seconds(secondsAfterStart));
  }

  std::string deliveryOf(const std::string& eventId, const std::string& targetId) const {
    auto file = openReadOnly(server.eventsDbPath(webhookId));
    SQLite::Statement q(file, "SELECT id FROM deliveries WHERE event_id = ? AND target_id = ?");
    q.bind(1, eventId);
    q.bind(2, targetId);
    REQUIRE(q.executeStep());
    return q.getColumn(0).getString();
  }

  // `attempts` retryable failures, the last one dead-lettering it.
  void fail(const std::string& deliveryId, int attempts) {
    for (int i = 1; i <= attempts; ++i) {
      AttemptRecord a;
      a.deliveryId = deliveryId;
      a.attempt = i;
      a.statusCode = 503;
      a.responseBody = "busy " + std::to_string(i);
      a.error = "HTTP 503";
      a.durationMs = 10 + i;
      a.newStatus = i < attempts ? DeliveryStatus::kRetrying : DeliveryStatus::kFailed;
      if (i == attempts) a.failureReason = "max_attempts";
      REQUIRE(db->recordAttempt(a));
    }
  }

  void deliver(const std::string& deliveryId) {
    AttemptRecord a;
    a.deliveryId = deliveryId;
    a.statusCode = 200;
    a.responseBody = "ok";
    a.durationMs = 7;
    a.success = true;
    a.newStatus = DeliveryStatus::kDelivered;
    REQUIRE(db->recordAttempt(a));
  }

  // GET below /api/v1/webhooks/<webhookId>; the 200 body.
  json get(const std::string& pathAndQuery) {
    auto c = server.client();
    auto res = c.Get("/api/v1/webhooks/" + webhookId + pathAndQuery);
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 200);
    return json::parse(res->body);
  }

  // POST below /api/v1/webhooks/<webhookId>, the body as given.
  httplib::Result post(const std::string& path, const std::string& body) {
    auto c = server.client();
    return c.Post("/api/v1/webhooks/" + webhookId + path, body, "application/json");
  }

  // Every row of the events DB, for "nothing changed" checks.
  std::string eventsDump() const { return dumpDatabase(server.eventsDbPath(webhookId)); }

  httplib::Result rawGet(const std::string& path) {
    auto c = server.client();
    return c.Get(path);
  }

  FakeClock clock;  // first: the server stamps with it
  const TimePoint start = clock.now();
  TestServer server{TestServerOptions{.clock = &clock}};
  std::string webhookId, entrypointId, ordersId, auditId, otherWebhookId, otherTargetId;
  std::shared_ptr<EventsDb> db;
};

}  // namespace webhooker::testing
