// Router: a method and a decoded path find their route and its {id}
// captures; everything else finds none (and is counted as "other" in
// /metrics, so no caller can mint a series).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/router.h"

namespace webhooker::testing {
namespace {

using server::Router;

constexpr const char* kId = "7d9c1f0e-4a2b-4c3d-8e5f-6a7b8c9d0e1f";
constexpr const char* kOtherId = "0f1e2d3c-4b5a-4968-8776-655443322110";

// The shapes the daemon registers.
Router daemonLikeRouter() {
  Router router;
  for (const char* pattern :
       {"/hooks/{id}", "/api/v1/webhooks", "/api/v1/webhooks/{id}", "/api/v1/webhooks/{id}/targets",
        "/api/v1/webhooks/{id}/targets/{id}", "/api/v1/webhooks/{id}/deliveries/{id}/retry",
        "/healthz", "/metrics", "/", "/assets/app.js"})
    router.add("GET", pattern, nullptr);
  router.addAsync("POST", "/hooks/{id}", nullptr);
  return router;
}

std::string patternOf(const Router& router, const char* method, const std::string& path) {
  std::vector<std::string> matches;
  const Router::Route* route = router.match(method, path, matches);
  return route ? route->pattern : std::string(Router::kUnmatched);
}

}  // namespace

TEST_CASE("a route matches its pattern and captures each {id}") {
  const Router router = daemonLikeRouter();
  const std::string id = kId;
  std::vector<std::string> matches;
  const Router::Route* route =
      router.match("GET", "/api/v1/webhooks/" + id + "/targets/" + kOtherId, matches);
  REQUIRE(route != nullptr);
  CHECK(route->pattern == "/api/v1/webhooks/{id}/targets/{id}");
  REQUIRE(matches.size() == 3);
  CHECK(matches[1] == id);
  CHECK(matches[2] == kOtherId);
  CHECK(patternOf(router, "GET", "/api/v1/webhooks/" + id + "/deliveries/" + kOtherId + "/retry") ==
        "/api/v1/webhooks/{id}/deliveries/{id}/retry");
  CHECK(patternOf(router, "GET", "/healthz") == "/healthz");
  CHECK(patternOf(router, "GET", "/") == "/");
  CHECK(patternOf(router, "GET", "/assets/app.js") == "/assets/app.js");
  // {id} takes any one segment; the handler decides whether it is an id.
  CHECK(patternOf(router, "GET", "/hooks/not-a-uuid") == "/hooks/{id}");
}

TEST_CASE("the method picks the route; HEAD is answered by GET") {
  const Router router = daemonLikeRouter();
  std::vector<std::string> matches;
  const Router::Route* post = router.match("POST", std::string("/hooks/") + kId, matches);
  REQUIRE(post != nullptr);
  CHECK(post->asyncHandler == nullptr);  // registered with a null handler above
  CHECK(post->method == "POST");
  CHECK(patternOf(router, "HEAD", "/healthz") == "/healthz");
  CHECK(patternOf(router, "DELETE", "/healthz") == "other");
  CHECK(patternOf(router, "PUT", "/api/v1/webhooks") == "other");
}

TEST_CASE("anything else matches nothing and is \"other\"") {
  const Router router = daemonLikeRouter();
  const std::string id = kId;
  for (const std::string& path :
       std::vector<std::string>{"/wp-admin/setup.php", "/hooks/" + id + "/", "/hooks//" + id, "/hooks/", "", "hooks/" + id,
        "/metrics/" + id, "/Hooks/" + id, "//", "/api/v1//webhooks/" + id,
        "/api/v1/webhooks/" + id + "/targets/" + id + "/retry/retry",
        std::string(100000, '/')}) {
    CAPTURE(path.substr(0, 80));
    std::vector<std::string> matches{"stale"};
    CHECK(router.match("GET", path, matches) == nullptr);
    CHECK(matches.empty());
  }
}

}  // namespace webhooker::testing
