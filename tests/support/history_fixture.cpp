#include "tests/support/history_fixture.h"

namespace webhooker::testing {

HistoryFixture::HistoryFixture() {
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

nlohmann::json HistoryFixture::targetBody(const std::string& name) {
  return {{"name", name},
          {"type", "http"},
          {"config",
           {{"url", "https://receiver.example.com/" + name},
            {"headers", {{"Authorization", kFixtureAuthHeader}}},
            {"signing_secret", kFixtureSigningSecret}}}};
}

std::string HistoryFixture::ingest(const std::string& body, const std::string& contentType,
                                   const std::string& query) {
  auto c = server.anonymousClient();
  auto res = c.Post("/hooks/" + entrypointId + query, {{"X-Source", "test"}}, body,
                    contentType.c_str());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const std::string id = json::parse(res->body)["event_id"];
  clock.advance(std::chrono::seconds(1));
  return id;
}

std::vector<std::string> HistoryFixture::ingestMany(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(ingest(json{{"n", i}}.dump()));
  return ids;
}

std::string HistoryFixture::timeAt(int secondsAfterStart) const {
  return formatTime(start + std::chrono::seconds(secondsAfterStart));
}

std::string HistoryFixture::deliveryOf(const std::string& eventId,
                                       const std::string& targetId) const {
  auto file = openReadOnly(server.eventsDbPath(webhookId));
  SQLite::Statement q(file, "SELECT id FROM deliveries WHERE event_id = ? AND target_id = ?");
  q.bind(1, eventId);
  q.bind(2, targetId);
  REQUIRE(q.executeStep());
  return q.getColumn(0).getString();
}

void HistoryFixture::fail(const std::string& deliveryId, int attempts) {
  for (int i = 1; i <= attempts; ++i) {
    AttemptRecord a;
    a.deliveryId = deliveryId;
    a.attempt = i;
    a.statusCode = 503;
    a.responseBody = "busy " + std::to_string(i);
    a.error = "HTTP 503";
    a.durationMs = 10 + i;
    a.newStatus = i < attempts ? DeliveryStatus::kRetrying : DeliveryStatus::kFailed;
    if (i == attempts) a.failureReason = webhooker::FailureKind::kMaxAttempts;
    REQUIRE(db->recordAttempt(a));
  }
}

void HistoryFixture::deliver(const std::string& deliveryId) {
  AttemptRecord a;
  a.deliveryId = deliveryId;
  a.statusCode = 200;
  a.responseBody = "ok";
  a.durationMs = 7;
  a.success = true;
  a.newStatus = DeliveryStatus::kDelivered;
  REQUIRE(db->recordAttempt(a));
}

nlohmann::json HistoryFixture::get(const std::string& pathAndQuery) {
  auto c = server.client();
  auto res = c.Get("/api/v1/webhooks/" + webhookId + pathAndQuery);
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

httplib::Result HistoryFixture::post(const std::string& path, const std::string& body) {
  auto c = server.client();
  return c.Post("/api/v1/webhooks/" + webhookId + path, body, "application/json");
}

std::string HistoryFixture::eventsDump() const {
  return dumpDatabase(server.eventsDbPath(webhookId));
}

httplib::Result HistoryFixture::rawGet(const std::string& path) {
  auto c = server.client();
  return c.Get(path);
}

}  // namespace webhooker::testing
