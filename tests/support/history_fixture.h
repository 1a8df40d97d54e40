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

  HistoryFixture();

  static json targetBody(const std::string& name);

  // POSTs an event to the entrypoint, then moves the clock one second.
  std::string ingest(const std::string& body, const std::string& contentType = "application/json",
                     const std::string& query = "");

  std::vector<std::string> ingestMany(int n);

  std::string timeAt(int secondsAfterStart) const;

  std::string deliveryOf(const std::string& eventId, const std::string& targetId) const;

  // `attempts` retryable failures, the last one dead-lettering it.
  void fail(const std::string& deliveryId, int attempts);

  void deliver(const std::string& deliveryId);

  // GET below /api/v1/webhooks/<webhookId>; the 200 body.
  json get(const std::string& pathAndQuery);

  // POST below /api/v1/webhooks/<webhookId>, the body as given.
  httplib::Result post(const std::string& path, const std::string& body);

  // Every row of the events DB, for "nothing changed" checks.
  std::string eventsDump() const;

  httplib::Result rawGet(const std::string& path);

  FakeClock clock;  // first: the server stamps with it
  const TimePoint start = clock.now();
  TestServer server{TestServerOptions{.clock = &clock}};
  std::string webhookId, entrypointId, ordersId, auditId, otherWebhookId, otherTargetId;
  std::shared_ptr<EventsDb> db;
};

}  // namespace webhooker::testing
