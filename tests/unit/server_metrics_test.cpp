// ServerMetrics: requests are labelled by route *pattern* — an id becomes
// {id}, anything outside the routes we serve becomes "other" — so no path a
// caller sends can mint a series or put an id into /metrics.
#include <doctest/doctest.h>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <regex>
#include <string>

#include "server/server_metrics.h"
#include "tests/support/contains.h"

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

TEST_CASE("routeOf turns ids into {id}") {
  const std::string id = kId;
  const std::string other = kOtherId;
  CHECK(ServerMetrics::routeOf("/hooks/" + id) == "/hooks/{id}");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks") == "/api/v1/webhooks");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id) == "/api/v1/webhooks/{id}");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id + "/targets") ==
        "/api/v1/webhooks/{id}/targets");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id + "/targets/" + other) ==
        "/api/v1/webhooks/{id}/targets/{id}");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id + "/deliveries/" + other + "/retry") ==
        "/api/v1/webhooks/{id}/deliveries/{id}/retry");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id + "/events/" + other + "/redeliver") ==
        "/api/v1/webhooks/{id}/events/{id}/redeliver");
  // Upper-case hex is still an id, not a route word.
  CHECK(ServerMetrics::routeOf("/hooks/7D9C1F0E-4A2B-4C3D-8E5F-6A7B8C9D0E1F") == "/hooks/{id}");
}

TEST_CASE("routeOf keeps the fixed routes") {
  CHECK(ServerMetrics::routeOf("/healthz") == "/healthz");
  CHECK(ServerMetrics::routeOf("/readyz") == "/readyz");
  CHECK(ServerMetrics::routeOf("/metrics") == "/metrics");
}

TEST_CASE("routeOf makes anything else \"other\"") {
  const std::string id = kId;
  CHECK(ServerMetrics::routeOf("/wp-admin/setup.php") == "other");
  CHECK(ServerMetrics::routeOf("/hooks/not-a-uuid") == "other");
  CHECK(ServerMetrics::routeOf("/hooks/" + id.substr(0, 35)) == "other");  // one char short
  CHECK(ServerMetrics::routeOf("/hooks/" + id + "x") == "other");
  CHECK(ServerMetrics::routeOf("/hooks/" + id + "/") == "other");  // trailing slash
  CHECK(ServerMetrics::routeOf("/hooks//" + id) == "other");
  CHECK(ServerMetrics::routeOf("/") == "other");
  CHECK(ServerMetrics::routeOf("") == "other");
  CHECK(ServerMetrics::routeOf("hooks/" + id) == "other");  // not absolute
  CHECK(ServerMetrics::routeOf("/metrics/" + id) == "other");
  CHECK(ServerMetrics::routeOf("/Hooks/" + id) == "other");  // route words are exact
  CHECK(ServerMetrics::routeOf("/hooks/" + id + "?a=b") == "other");
  // Very deep paths, even made only of route words and ids.
  std::string deep;
  for (int i = 0; i < 9; ++i) deep += "/" + id;
  CHECK(ServerMetrics::routeOf(deep) == "other");
  std::string deepWords;
  for (int i = 0; i < 50; ++i) deepWords += "/retry";
  CHECK(ServerMetrics::routeOf(deepWords) == "other");
  CHECK(ServerMetrics::routeOf("/api/v1/webhooks/" + id + "/targets/" + id +
                               "/retry/retry/retry") == "other");
  CHECK(ServerMetrics::routeOf(std::string(100000, '/')) == "other");
}

TEST_CASE("request() counts by route pattern and status class, and no id reaches the text") {
  prometheus::Registry registry;
  ServerMetrics metrics(registry);
  const std::string id = kId;
  metrics.request("/hooks/" + id, 200, 2ms);
  metrics.request("/hooks/" + std::string(kOtherId), 200, 3ms);
  metrics.request("/hooks/" + id, 404, 1ms);
  metrics.request("/api/v1/webhooks/" + id + "/targets/" + kOtherId, 401, 1ms);
  metrics.request("/no/such/" + id, 404, 1ms);
  metrics.request("/healthz", 0, 1ms);  // no status set: not a class
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
  static const std::regex uuid(
      "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  CHECK_FALSE(std::regex_search(text, uuid));
}

TEST_CASE("webhooker_events_received_total exists at 0 from construction") {
  prometheus::Registry registry;
  ServerMetrics metrics(registry);
  CHECK(contains(exposition(registry), "\nwebhooker_events_received_total 0\n"));
}

}  // namespace webhooker::testing
