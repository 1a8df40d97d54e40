// OAuth2 client credentials against a token endpoint written here (a real
// HTTP server on loopback) and a scriptable receiver: one token for many
// deliveries, a new one after it expires (a fake clock moves past it) and
// after the receiver's 401, the endpoint's refusal as auth_failed, the
// endpoint itself behind the SSRF guard, the client secret never shown.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/secret.h"
#include "base/url.h"
#include "net/ssrf_guard.h"
#include "targets/http_client.h"
#include "targets/target_config.h"
#include "tests/support/contains.h"
#include "tests/support/engine_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_clock.h"
#include "tests/support/receiver.h"
#include "tests/support/static_resolver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using F = OutboundResponse::Failure;

constexpr const char* kClientSecret = "cl13nt-S3cret/with+odd=chars";

// The token endpoint: client_secret_basic checked, a new token per request
// ("tok-1", "tok-2", ...) living `lifetime` seconds; `status` other than 200
// answers an RFC 6749 error instead.
class TokenEndpoint {
 public:
  TokenEndpoint() {
    server_.Post("/oauth/token", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      requests_.push_back(req.body);
      const std::string expected =
          "Basic " + base64Encode("webhooker-client:" + std::string("cl13nt-S3cret%2Fwith%2Bodd%3Dchars"));
      if (req.get_header_value("Authorization") != expected || status_ == 401) {
        res.status = 401;
        res.set_content(R"({"error":"invalid_client","error_description":"bad client"})",
                        "application/json");
        return;
      }
      if (status_ != 200) {
        res.status = status_;
        res.set_content("down", "text/plain");
        return;
      }
      res.set_content(json{{"access_token", "tok-" + std::to_string(requests_.size())},
                           {"token_type", "Bearer"},
                           {"expires_in", lifetime_}}
                          .dump(),
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    eventually([this] { return server_.is_running(); });
  }
  ~TokenEndpoint() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/oauth/token"; }
  size_t fetches() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  std::vector<std::string> bodies() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void answer(int status) {
    std::lock_guard lock(mutex_);
    status_ = status;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  int status_ = 200;
  int lifetime_ = 3600;
};

json oauth2Config(const std::string& tokenUrl) {
  return {{"token_url", tokenUrl},
          {"client_id", "webhooker-client"},
          {"client_secret", kClientSecret},
          {"scope", "webhooks:write events"},
          {"audience", "https://api.example"}};
}

std::shared_ptr<const EgressOptions> egressFor(const std::string& tokenUrl) {
  const json c = oauth2Config(tokenUrl);
  EgressOptions options;
  options.oauth2 = OAuth2Settings{parseHttpUrl(c["token_url"].get<std::string>()).value(),
                                  c["client_id"], c["client_secret"], c["scope"], c["audience"], ""};
  return sealEgress(std::move(options));
}

// The servers outlive the client: its pooled keep-alive connections close
// first, so the servers stop at once instead of after their idle timeout.
struct Fixture {
  Receiver receiver;
  TokenEndpoint endpoint;
  FakeClock clock;
  StaticResolver dns;
  SsrfGuard guard{dns, Cidr::parseList("127.0.0.1/32").value()};
  HttpClient client{guard, clock};

  OutboundResponse deliver(std::shared_ptr<const EgressOptions> egress) {
    OutboundRequest request;
    request.url = parseHttpUrl(receiver.url("/hook")).value();
    request.body = "{}";
    request.headers = {{"Authorization", "Basic c2VuZGVyOnNlY3JldA=="}};  // the sender's: replaced
    request.timeout = 5s;
    request.egress = std::move(egress);
    return client.send(std::move(request));
  }
};

TEST_CASE("one token for many deliveries, sent as a bearer token with the client's credentials checked") {
  Fixture f;
  const auto egress = egressFor(f.endpoint.url());
  for (int i = 0; i < 5; ++i) CHECK(f.deliver(egress).status == 200);
  CHECK(f.endpoint.fetches() == 1);
  REQUIRE(f.receiver.waitForRequests(5, 5s));
  for (const ReceivedRequest& r : f.receiver.requests()) {
    CHECK(r.header("Authorization") == "Bearer tok-1");
    CHECK(r.headerCount("Authorization") == 1);
  }
  CHECK(f.endpoint.bodies()[0] ==
        "grant_type=client_credentials&scope=webhooks%3Awrite+events&audience=https%3A%2F%2Fapi.example");
}

TEST_CASE("concurrent first attempts wait for one token fetch") {
  Fixture f;
  const auto egress = egressFor(f.endpoint.url());
  std::vector<std::thread> threads;
  std::atomic<int> delivered{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] { delivered += f.deliver(egress).status == 200 ? 1 : 0; });
  for (auto& t : threads) t.join();
  CHECK(delivered == 8);
  CHECK(f.endpoint.fetches() == 1);
}

TEST_CASE("the token is fetched again shortly before it expires, not after") {
  Fixture f;
  const auto egress = egressFor(f.endpoint.url());
  CHECK(f.deliver(egress).status == 200);
  f.clock.advance(3600s - 61s);  // 3600 s tokens are renewed 60 s early
  CHECK(f.deliver(egress).status == 200);
  CHECK(f.endpoint.fetches() == 1);
  f.clock.advance(2s);
  CHECK(f.deliver(egress).status == 200);
  CHECK(f.endpoint.fetches() == 2);
  REQUIRE(f.receiver.waitForRequests(3, 5s));
  CHECK(f.receiver.requests()[2].header("Authorization") == "Bearer tok-2");
}

TEST_CASE("a 401 from the receiver fetches a new token once and sends again in the same attempt") {
  Fixture f;
  const auto egress = egressFor(f.endpoint.url());
  CHECK(f.deliver(egress).status == 200);
  f.receiver.push(respond(401));
  const OutboundResponse refreshed = f.deliver(egress);
  CHECK(refreshed.status == 200);
  CHECK(f.endpoint.fetches() == 2);
  REQUIRE(f.receiver.waitForRequests(3, 5s));
  CHECK(f.receiver.requests()[1].header("Authorization") == "Bearer tok-1");
  CHECK(f.receiver.requests()[2].header("Authorization") == "Bearer tok-2");
  // A receiver that refuses the new token too: the 401 stands, no third try.
  f.receiver.script({respond(401), respond(401)});
  CHECK(f.deliver(egress).status == 401);
  CHECK(f.endpoint.fetches() == 3);
  CHECK(f.receiver.requestCount() == 5);
}

TEST_CASE("a failing token endpoint is an auth failure that names the endpoint's answer, not the secret") {
  Fixture f;
  f.endpoint.answer(401);
  const OutboundResponse refused = f.deliver(egressFor(f.endpoint.url()));
  CHECK(refused.failure == F::kAuth);
  CHECK(refused.error ==
        "OAuth2: the token endpoint answered 401: invalid_client (bad client)");
  f.endpoint.answer(503);
  const OutboundResponse down = f.deliver(egressFor(f.endpoint.url()));
  CHECK(down.failure == F::kAuth);
  CHECK(down.error == "OAuth2: the token endpoint answered 503");
  CHECK(f.receiver.requestCount() == 0);
  CHECK(!contains(refused.error + down.error, kClientSecret));
}

TEST_CASE("the token endpoint is behind the SSRF guard like any receiver") {
  StaticResolver dns;
  dns.set("idp.example", {"169.254.169.254"});
  FakeClock clock;
  const SsrfGuard guard(dns, Cidr::parseList("127.0.0.1/32").value());
  HttpClient client(guard, clock);
  Receiver receiver;
  for (const std::string tokenUrl : {"http://idp.example/token", "http://10.0.0.1/token"}) {
    CAPTURE(tokenUrl);
    OutboundRequest request;
    request.url = parseHttpUrl(receiver.url("/")).value();
    request.egress = egressFor(tokenUrl);
    const OutboundResponse r = client.send(std::move(request));
    CHECK(r.failure == F::kAuth);
    CHECK(contains(r.error, "could not get a token from the token endpoint"));
    CHECK(contains(r.error, "forbidden address"));
  }
  CHECK(receiver.requestCount() == 0);
}

TEST_CASE("an unreachable token endpoint retries like any failure and ends auth_failed") {
  TokenEndpoint endpoint;
  Receiver receiver;
  EngineHarness harness;
  endpoint.answer(500);
  const Hook hook = harness.createWebhook("oauth2");
  const TargetRecord target = harness.createHttpTarget(
      hook.webhookId, receiver.url("/in"), retryPolicy(2, 100), 4, 5000,
      {{"oauth2", oauth2Config(endpoint.url())}});
  const std::string eventId = harness.post(hook.entrypointId, "{\"order\":9}");
  const DeliveryRef ref = harness.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(harness.waitForStatus(ref, "failed", 10s));
  CHECK(harness.delivery(ref).failureReason == std::optional<std::string>("auth_failed"));
  const auto rows = harness.resultRows(ref);
  CHECK(rows.size() == 3);
  for (const ResultRow& row : rows)
    CHECK(row.error == std::optional<std::string>("OAuth2: the token endpoint answered 500"));
  CHECK(endpoint.fetches() == 3);
  CHECK(receiver.requestCount() == 0);
}

TEST_CASE("OAuth2 settings are checked when written and the client secret is never shown") {
  const auto refusal = [](const json& oauth2) {
    const auto r =
        validateTargetConfig(webhooker::TargetType::kHttp, {{"url", "https://receiver.example/"}, {"oauth2", oauth2}});
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  json good = oauth2Config("https://idp.example/oauth/token");
  CHECK(refusal(good) == "accepted");
  json missing = good;
  missing.erase("client_secret");
  CHECK(refusal(missing) == "config.oauth2.client_secret is required");
  json badUrl = good;
  badUrl["token_url"] = "ftp://idp.example/";
  CHECK(refusal(badUrl) == "config.oauth2.token_url must be an absolute http:// or https:// URL");
  json extra = good;
  extra["grant_type"] = "password";
  CHECK(refusal(extra) == "config.oauth2.grant_type is not an OAuth2 setting");
  const json shown = redactTargetConfig(webhooker::TargetType::kHttp, {{"url", "https://r.example/"}, {"oauth2", good}});
  CHECK(shown["oauth2"]["client_secret"] == "[redacted]");
  CHECK(shown["oauth2"]["client_id"] == "webhooker-client");
}

TEST_CASE("through the admin API: an internal token endpoint literal is refused, the secret never answered") {
  EngineHarness harness;
  const Hook hook = harness.createWebhook("oauth2-api");
  httplib::Client api("127.0.0.1", harness.port());
  api.set_bearer_token_auth(EngineHarness::kToken);
  const std::string path = "/api/v1/webhooks/" + hook.webhookId + "/targets";
  json body = {{"name", "idp"},
               {"type", "http"},
               {"config", {{"url", "https://receiver.example/in"},
                           {"oauth2", oauth2Config("http://169.254.169.254/token")}}}};
  auto refused = api.Post(path, body.dump(), "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 400);
  CHECK(json::parse(refused->body)["error"]["code"] == "blocked_destination");
  CHECK(contains(refused->body, "config.oauth2.token_url"));
  body["config"]["oauth2"]["token_url"] = "https://idp.example/token";
  auto created = api.Post(path, body.dump(), "application/json");
  REQUIRE(created);
  CHECK(created->status == 201);
  CHECK(json::parse(created->body)["config"]["oauth2"]["client_secret"] == "[redacted]");
  auto listed = api.Get(path);
  REQUIRE(listed);
  CHECK(!contains(created->body + listed->body, kClientSecret));
}

}  // namespace
}  // namespace webhooker::testing
