// Portal links (docs/security.md, *Portal links*): a short-lived, single-use
// link exchanged for a session cookie that reaches one webhook with the
// link's scopes; and the console's frame-ancestors. Over loopback HTTP
// against real SQLite files, time on a fake clock.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "server/console.h"
#include "tests/support/history_fixture.h"

namespace {

using nlohmann::json;
using webhooker::testing::dumpDatabase;
using webhooker::testing::errorCode;
using webhooker::testing::HistoryFixture;
using webhooker::testing::jsonOf;
using webhooker::testing::postJson;
using webhooker::testing::request;
using webhooker::testing::statusOf;
using webhooker::testing::TestServer;

const std::string kWebhooks = "/api/v1/webhooks";
const std::string kSession = "/api/v1/portal/session";

// The link's secret, from its URL ("/#/portal/<secret>").
std::string secretOf(const json& link) {
  const std::string url = link["url"];
  const std::string prefix = "/#/portal/";
  REQUIRE(url.rfind(prefix, 0) == 0);
  return url.substr(prefix.size());
}

json makeLink(HistoryFixture& f, const json& body, httplib::Client& c) {
  auto res = postJson(c, kWebhooks + "/" + f.webhookId + "/portal-links", body);
  REQUIRE(statusOf(res) == 201);
  return jsonOf(res);
}

httplib::Result exchange(HistoryFixture& f, const std::string& secret,
                         const httplib::Headers& headers = {}) {
  auto c = f.server.anonymousClient();
  return request(c, "POST", kSession, json{{"link", secret}}.dump(), headers);
}

// The session cookie ("wh_portal=...") of an exchange's Set-Cookie.
std::string cookieOf(const httplib::Result& res) {
  const std::string set = res->get_header_value("Set-Cookie");
  const size_t end = set.find(';');
  REQUIRE(end != std::string::npos);
  return set.substr(0, end);
}

httplib::Result asPortal(HistoryFixture& f, const std::string& cookie, const std::string& method,
                         const std::string& path, const std::string& body = "") {
  auto c = f.server.anonymousClient();
  return request(c, method, path, body, {{"Cookie", "theme=dark; " + cookie}});
}

}  // namespace

TEST_CASE("a portal link opens one webhook, once, with the link's scopes") {
  HistoryFixture f;
  auto admin = f.server.client();
  const std::string eventId = f.ingest(R"({"order": 1})");
  const std::string deliveryId = f.deliveryOf(eventId, f.ordersId);
  f.fail(deliveryId, 6);

  const json link = makeLink(f, {{"scopes", {"operate"}}}, admin);
  CHECK(link["scopes"] == json({"read", "operate"}));
  CHECK(link["expires_at"] ==
        webhooker::formatTime(f.clock.now() + std::chrono::minutes(15)));
  const std::string secret = secretOf(link);
  CHECK(secret.rfind("whp_", 0) == 0);
  CHECK(dumpDatabase(f.server.mainDbPath()).find(secret) == std::string::npos);

  auto opened = exchange(f, secret);
  REQUIRE(statusOf(opened) == 200);
  CHECK(jsonOf(opened)["webhook_id"] == f.webhookId);
  CHECK(jsonOf(opened)["scopes"] == json({"read", "operate"}));
  const std::string setCookie = opened->get_header_value("Set-Cookie");
  CHECK(setCookie.find("HttpOnly") != std::string::npos);
  CHECK(setCookie.find("SameSite=Strict") != std::string::npos);
  CHECK(setCookie.find("Path=/api/") != std::string::npos);
  CHECK(setCookie.find("Secure") == std::string::npos);  // plain HTTP, no proxy said TLS
  const std::string cookie = cookieOf(opened);
  CHECK(dumpDatabase(f.server.mainDbPath()).find(cookie.substr(cookie.find('=') + 1)) ==
        std::string::npos);

  // Single use: the second exchange is refused and changes nothing.
  const std::string before = dumpDatabase(f.server.mainDbPath());
  auto again = exchange(f, secret);
  CHECK(statusOf(again) == 401);
  CHECK(errorCode(again) == "invalid_portal_link");
  CHECK_FALSE(again->has_header("Set-Cookie"));
  CHECK(dumpDatabase(f.server.mainDbPath()) == before);

  // The session reaches its webhook within operate, nothing else.
  const std::string webhook = kWebhooks + "/" + f.webhookId;
  CHECK(statusOf(asPortal(f, cookie, "GET", webhook + "/deliveries")) == 200);
  CHECK(statusOf(asPortal(f, cookie, "GET", kWebhooks + "/" + f.otherWebhookId)) == 404);
  CHECK(statusOf(asPortal(f, cookie, "GET", kWebhooks)) == 403);
  CHECK(statusOf(asPortal(f, cookie, "PATCH", webhook + "/targets/" + f.ordersId,
                          R"({"name": "x"})")) == 403);
  CHECK(statusOf(asPortal(f, cookie, "POST", webhook + "/portal-links", "{}")) == 403);
  auto retried = asPortal(f, cookie, "POST", webhook + "/deliveries/" + deliveryId + "/retry");
  CHECK(statusOf(retried) == 200);
  // An Authorization header wins over the cookie: a wrong one is refused.
  {
    auto c = f.server.anonymousClient();
    CHECK(statusOf(request(c, "GET", webhook, "",
                           {{"Cookie", cookie}, {"Authorization", "Bearer wht_0000"}})) == 401);
  }

  // The retry is in the audit log, by the portal link.
  auto audit = admin.Get(webhook + "/audit");
  REQUIRE(statusOf(audit) == 200);
  const json newest = jsonOf(audit)["entries"][0];
  CHECK(newest["actor"] == "portal");
  CHECK(newest["actor_id"] == link["id"]);
  CHECK(newest["route"] == "/api/v1/webhooks/{id}/deliveries/{id}/retry");

  // Signing out ends the session at once.
  auto out = asPortal(f, cookie, "DELETE", kSession);
  CHECK(statusOf(out) == 204);
  CHECK(out->get_header_value("Set-Cookie").find("Max-Age=0") != std::string::npos);
  CHECK(statusOf(asPortal(f, cookie, "GET", webhook)) == 401);
}

TEST_CASE("portal links expire, never widen their maker's scope, and refuse bad input") {
  HistoryFixture f;
  auto admin = f.server.client();
  const std::string links = kWebhooks + "/" + f.webhookId + "/portal-links";

  SUBCASE("an unused link expires after 15 minutes") {
    const std::string secret = secretOf(makeLink(f, json::object(), admin));
    f.clock.advance(std::chrono::minutes(15) + std::chrono::seconds(1));
    const std::string before = dumpDatabase(f.server.mainDbPath());
    auto late = exchange(f, secret);
    CHECK(statusOf(late) == 401);
    CHECK(errorCode(late) == "invalid_portal_link");
    CHECK(dumpDatabase(f.server.mainDbPath()) == before);
  }
  SUBCASE("a session lasts an hour; Secure behind TLS") {
    const json link = makeLink(f, json::object(), admin);
    CHECK(link["scopes"] == json({"read", "operate", "manage"}));  // the admin's
    auto opened = exchange(f, secretOf(link), {{"X-Forwarded-Proto", "https"}});
    REQUIRE(statusOf(opened) == 200);
    CHECK(opened->get_header_value("Set-Cookie").find("; Secure") != std::string::npos);
    const std::string cookie = cookieOf(opened);
    f.clock.advance(std::chrono::minutes(59));
    CHECK(statusOf(asPortal(f, cookie, "GET", kWebhooks + "/" + f.webhookId)) == 200);
    f.clock.advance(std::chrono::minutes(2));
    CHECK(statusOf(asPortal(f, cookie, "GET", kWebhooks + "/" + f.webhookId)) == 401);
  }
  SUBCASE("a scoped token makes links within its own scope") {
    const auto tokenOf = [&](const char* scope) {
      auto res = postJson(admin, kWebhooks + "/" + f.webhookId + "/tokens",
                          {{"name", scope}, {"scopes", {scope}}});
      REQUIRE(statusOf(res) == 201);
      return jsonOf(res)["token"].get<std::string>();
    };
    auto manage = f.server.anonymousClient();
    manage.set_bearer_token_auth(tokenOf("manage"));
    auto operate = f.server.anonymousClient();
    operate.set_bearer_token_auth(tokenOf("operate"));
    CHECK(makeLink(f, {{"scopes", {"read"}}}, manage)["scopes"] == json({"read"}));
    CHECK(statusOf(postJson(operate, links, json::object())) == 403);
    CHECK(statusOf(postJson(manage, kWebhooks + "/" + f.otherWebhookId + "/portal-links",
                            json::object())) == 404);
  }
  SUBCASE("bad input changes nothing") {
    const std::string before = dumpDatabase(f.server.mainDbPath());
    auto c = f.server.anonymousClient();
    for (const std::string body : {"{", "{}", R"({"link": 5})", R"({"link": "x", "more": 1})",
                                   R"({"link": ""})", R"({"link": "whp_nope"})"}) {
      CAPTURE(body);
      auto res = request(c, "POST", kSession, body);
      CHECK(statusOf(res) >= 400);
      CHECK(statusOf(res) < 500);
      CHECK_FALSE(res->has_header("Set-Cookie"));
    }
    for (const std::string body : {R"({"scopes": []})", R"({"scopes": ["root"]})",
                                   R"({"scopes": ["read"], "ttl": 5})", "[1]"}) {
      CAPTURE(body);
      CHECK(statusOf(request(admin, "POST", links, body)) == 400);
    }
    CHECK(dumpDatabase(f.server.mainDbPath()) == before);
  }
}

TEST_CASE("the console may be framed only by the origins --portal-frame-ancestors names") {
  using webhooker::server::checkFrameAncestors;
  {
    TestServer server;
    auto page = server.anonymousClient().Get("/");
    REQUIRE(statusOf(page) == 200);
    CHECK(page->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'") !=
          std::string::npos);
    CHECK(page->get_header_value("X-Frame-Options") == "DENY");
  }
  {
    TestServer server({.tune = [](webhooker::server::ServerOptions& o) {
      o.portalFrameAncestors = "https://app.example.com 'self'";
    }});
    auto page = server.anonymousClient().Get("/");
    REQUIRE(statusOf(page) == 200);
    const std::string csp = page->get_header_value("Content-Security-Policy");
    CHECK(csp.find("frame-ancestors https://app.example.com 'self'") != std::string::npos);
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK_FALSE(page->has_header("X-Frame-Options"));
  }
  CHECK(checkFrameAncestors("'none'").value() == "'none'");
  CHECK(checkFrameAncestors("  https://a.example.com   http://127.0.0.1:8081 ").value() ==
        "https://a.example.com http://127.0.0.1:8081");
  CHECK(checkFrameAncestors("https://*.example.com:*").value() == "https://*.example.com:*");
  for (const char* bad : {"", "*", "'none' https://a.example.com", "https://a.example.com; script-src *",
                          "javascript:", "https://a.example.com,https://b.example.com",
                          "'unsafe-inline'", "https://a b", "ftp://a.example.com",
                          "https://a.example.com:99999"}) {
    CAPTURE(bad);
    CHECK_FALSE(checkFrameAncestors(bad));
  }
}
