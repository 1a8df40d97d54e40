// ServerMetrics: requests are labelled by the route *pattern* the router
// matched (router_test: an id becomes {id}, anything outside the routes we
// serve "other"), so no path a caller sends can mint a series or put an id
// into /metrics.
#include <doctest/doctest.h>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/inbound_verifier.h"
#include "server/router.h"
#include "server/server_metrics.h"
#include "tests/support/contains.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using server::ServerMetrics;

constexpr const char* kId = "7d9c1f0e-4a2b-4c3d-8e5f-6a7b8c9d0e1f";
constexpr const char* kOtherId = "0f1e2d3c-4b5a-4968-8776-655443322110";

std::string exposition(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace

TEST_CASE("request() counts by route pattern and status class, and no id reaches the text") {
  prometheus::Registry registry;
  ServerMetrics metrics(registry);
  server::Router router;
  router.add("POST", "/hooks/{id}", nullptr);
  router.add("DELETE", "/api/v1/webhooks/{id}/targets/{id}", nullptr);
  router.add("GET", "/healthz", nullptr);
  // What the server does: the matched pattern, or "other".
  const auto request = [&](const char* method, const std::string& path, int status,
                           std::chrono::milliseconds took) {
    std::vector<std::string> matches;
    const auto* route = router.match(method, path, matches);
    metrics.request(route ? std::string_view(route->pattern) : server::Router::kUnmatched, status,
                    took);
  };
  const std::string id = kId;
  request("POST", "/hooks/" + id, 200, 2ms);
  request("POST", "/hooks/" + std::string(kOtherId), 200, 3ms);
  request("POST", "/hooks/" + id, 404, 1ms);
  request("DELETE", "/api/v1/webhooks/" + id + "/targets/" + kOtherId, 401, 1ms);
  request("GET", "/no/such/" + id, 404, 1ms);
  request("GET", "/healthz", 0, 1ms);  // no status set: not a class
  metrics.eventReceived();
  metrics.eventReceived();

  const std::string text = exposition(registry);
  INFO(text);
  CHECK(contains(text, R"(webhooker_http_requests_total{code="2xx",route="/hooks/{id}"} 2)"));
  CHECK(contains(text, R"(webhooker_http_requests_total{code="4xx",route="/hooks/{id}"} 1)"));
  CHECK(contains(
      text,
      R"(webhooker_http_requests_total{code="4xx",route="/api/v1/webhooks/{id}/targets/{id}"} 1)"));
  CHECK(contains(text, R"(webhooker_http_requests_total{code="4xx",route="other"} 1)"));
  CHECK(contains(text, R"(webhooker_http_requests_total{code="other",route="/healthz"} 1)"));
  CHECK(contains(text, R"(webhooker_http_request_duration_seconds_count{route="/hooks/{id}"} 3)"));
  CHECK(contains(text, "webhooker_events_received_total 2"));
  CHECK_FALSE(firstMatch(text, kUuidPattern));
}

TEST_CASE("webhooker_events_received_total exists at 0 from construction") {
  prometheus::Registry registry;
  ServerMetrics metrics(registry);
  CHECK(contains(exposition(registry), "\nwebhooker_events_received_total 0\n"));
}

TEST_CASE("every verification failure reason exists at 0 from construction") {
  prometheus::Registry registry;
  ServerMetrics metrics(registry);
  const std::string text = exposition(registry);
  for (const std::string_view reason : server::kVerificationFailureReasons) {
    CAPTURE(reason);
    CHECK(contains(text, "\nwebhooker_ingest_verification_failures_total{reason=\"" +
                             std::string(reason) + "\"} 0\n"));
  }
}

}  // namespace webhooker::testing
