// The admin API (DESIGN §7) for webhooks, entrypoints and targets, over
// loopback HTTP against real SQLite files: authentication before routing,
// the shapes, write-only secrets, soft-deleted targets, bad input that
// changes nothing, and no target config ever reaching an events DB. What was
// written is checked by reading the files read-only with SQLiteCpp.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "base/secret.h"
#include "base/uuid.h"
#include "tests/support/test_server.h"

namespace {

using nlohmann::json;
using webhooker::testing::countRows;
using webhooker::testing::dumpDatabase;
using webhooker::testing::errorCode;
using webhooker::testing::eventsDbFiles;
using webhooker::testing::jsonOf;
using webhooker::testing::openReadOnly;
using webhooker::testing::patchJson;
using webhooker::testing::postJson;
using webhooker::testing::request;
using webhooker::testing::statusOf;
using webhooker::testing::TestServer;

const std::string kWebhooks = "/api/v1/webhooks";

// Distinctive credentials: if any of them shows up in a response or an
// events DB, it leaked.
const std::string kSigningSecret = "whsec_bGVha2VkLXNpZ25pbmctc2VjcmV0LWNhbmFyeS0xMjM0";
const std::string kAuthHeaderValue = "Bearer hdr-canary-7f3a9c2e";
const std::string kApiKeyValue = "apikey-canary-51d0";
const std::string kQueryToken = "qs-canary-0b77";
const std::string kSlackPath = "/services/T0CANARY/B0CANARY/slackcanary9x";
const std::string kSlackUrl = "https://hooks.slack.com" + kSlackPath;
// Header values under names off the short allow-list of headers that are
// shown (User-Agent, ...): credentials whose names say nothing of a secret,
// and X-Env, which is none but is not known not to be.
const std::map<std::string, std::string> kUnlistedHeaders = {
    {"X-Webhook-Pass", "pass-canary-4c1e"},
    {"X-Client-Pw", "pw-canary-93bd"},
    {"X-Hmac", "hmac-canary-2a60"},
    {"X-Upstream", "Bearer upstream-canary-d81f"},
    {"X-Env", "prod"}};

json httpTargetBody(const std::string& name) {
  json headers = kUnlistedHeaders;
  headers["Authorization"] = kAuthHeaderValue;
  headers["X-Api-Key"] = kApiKeyValue;
  headers["User-Agent"] = "shop-relay/1.0";
  return {{"name", name},
          {"type", "http"},
          {"config",
           {{"url", "https://receiver.example.com/in?token=" + kQueryToken},
            {"headers", headers},
            {"signing_secret", kSigningSecret}}}};
}

json slackTargetBody(const std::string& name) {
  return {{"name", name}, {"type", "slack"}, {"config", {{"webhook_url", kSlackUrl}}}};
}

// Rows per table of the main DB, for readable "nothing changed" failures.
std::map<std::string, int64_t> mainCounts(const TestServer& server) {
  std::map<std::string, int64_t> out;
  for (const char* table : {"webhooks", "entrypoints", "targets", "settings"})
    out[table] = countRows(server.mainDbPath(), table);
  return out;
}

// Captures the main DB, the set of events files and the target changes
// reported to the engine; check() fails if any of them changed.
class Unchanged {
 public:
  explicit Unchanged(const TestServer& server)
      : server_(server),
        counts_(mainCounts(server)),
        dump_(dumpDatabase(server.mainDbPath())),
        files_(eventsDbFiles(server.dataDir())),
        targetChanges_(server.dispatcher().targetChanges().size()) {}

  void check() const {
    CHECK(mainCounts(server_) == counts_);
    CHECK(dumpDatabase(server_.mainDbPath()) == dump_);
    CHECK(eventsDbFiles(server_.dataDir()) == files_);
    CHECK(server_.dispatcher().targetChanges().size() == targetChanges_);
  }

 private:
  const TestServer& server_;
  const std::map<std::string, int64_t> counts_;
  const std::string dump_;
  const std::set<std::string> files_;
  const size_t targetChanges_;
};

using TargetChange = std::pair<std::string, std::string>;

std::string idOf(const json& resource) { return resource.at("id").get<std::string>(); }

// A list of objects keyed by their "id": list order ties on equal
// created_at are broken by random ids, so compare as a map.
std::map<std::string, json> byId(const json& list) {
  std::map<std::string, json> out;
  for (const json& item : list) out[item.at("id").get<std::string>()] = item;
  return out;
}

std::string configInMainDb(const TestServer& server, const std::string& targetId) {
  SQLite::Database db = openReadOnly(server.mainDbPath());
  SQLite::Statement q(db, "SELECT config FROM targets WHERE id = ?");
  q.bind(1, targetId);
  if (!q.executeStep()) return "<no row>";
  return q.getColumn(0).getString();
}

// --- Authentication --------------------------------------------------------

TEST_CASE("every /api/ request needs the bearer token, checked before routing") {
  TestServer server;
  const json webhook = server.createWebhook("shop");
  const std::string id = webhook["id"].get<std::string>();

  const std::vector<std::pair<std::string, httplib::Headers>> callers = {
      {"no header", {}},
      {"wrong token", {{"Authorization", "Bearer whk_wrong-token-0123456789abcdef"}}},
      {"the token plus a character",
       {{"Authorization", std::string("Bearer ") + TestServer::kToken + "x"}}},
      {"the token without a scheme", {{"Authorization", TestServer::kToken}}},
      {"basic auth", {{"Authorization", "Basic dXNlcjpwYXNzd29yZA=="}}},
      {"bearer with an empty token", {{"Authorization", "Bearer "}}},
      {"bearer with no token", {{"Authorization", "Bearer"}}},
  };
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"GET", kWebhooks},
      {"POST", kWebhooks},
      {"GET", kWebhooks + "/" + id},
      {"PATCH", kWebhooks + "/" + id},
      {"DELETE", kWebhooks + "/" + id},
      {"POST", kWebhooks + "/" + id + "/targets"},
      {"GET", "/api/v1/no-such-route"},
      {"GET", "/api/other"},
  };
  const Unchanged unchanged(server);
  // Named copies, not structured bindings: CAPTURE's lambda cannot refer to
  // a binding with clang 14.
  for (const auto& caller : callers) {
    const auto& who = caller.first;
    const auto& headers = caller.second;
    for (const auto& route : routes) {
      const auto& method = route.first;
      const auto& path = route.second;
      CAPTURE(who);
      CAPTURE(method);
      CAPTURE(path);
      auto c = server.anonymousClient();
      auto res = request(c, method, path, R"({"name": "intruder"})", headers);
      CHECK(statusOf(res) == 401);
      CHECK(errorCode(res) == "unauthorized");
      REQUIRE(res);
      CHECK(res->get_header_value("WWW-Authenticate").rfind("Bearer", 0) == 0);
    }
  }
  unchanged.check();

  // With the token, sent the same way, the same requests get through: a
  // real route answers, an unknown one is a 404 in the error shape.
  auto anonymous = server.anonymousClient();
  const httplib::Headers good = {{"Authorization", std::string("Bearer ") + TestServer::kToken}};
  CHECK(statusOf(request(anonymous, "GET", kWebhooks, "", good)) == 200);
  CHECK(statusOf(request(anonymous, "GET", kWebhooks + "/" + id, "", good)) == 200);
  auto admin = server.client();
  CHECK(statusOf(admin.Get(kWebhooks)) == 200);
  auto unknown = admin.Get("/api/v1/no-such-route");
  CHECK(statusOf(unknown) == 404);
  CHECK(errorCode(unknown) == "not_found");
  // Health and ingest are not behind the token.
  auto anon = server.anonymousClient();
  CHECK(statusOf(anon.Get("/healthz")) == 200);
}

TEST_CASE("a known route with another method is 405 with Allow; changes nothing") {
  TestServer server;
  const std::string id = server.createWebhook("shop")["id"].get<std::string>();
  const std::string webhook = kWebhooks + "/" + id;
  const std::vector<std::array<std::string, 3>> cases = {
      // method, path, Allow
      {"PUT", webhook, "GET, HEAD, PATCH, DELETE"},
      {"POST", webhook, "GET, HEAD, PATCH, DELETE"},
      {"DELETE", kWebhooks, "GET, HEAD, POST"},
      {"PATCH", kWebhooks, "GET, HEAD, POST"},
      {"GET", webhook + "/replay", "POST"},
      {"DELETE", webhook + "/events/" + webhooker::newUuid(), "GET, HEAD"},
      {"POST", "/healthz", "GET, HEAD"},
  };
  const Unchanged unchanged(server);
  auto admin = server.client();
  for (const auto& c : cases) {
    const std::string& method = c[0];
    const std::string& path = c[1];
    CAPTURE(method);
    CAPTURE(path);
    auto res = request(admin, method, path, R"({"name": "renamed"})");
    CHECK(statusOf(res) == 405);
    CHECK(errorCode(res) == "method_not_allowed");
    REQUIRE(res);
    CHECK(res->get_header_value("Allow") == c[2]);
  }
  // Without the token the route's methods are no one's business: 401 first.
  auto anonymous = server.anonymousClient();
  CHECK(statusOf(request(anonymous, "PUT", webhook, "{}")) == 401);
  // A path no route has stays 404.
  CHECK(statusOf(request(admin, "PUT", webhook + "/nonsense", "{}")) == 404);
  unchanged.check();
}

// --- Webhooks --------------------------------------------------------------

TEST_CASE("webhooks: create, list, get, partial patch, delete") {
  TestServer server;
  auto admin = server.client();

  auto created = postJson(admin, kWebhooks, {{"name", "shop"}});
  REQUIRE(statusOf(created) == 201);
  const json shop = jsonOf(created);
  REQUIRE(shop.is_object());
  const std::string id = shop["id"].get<std::string>();
  CHECK(webhooker::isUuid(id));
  CHECK(shop["name"] == "shop");
  CHECK(shop["description"] == "");
  CHECK(shop["retention_days"] == 30);
  REQUIRE(shop["entrypoints"].is_array());
  REQUIRE(shop["entrypoints"].size() == 1);
  const json ep = shop["entrypoints"][0];
  const std::string epId = ep["id"].get<std::string>();
  CHECK(webhooker::isUuid(epId));
  CHECK(ep["url"] == "/hooks/" + epId);
  CHECK(ep["active"] == true);
  // Rows only: its events file is made by its first event.
  CHECK_FALSE(std::filesystem::exists(server.eventsDbPath(id)));
  CHECK(server.eventsDbs().openCount() == 0);
  // Reads answer it as a webhook with no events, and make no file.
  const std::string shopPath = kWebhooks + "/" + id;
  CHECK(jsonOf(admin.Get(shopPath + "/events"))["events"] == json::array());
  CHECK(jsonOf(admin.Get(shopPath + "/deliveries"))["deliveries"] == json::array());
  CHECK(jsonOf(admin.Get(shopPath + "/stats"))["events"] == 0);
  CHECK(statusOf(admin.Get(shopPath + "/events/" + webhooker::newUuid())) == 404);
  CHECK_FALSE(std::filesystem::exists(server.eventsDbPath(id)));
  CHECK(server.eventsDbs().openCount() == 0);
  CHECK(countRows(server.mainDbPath(), "webhooks") == 1);
  CHECK(countRows(server.mainDbPath(), "entrypoints", "webhook_id = '" + id + "'") == 1);

  auto createdToo = postJson(
      admin, kWebhooks, {{"name", "billing"}, {"description", "invoices"}, {"retention_days", 7}});
  REQUIRE(statusOf(createdToo) == 201);
  const json billing = jsonOf(createdToo);
  CHECK(billing["description"] == "invoices");
  CHECK(billing["retention_days"] == 7);
  const std::string billingId = billing["id"].get<std::string>();

  // get and list show exactly what create answered.
  CHECK(jsonOf(admin.Get(kWebhooks + "/" + id)) == shop);
  const json list = jsonOf(admin.Get(kWebhooks));
  REQUIRE(list["webhooks"].is_array());
  REQUIRE(list["webhooks"].size() == 2);
  CHECK(byId(list["webhooks"]) == byId(json{shop, billing}));

  // A patch changes only what it names.
  auto patched = patchJson(admin, kWebhooks + "/" + id, {{"description", "orders from the shop"}});
  REQUIRE(statusOf(patched) == 200);
  json p = jsonOf(patched);
  CHECK(p["name"] == "shop");
  CHECK(p["description"] == "orders from the shop");
  CHECK(p["retention_days"] == 30);
  CHECK(p["entrypoints"] == shop["entrypoints"]);
  p = jsonOf(patchJson(admin, kWebhooks + "/" + id, {{"retention_days", 90}, {"name", "shop2"}}));
  CHECK(p["name"] == "shop2");
  CHECK(p["description"] == "orders from the shop");
  CHECK(p["retention_days"] == 90);
  CHECK(jsonOf(admin.Get(kWebhooks + "/" + id)) == p);
  {
    SQLite::Database db = openReadOnly(server.mainDbPath());
    SQLite::Statement q(db, "SELECT name, description, retention_days FROM webhooks WHERE id = ?");
    q.bind(1, id);
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getString() == "shop2");
    CHECK(q.getColumn(1).getString() == "orders from the shop");
    CHECK(q.getColumn(2).getInt() == 90);
  }

  // Delete: with a target and a stored event, so the events DB is open in
  // the pool and has WAL files when it goes.
  server.createTarget(id, {{"name", "audit"}, {"type", "log"}});
  auto anon = server.anonymousClient();
  REQUIRE(statusOf(anon.Post("/hooks/" + epId, "{}", "application/json")) == 200);
  CHECK(std::filesystem::exists(server.eventsDbPath(id)));
  const std::string billingHook = billing["entrypoints"][0]["url"].get<std::string>();
  REQUIRE(statusOf(anon.Post(billingHook, "{}", "application/json")) == 200);
  auto deleted = admin.Delete(kWebhooks + "/" + id);
  CHECK(statusOf(deleted) == 204);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    CAPTURE(suffix);
    std::filesystem::path file = server.eventsDbPath(id);
    file += suffix;
    CHECK_FALSE(std::filesystem::exists(file));
  }
  CHECK(std::filesystem::exists(server.eventsDbPath(billingId)));
  auto gone = admin.Get(kWebhooks + "/" + id);
  CHECK(statusOf(gone) == 404);
  CHECK(errorCode(gone) == "not_found");
  const json after = jsonOf(admin.Get(kWebhooks));
  REQUIRE(after["webhooks"].size() == 1);
  CHECK(after["webhooks"][0]["id"] == billingId);
  auto ingest = anon.Post("/hooks/" + epId, "{}", "application/json");
  CHECK(statusOf(ingest) == 404);
  CHECK(errorCode(ingest) == "not_found");
  CHECK(countRows(server.mainDbPath(), "webhooks", "id = '" + id + "'") == 0);
  CHECK(countRows(server.mainDbPath(), "entrypoints", "webhook_id = '" + id + "'") == 0);
  CHECK(countRows(server.mainDbPath(), "targets", "webhook_id = '" + id + "'") == 0);
  auto again = admin.Delete(kWebhooks + "/" + id);
  CHECK(statusOf(again) == 404);
  CHECK(errorCode(again) == "not_found");
}

TEST_CASE("a webhook's or a target's name works wherever its id does; an id wins; a shared name is 409") {
  TestServer server;
  auto admin = server.client();
  const json shop = server.createWebhook("shop");
  const std::string shopId = idOf(shop);
  const json orders = server.createTarget(shopId, {{"name", "orders"}, {"type", "log"}});
  const std::string ordersId = idOf(orders);
  // A target whose name is another target's id: the id is what counts.
  const json impostor = server.createTarget(shopId, {{"name", ordersId}, {"type", "log"}});
  // Another webhook's target of the same name is not among the candidates.
  const json billing = server.createWebhook("billing");
  const json billingOrders =
      server.createTarget(idOf(billing), {{"name", "orders"}, {"type", "log"}});

  CHECK(jsonOf(admin.Get(kWebhooks + "/shop")) == jsonOf(admin.Get(kWebhooks + "/" + shopId)));
  CHECK(jsonOf(admin.Get(kWebhooks + "/shop/targets/orders")) == orders);
  CHECK(jsonOf(admin.Get(kWebhooks + "/billing/targets/orders")) == billingOrders);
  CHECK(jsonOf(admin.Get(kWebhooks + "/shop/targets/" + ordersId)) == orders);
  CHECK(jsonOf(admin.Get(kWebhooks + "/shop/stats"))["webhook_id"] == shopId);
  auto paused = patchJson(admin, kWebhooks + "/shop/targets/orders", {{"active", false}});
  REQUIRE(statusOf(paused) == 200);
  CHECK(jsonOf(paused)["id"] == ordersId);
  CHECK(jsonOf(paused)["active"] == false);
  CHECK(server.dispatcher().targetChanges().back() == TargetChange{shopId, ordersId});

  // The routing preview, by names.
  auto anon = server.anonymousClient();
  const std::string hook = shop["entrypoints"][0]["url"];
  REQUIRE(statusOf(anon.Post(hook, R"({"type": "order.paid"})", "application/json")) == 200);
  const json events = jsonOf(admin.Get(kWebhooks + "/shop/events"));
  REQUIRE(events["events"].size() == 1);
  auto preview = postJson(admin, kWebhooks + "/shop/targets/orders/preview",
                          {{"event_id", events["events"][0]["id"]}});
  REQUIRE(statusOf(preview) == 200);
  CHECK(jsonOf(preview)["matched"] == true);

  SUBCASE("an unknown name is a 404 that names it") {
    for (const std::string path : {"/nobody", "/shop/targets/nobody", "/nobody/targets/orders"}) {
      CAPTURE(path);
      auto missing = admin.Get(kWebhooks + path);
      CHECK(statusOf(missing) == 404);
      CHECK(errorCode(missing) == "not_found");
      CHECK(jsonOf(missing)["error"]["message"].get<std::string>().find("nobody") !=
            std::string::npos);
    }
  }
  SUBCASE("a deleted target's name no longer resolves; another target may take it") {
    REQUIRE(statusOf(admin.Delete(kWebhooks + "/shop/targets/orders")) == 204);
    CHECK(statusOf(admin.Get(kWebhooks + "/shop/targets/orders")) == 404);
    const json again = server.createTarget(shopId, {{"name", "orders"}, {"type", "log"}});
    CHECK(jsonOf(admin.Get(kWebhooks + "/shop/targets/orders")) == again);
  }
  SUBCASE("a name two share is 409 with both ids, and the request changes nothing") {
    const json shopToo = server.createWebhook("shop");
    const json ordersToo = server.createTarget(shopId, {{"name", "orders"}, {"type", "log"}});
    const std::set<std::string> twoShops = {shopId, idOf(shopToo)};
    const std::set<std::string> twoOrders = {ordersId, idOf(ordersToo)};
    const Unchanged unchanged(server);
    for (const auto& [method, path, candidates] :
         {std::tuple{"GET", kWebhooks + "/shop", twoShops},
          std::tuple{"PATCH", kWebhooks + "/shop", twoShops},
          std::tuple{"DELETE", kWebhooks + "/shop", twoShops},
          std::tuple{"PATCH", kWebhooks + "/" + shopId + "/targets/orders", twoOrders},
          std::tuple{"DELETE", kWebhooks + "/" + shopId + "/targets/orders", twoOrders},
          std::tuple{"POST", kWebhooks + "/" + shopId + "/targets/orders/preview", twoOrders}}) {
      const auto& refusedMethod = method;  // clang 14: a lambda cannot name a binding
      CAPTURE(refusedMethod);
      const auto& refusedPath = path;  // clang 14: a lambda cannot name a binding
      CAPTURE(refusedPath);
      auto ambiguous = request(admin, method, path, R"({"active": true})");
      CHECK(statusOf(ambiguous) == 409);
      const json error = jsonOf(ambiguous)["error"];
      CHECK(error["code"] == "ambiguous_name");
      CHECK(error["message"].get<std::string>().find("2 ") == 0);
      CHECK(error["candidates"].get<std::set<std::string>>() == candidates);
    }
    unchanged.check();
    // The ids still reach each of them.
    CHECK(jsonOf(admin.Get(kWebhooks + "/" + idOf(shopToo)))["name"] == "shop");
    CHECK(jsonOf(admin.Get(kWebhooks + "/" + shopId + "/targets/" + idOf(impostor)))["name"] ==
          ordersId);
  }
}

// --- Entrypoints -----------------------------------------------------------

TEST_CASE("entrypoints: create, deactivate, reactivate, delete") {
  TestServer server;
  auto admin = server.client();
  auto anon = server.anonymousClient();
  const json shop = server.createWebhook("shop");
  const std::string id = shop["id"].get<std::string>();
  const std::string eps = kWebhooks + "/" + id + "/entrypoints";

  auto created = admin.Post(eps, "", "application/json");
  REQUIRE(statusOf(created) == 201);
  const json ep = jsonOf(created);
  const std::string epId = ep["id"].get<std::string>();
  CHECK(webhooker::isUuid(epId));
  CHECK(ep["url"] == "/hooks/" + epId);
  CHECK(ep["active"] == true);
  CHECK(statusOf(anon.Post("/hooks/" + epId, "{}", "application/json")) == 200);

  auto createdOff = postJson(admin, eps, {{"active", false}});
  REQUIRE(statusOf(createdOff) == 201);
  const std::string offId = jsonOf(createdOff)["id"].get<std::string>();
  CHECK(jsonOf(createdOff)["active"] == false);
  CHECK(statusOf(anon.Post("/hooks/" + offId, "{}", "application/json")) == 410);

  const json list = jsonOf(admin.Get(eps));
  REQUIRE(list["entrypoints"].is_array());
  CHECK(list["entrypoints"].size() == 3);
  CHECK(jsonOf(admin.Get(kWebhooks + "/" + id))["entrypoints"].size() == 3);

  auto off = patchJson(admin, eps + "/" + epId, {{"active", false}});
  REQUIRE(statusOf(off) == 200);
  CHECK(jsonOf(off)["active"] == false);
  CHECK(countRows(server.mainDbPath(), "entrypoints", "id = '" + epId + "' AND active = 0") == 1);
  auto refused = anon.Post("/hooks/" + epId, "{}", "application/json");
  CHECK(statusOf(refused) == 410);
  CHECK(errorCode(refused) == "entrypoint_inactive");

  auto on = patchJson(admin, eps + "/" + epId, {{"active", true}});
  REQUIRE(statusOf(on) == 200);
  CHECK(jsonOf(on)["active"] == true);
  CHECK(statusOf(anon.Post("/hooks/" + epId, "{}", "application/json")) == 200);

  CHECK(statusOf(admin.Delete(eps + "/" + epId)) == 204);
  auto gone = anon.Post("/hooks/" + epId, "{}", "application/json");
  CHECK(statusOf(gone) == 404);
  CHECK(errorCode(gone) == "not_found");
  CHECK(countRows(server.mainDbPath(), "entrypoints", "id = '" + epId + "'") == 0);
  CHECK(jsonOf(admin.Get(eps))["entrypoints"].size() == 2);
  auto again = admin.Delete(eps + "/" + epId);
  CHECK(statusOf(again) == 404);
  CHECK(errorCode(again) == "not_found");
}

TEST_CASE("entrypoints by name: unique within their webhook, taken wherever the id is") {
  TestServer server;
  auto admin = server.client();
  auto anon = server.anonymousClient();
  const json shop = server.createWebhook("shop");
  const std::string eps = kWebhooks + "/shop/entrypoints";
  // The first entrypoint is "default"; one created without a name "ep-"
  // and the start of its id.
  REQUIRE(shop["entrypoints"].size() == 1);
  CHECK(shop["entrypoints"][0]["name"] == "default");
  const std::string defaultId = idOf(shop["entrypoints"][0]);
  auto unnamed = admin.Post(eps, "", "application/json");
  REQUIRE(statusOf(unnamed) == 201);
  CHECK(jsonOf(unnamed)["name"] == "ep-" + idOf(jsonOf(unnamed)).substr(0, 8));
  auto created = postJson(admin, eps, {{"name", "github"}, {"active", false}});
  REQUIRE(statusOf(created) == 201);
  const json github = jsonOf(created);
  CHECK(github["name"] == "github");
  CHECK(countRows(server.mainDbPath(), "entrypoints", "name = 'github' AND id = '" +
                                                          idOf(github) + "'") == 1);
  // Another webhook may use the same names.
  server.createWebhook("billing");
  auto billingGithub = postJson(admin, kWebhooks + "/billing/entrypoints", {{"name", "github"}});
  REQUIRE(statusOf(billingGithub) == 201);

  auto on = patchJson(admin, eps + "/github", {{"active", true}});
  REQUIRE(statusOf(on) == 200);
  CHECK(jsonOf(on)["id"] == github["id"]);
  CHECK(jsonOf(on)["active"] == true);
  CHECK(statusOf(anon.Post(github["url"].get<std::string>(), "{}", "application/json")) == 200);
  auto renamed = patchJson(admin, eps + "/default", {{"name", "main"}});
  REQUIRE(statusOf(renamed) == 200);
  CHECK(jsonOf(renamed)["id"] == defaultId);
  CHECK(jsonOf(renamed)["name"] == "main");
  CHECK(statusOf(patchJson(admin, eps + "/main", {{"name", "main"}})) == 200);  // its own name
  CHECK(statusOf(patchJson(admin, eps + "/" + defaultId, {{"active", true}})) == 200);
  auto missing = admin.Delete(eps + "/default");
  CHECK(statusOf(missing) == 404);
  CHECK(jsonOf(missing)["error"]["message"] ==
        "no entrypoint has the id or name \"default\"");

  SUBCASE("a bad or taken name is refused naming the field, and changes nothing") {
    const Unchanged unchanged(server);
    for (const json& bad : {json(""), json(std::string(201, 'a')), json("a/b"), json(42),
                            json(webhooker::newUuid()), json(nullptr)}) {
      CAPTURE(bad.dump());
      for (const auto& [method, path] : {std::pair{"POST", eps}, std::pair{"PATCH", eps + "/main"}}) {
        const auto& refusedPath = path;  // clang 14: a lambda cannot name a binding
        CAPTURE(refusedPath);
        auto refused = request(admin, method, path, json{{"name", bad}, {"active", false}}.dump());
        CHECK(statusOf(refused) == 400);
        CHECK(errorCode(refused) == "invalid_field");
        CHECK(jsonOf(refused)["error"]["message"].get<std::string>().find("name") == 0);
      }
    }
    for (const auto& [method, path] : {std::pair{"POST", eps}, std::pair{"PATCH", eps + "/main"}}) {
      const auto& refusedPath = path;  // clang 14: a lambda cannot name a binding
      CAPTURE(refusedPath);
      auto taken = request(admin, method, path, R"({"name": "github", "active": false})");
      CHECK(statusOf(taken) == 409);
      CHECK(errorCode(taken) == "conflict");
      CHECK(jsonOf(taken)["error"]["message"] ==
            "name: another entrypoint of this webhook is called \"github\"");
    }
    unchanged.check();
  }
  SUBCASE("delete by name") {
    CHECK(statusOf(admin.Delete(eps + "/github")) == 204);
    CHECK(countRows(server.mainDbPath(), "entrypoints", "id = '" + idOf(github) + "'") == 0);
    CHECK(statusOf(admin.Get(kWebhooks + "/billing/entrypoints")) == 200);
    CHECK(jsonOf(admin.Get(kWebhooks + "/billing/entrypoints"))["entrypoints"].size() == 2);
    // The name is free again.
    CHECK(statusOf(postJson(admin, eps, {{"name", "github"}})) == 201);
  }
}

// --- Targets ---------------------------------------------------------------

TEST_CASE("targets: create fills defaults, get and list show the same, secrets stay redacted") {
  TestServer server;
  auto admin = server.client();
  const std::string id = server.createWebhook("shop")["id"].get<std::string>();
  const std::string targets = kWebhooks + "/" + id + "/targets";

  // Every response body of this test, to search for leaked secrets at the end.
  std::vector<std::string> bodies;
  auto keep = [&](httplib::Result res) {
    if (res) bodies.push_back(res->body);
    return res;
  };

  auto minimal = keep(postJson(admin, targets,
                               {{"name", "plain"},
                                {"type", "http"},
                                {"config", {{"url", "https://example.com/hook"}}}}));
  REQUIRE(statusOf(minimal) == 201);
  const json plain = jsonOf(minimal);
  CHECK(webhooker::isUuid(plain["id"].get<std::string>()));
  CHECK(plain["webhook_id"] == id);
  CHECK(plain["name"] == "plain");
  CHECK(plain["type"] == "http");
  CHECK(plain["active"] == true);
  CHECK(plain["max_concurrency"] == 4);
  CHECK(plain["config"] == json{{"url", "https://example.com/hook"},
                                {"method", "POST"},
                                {"headers", json::object()},
                                {"timeout_ms", 10000}});
  CHECK(plain["retry"] == json{{"max_retries", 5},
                               {"base_delay_ms", 2000},
                               {"max_delay_ms", 300000},
                               {"jitter", 0.2}});
  CHECK_FALSE(plain.contains("deleted_at"));
  // The defaults are stored, not only shown.
  const json storedPlain = json::parse(configInMainDb(server, plain["id"].get<std::string>()));
  CHECK(storedPlain["method"] == "POST");
  CHECK(storedPlain["timeout_ms"] == 10000);

  auto full = keep(postJson(admin, targets, httpTargetBody("orders")));
  REQUIRE(statusOf(full) == 201);
  const json orders = jsonOf(full);
  CHECK(orders["config"]["signing_secret"] == "[redacted]");
  CHECK(orders["config"]["headers"]["Authorization"] == "[redacted]");
  CHECK(orders["config"]["headers"]["X-Api-Key"] == "[redacted]");
  for (const auto& unlisted : kUnlistedHeaders) {
    const std::string header = unlisted.first;  // a copy: clang's CAPTURE takes no binding
    CAPTURE(header);
    CHECK(orders["config"]["headers"][header] == "[redacted]");
  }
  CHECK(orders["config"]["headers"]["User-Agent"] == "shop-relay/1.0");
  CHECK(orders["config"]["url"].get<std::string>().rfind("https://receiver.example.com/in", 0) ==
        0);

  auto slack = keep(postJson(admin, targets, slackTargetBody("chat")));
  REQUIRE(statusOf(slack) == 201);
  const json chat = jsonOf(slack);
  CHECK(chat["type"] == "slack");
  CHECK(chat["config"]["webhook_url"].get<std::string>().rfind("https://hooks.slack.com", 0) == 0);

  auto database = keep(postJson(admin, targets, {{"name", "keep"}, {"type", "database"},
                                                  {"config", json::object()}}));
  REQUIRE(statusOf(database) == 201);
  CHECK(jsonOf(database)["config"] == json::object());
  auto log = keep(postJson(admin, targets,
                           {{"name", "audit"}, {"type", "log"}, {"max_concurrency", 1},
                            {"active", false}, {"retry", {{"max_retries", 3}}}}));
  REQUIRE(statusOf(log) == 201);
  const json audit = jsonOf(log);
  CHECK(audit["config"] == json::object());
  CHECK(audit["max_concurrency"] == 1);
  CHECK(audit["active"] == false);
  CHECK(audit["retry"] == json{{"max_retries", 3},
                               {"base_delay_ms", 2000},
                               {"max_delay_ms", 300000},
                               {"jitter", 0.2}});

  // get and list answer what create answered.
  const std::vector<json> all = {plain, orders, chat, jsonOf(database), audit};
  for (const json& t : all) {
    CAPTURE(t["name"]);
    auto got = keep(admin.Get(targets + "/" + t["id"].get<std::string>()));
    CHECK(statusOf(got) == 200);
    CHECK(jsonOf(got) == t);
  }
  auto listed = keep(admin.Get(targets));
  REQUIRE(statusOf(listed) == 200);
  CHECK(byId(jsonOf(listed)["targets"]) == byId(json(all)));
  CHECK(countRows(server.mainDbPath(), "targets") == 5);

  // Patch: a config merge changes the URL; the secret and headers stay.
  const std::string ordersPath = targets + "/" + orders["id"].get<std::string>();
  auto patched = keep(patchJson(admin, ordersPath,
                                {{"config", {{"url", "https://receiver2.example.com/new"}}}}));
  REQUIRE(statusOf(patched) == 200);
  CHECK(jsonOf(patched)["config"]["url"] == "https://receiver2.example.com/new");
  CHECK(jsonOf(patched)["config"]["signing_secret"] == "[redacted]");
  // The engine hears of the change, so it drops what it cached.
  REQUIRE_FALSE(server.dispatcher().targetChanges().empty());
  CHECK(server.dispatcher().targetChanges().back() ==
        TargetChange{id, orders["id"].get<std::string>()});
  json stored = json::parse(configInMainDb(server, orders["id"].get<std::string>()));
  CHECK(stored["url"] == "https://receiver2.example.com/new");
  CHECK(stored["signing_secret"] == kSigningSecret);
  CHECK(stored["headers"]["Authorization"] == kAuthHeaderValue);
  CHECK(stored["headers"]["X-Webhook-Pass"] == kUnlistedHeaders.at("X-Webhook-Pass"));

  // A nested merge: one header changes, the credential header stays.
  auto headerPatch = keep(patchJson(admin, ordersPath,
                                    {{"name", "orders-v2"},
                                     {"config", {{"headers", {{"X-Env", "staging"}}}}}}));
  REQUIRE(statusOf(headerPatch) == 200);
  CHECK(jsonOf(headerPatch)["name"] == "orders-v2");
  CHECK(jsonOf(headerPatch)["config"]["headers"]["X-Env"] == "[redacted]");
  stored = json::parse(configInMainDb(server, orders["id"].get<std::string>()));
  CHECK(stored["headers"]["Authorization"] == kAuthHeaderValue);
  CHECK(stored["headers"]["X-Env"] == "staging");
  CHECK(stored["signing_secret"] == kSigningSecret);

  auto slackPatch = keep(patchJson(admin, targets + "/" + chat["id"].get<std::string>(),
                                   {{"max_concurrency", 8}, {"retry", {{"jitter", 0.5}}}}));
  REQUIRE(statusOf(slackPatch) == 200);
  CHECK(jsonOf(slackPatch)["max_concurrency"] == 8);
  CHECK(jsonOf(slackPatch)["retry"]["jitter"] == 0.5);
  CHECK(jsonOf(slackPatch)["retry"]["max_retries"] == 5);
  CHECK(json::parse(configInMainDb(server, chat["id"].get<std::string>()))["webhook_url"] ==
        kSlackUrl);

  keep(admin.Get(targets));
  keep(admin.Get(ordersPath));
  REQUIRE(bodies.size() >= 14);
  for (const std::string& body : bodies) {
    CAPTURE(body);
    CHECK(body.find(kSigningSecret) == std::string::npos);
    CHECK(body.find(kAuthHeaderValue) == std::string::npos);
    CHECK(body.find("hdr-canary") == std::string::npos);
    CHECK(body.find(kApiKeyValue) == std::string::npos);
    CHECK(body.find(kQueryToken) == std::string::npos);
    CHECK(body.find(kSlackPath) == std::string::npos);
    CHECK(body.find("slackcanary9x") == std::string::npos);
    for (const char* canary : {"pass-canary", "pw-canary", "hmac-canary", "upstream-canary"})
      CHECK(body.find(canary) == std::string::npos);
  }
  // The canaries are real: the main DB holds them, so the search above
  // could have found them.
  const std::string mainDump = dumpDatabase(server.mainDbPath());
  CHECK(mainDump.find(kSigningSecret) != std::string::npos);
  CHECK(mainDump.find(kSlackPath) != std::string::npos);
}

TEST_CASE("targets: a token in an http URL's path is redacted, the path's words are kept") {
  TestServer server;
  auto admin = server.client();
  const std::string id = server.createWebhook("chat")["id"].get<std::string>();
  const std::string targets = kWebhooks + "/" + id + "/targets";
  const std::string discordToken =
      "dWqY3xN8-kQe7Zt1LrV0pS2mH9aBcJ4fGoUi6TyE5wXnR_lKzMvD3sPq0hA7jCbN1gF8uWo2";
  const std::string teamsToken = "8d4c2b1ae7f94e56b0c3d2a1f0e9d8c7";
  const std::map<std::string, std::string> urls = {
      {"https://discord.com/api/webhooks/1234567890123456789/" + discordToken,
       "https://discord.com/api/webhooks/1234567890123456789/[redacted]"},
      {"https://acme.webhook.office.com/webhookb2/IncomingWebhook/" + teamsToken + "/v2",
       "https://acme.webhook.office.com/webhookb2/IncomingWebhook/[redacted]/v2"},
      {"https://hooks.slack.com/services/T0CANARY/B0CANARY/Zq8vWmK3pR7tYx2LnB5cHdJ4",
       "https://hooks.slack.com/services/T0CANARY/B0CANARY/[redacted]"},
      {"https://example.com/hooks/orders-created", "https://example.com/hooks/orders-created"}};
  for (const auto& [url, shown] : urls) {
    const auto& targetUrl = url;  // clang 14: a lambda cannot name a binding
    INFO(targetUrl);
    auto created = postJson(admin, targets,
                            {{"name", "t"}, {"type", "http"}, {"config", {{"url", url}}}});
    REQUIRE(statusOf(created) == 201);
    CHECK(jsonOf(created)["config"]["url"] == shown);
    const std::string target = targets + "/" + jsonOf(created)["id"].get<std::string>();
    CHECK(jsonOf(admin.Get(target))["config"]["url"] == shown);
  }
  const std::string listed = admin.Get(targets)->body;
  CHECK(listed.find(discordToken) == std::string::npos);
  CHECK(listed.find(teamsToken) == std::string::npos);
  CHECK(listed.find("Zq8vWmK3pR7tYx2LnB5cHdJ4") == std::string::npos);
}

TEST_CASE("targets: type is immutable") {
  TestServer server;
  auto admin = server.client();
  const std::string id = server.createWebhook("shop")["id"].get<std::string>();
  const json t = server.createTarget(id, httpTargetBody("orders"));
  const std::string path = kWebhooks + "/" + id + "/targets/" + t["id"].get<std::string>();
  const Unchanged unchanged(server);
  auto res = patchJson(admin, path, {{"type", "slack"}, {"name", "renamed"}});
  CHECK(statusOf(res) == 400);
  CHECK(errorCode(res) == "immutable_field");
  unchanged.check();
  CHECK(jsonOf(admin.Get(path)) == t);
}

TEST_CASE("targets: delete is soft — gone from the API, kept in the main DB") {
  TestServer server;
  auto admin = server.client();
  const std::string id = server.createWebhook("shop")["id"].get<std::string>();
  const json kept = server.createTarget(id, {{"name", "audit"}, {"type", "log"}});
  const json t = server.createTarget(id, httpTargetBody("orders"));
  const std::string tid = t["id"].get<std::string>();
  const std::string path = kWebhooks + "/" + id + "/targets/" + tid;

  auto deleted = admin.Delete(path);
  CHECK(statusOf(deleted) == 204);
  REQUIRE_FALSE(server.dispatcher().targetChanges().empty());
  CHECK(server.dispatcher().targetChanges().back() == TargetChange{id, tid});
  auto got = admin.Get(path);
  CHECK(statusOf(got) == 404);
  CHECK(errorCode(got) == "not_found");
  const json list = jsonOf(admin.Get(kWebhooks + "/" + id + "/targets"));
  REQUIRE(list["targets"].is_array());
  REQUIRE(list["targets"].size() == 1);
  CHECK(list["targets"][0]["id"] == kept["id"]);

  {
    SQLite::Database db = openReadOnly(server.mainDbPath());
    SQLite::Statement q(db, "SELECT deleted_at, active, type, name FROM targets WHERE id = ?");
    q.bind(1, tid);
    REQUIRE(q.executeStep());
    CHECK_FALSE(q.getColumn(0).isNull());
    CHECK_FALSE(q.getColumn(0).getString().empty());
    CHECK(q.getColumn(1).getInt() == 0);
    CHECK(q.getColumn(2).getString() == "http");
    CHECK(q.getColumn(3).getString() == "orders");
  }

  const Unchanged unchanged(server);
  auto patched = patchJson(admin, path, {{"name", "zombie"}});
  CHECK(statusOf(patched) == 404);
  CHECK(errorCode(patched) == "not_found");
  auto again = admin.Delete(path);
  CHECK(statusOf(again) == 404);
  CHECK(errorCode(again) == "not_found");
  unchanged.check();
}

TEST_CASE("targets: a deactivated target gets no deliveries until reactivated") {
  TestServer server;
  auto admin = server.client();
  auto anon = server.anonymousClient();
  const json webhook = server.createWebhook("shop");
  const std::string id = webhook["id"].get<std::string>();
  const std::string hook = "/hooks/" + webhook["entrypoints"][0]["id"].get<std::string>();
  const std::string keptId =
      server.createTarget(id, {{"name", "audit"}, {"type", "log"}})["id"].get<std::string>();
  const std::string tid = idOf(server.createTarget(id, httpTargetBody("orders")));
  const std::string path = kWebhooks + "/" + id + "/targets/" + tid;

  auto deliveriesOf = [&](const httplib::Result& res) {
    REQUIRE(statusOf(res) == 200);
    const std::string eventId = jsonOf(res)["event_id"].get<std::string>();
    return countRows(server.eventsDbPath(id), "deliveries",
                     "event_id = '" + eventId + "' AND target_id = '" + tid + "'");
  };
  CHECK(deliveriesOf(anon.Post(hook, "{}", "application/json")) == 1);

  auto off = patchJson(admin, path, {{"active", false}});
  REQUIRE(statusOf(off) == 200);
  CHECK(jsonOf(off)["active"] == false);
  CHECK(server.dispatcher().targetChanges().back() == TargetChange{id, tid});
  auto whileOff = anon.Post(hook, "{}", "application/json");
  CHECK(jsonOf(whileOff)["deliveries"] == 1);  // the log target only
  CHECK(deliveriesOf(whileOff) == 0);
  CHECK(countRows(server.eventsDbPath(id), "deliveries",
                  "event_id = '" + jsonOf(whileOff)["event_id"].get<std::string>() +
                      "' AND target_id = '" + keptId + "'") == 1);

  auto on = patchJson(admin, path, {{"active", true}});
  REQUIRE(statusOf(on) == 200);
  CHECK(jsonOf(on)["active"] == true);
  CHECK(deliveriesOf(anon.Post(hook, "{}", "application/json")) == 1);
}

// --- Bad input changes nothing ---------------------------------------------

struct BadCase {
  std::string method;
  std::string path;
  std::string body;
  int status;
  std::string code;
};

TEST_CASE("bad input is refused with the right 4xx and changes nothing") {
  TestServer server;
  auto admin = server.client();
  const json a = server.createWebhook("shop");
  const std::string aId = a["id"].get<std::string>();
  const std::string epId = a["entrypoints"][0]["id"].get<std::string>();
  const std::string bId = server.createWebhook("billing")["id"].get<std::string>();
  const std::string tId = idOf(server.createTarget(aId, httpTargetBody("orders")));
  const std::string random = webhooker::newUuid();

  const std::string W = kWebhooks;
  const std::string A = W + "/" + aId;
  const std::string B = W + "/" + bId;
  const std::string T = A + "/targets/" + tId;
  auto target = [](json fields) {
    json body = {{"name", "t"}, {"type", "log"}};
    body.update(fields);
    return body.dump();
  };
  auto http = [](json config) {
    return json{{"name", "t"}, {"type", "http"}, {"config", config}}.dump();
  };
  auto retry = [](json r) {
    return json{{"name", "t"}, {"type", "log"}, {"retry", r}}.dump();
  };

  const std::vector<BadCase> cases = {
      // webhooks: create
      {"POST", W, R"({"name": )", 400, "invalid_json"},
      {"POST", W, "", 400, "invalid_json"},
      {"POST", W, "[]", 400, "expected_object"},
      {"POST", W, R"([{"name": "x"}])", 400, "expected_object"},
      {"POST", W, R"("shop")", 400, "expected_object"},
      {"POST", W, R"({"name": 5})", 400, "invalid_field"},
      {"POST", W, R"({"name": ""})", 400, "invalid_field"},
      {"POST", W, R"({"name": null})", 400, "invalid_field"},
      {"POST", W, R"({"name": "x", "retention_days": "30"})", 400, "invalid_field"},
      {"POST", W, R"({"name": "x", "retention_days": 0})", 400, "invalid_field"},
      {"POST", W, R"({"name": "x", "retention_days": 30.5})", 400, "invalid_field"},
      {"POST", W, R"({"name": "x", "description": 7})", 400, "invalid_field"},
      {"POST", W, R"({"name": "x", "colour": "red"})", 400, "unknown_field"},
      {"POST", W, R"({})", 400, "invalid_field"},
      {"POST", W, R"({"description": "no name"})", 400, "invalid_field"},
      // webhooks: patch
      {"PATCH", A, R"({"name": )", 400, "invalid_json"},
      {"PATCH", A, "[]", 400, "expected_object"},
      {"PATCH", A, R"({"name": 5})", 400, "invalid_field"},
      {"PATCH", A, R"({"retention_days": "30"})", 400, "invalid_field"},
      {"PATCH", A, R"({"description": "ok", "retention_days": -1})", 400, "invalid_field"},
      {"PATCH", A, R"({"colour": "red"})", 400, "unknown_field"},
      // entrypoints
      {"POST", A + "/entrypoints", R"({"active": "yes"})", 400, "invalid_field"},
      {"POST", A + "/entrypoints", R"({"bogus": true})", 400, "unknown_field"},
      {"POST", A + "/entrypoints", "[", 400, "invalid_json"},
      {"POST", A + "/entrypoints", R"({"verification": {"scheme": "hmac"}})", 400,
       "invalid_field"},
      {"POST", A + "/entrypoints", R"({"verification": {"scheme": "github"}})", 400,
       "invalid_field"},
      {"POST", A + "/entrypoints", R"({"active": false, "verification": "github"})", 400,
       "invalid_field"},
      {"PATCH", A + "/entrypoints/" + epId, R"({"active": "yes"})", 400, "invalid_field"},
      {"PATCH", A + "/entrypoints/" + epId, R"({"active": 1})", 400, "invalid_field"},
      {"PATCH", A + "/entrypoints/" + epId, R"({})", 400, "invalid_field"},
      {"PATCH", A + "/entrypoints/" + epId, "[]", 400, "expected_object"},
      {"PATCH", A + "/entrypoints/" + epId, R"({"active": false, "x": 1})", 400, "unknown_field"},
      // targets: create, top level
      {"POST", A + "/targets", R"({"type": )", 400, "invalid_json"},
      {"POST", A + "/targets", "[]", 400, "expected_object"},
      {"POST", A + "/targets", R"({"type": "log"})", 400, "invalid_field"},
      {"POST", A + "/targets", R"({"name": "t"})", 400, "invalid_field"},
      {"POST", A + "/targets", R"({"name": "t", "type": "smtp"})", 400, "invalid_field"},
      {"POST", A + "/targets", R"({"name": "t", "type": 5})", 400, "invalid_field"},
      {"POST", A + "/targets", target({{"name", 5}}), 400, "invalid_field"},
      {"POST", A + "/targets", target({{"active", "yes"}}), 400, "invalid_field"},
      {"POST", A + "/targets", target({{"max_concurrency", 0}}), 400, "invalid_field"},
      {"POST", A + "/targets", target({{"max_concurrency", 65}}), 400, "invalid_field"},
      {"POST", A + "/targets", target({{"max_concurrency", "4"}}), 400, "invalid_field"},
      {"POST", A + "/targets", target({{"colour", "red"}}), 400, "unknown_field"},
      // targets: config
      {"POST", A + "/targets", target({{"config", {{"x", 1}}}}), 400, "invalid_config"},
      {"POST", A + "/targets", target({{"config", "x"}}), 400, "invalid_config"},
      {"POST", A + "/targets", target({{"config", json::array()}}), 400, "invalid_config"},
      {"POST", A + "/targets", R"({"name": "t", "type": "http"})", 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"verb", "POST"}}), 400,
       "invalid_config"},
      {"POST", A + "/targets", http({{"url", "ftp://example.com/x"}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "javascript:alert(1)"}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "/relative/path"}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "example.com/hook"}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://user:pass@example.com/hook"}}), 400,
       "invalid_config"},
      {"POST", A + "/targets", http({{"url", ""}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", 42}}), 400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"method", "GET"}}), 400,
       "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"timeout_ms", 50}}), 400,
       "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"timeout_ms", "1000"}}),
       400, "invalid_config"},
      {"POST", A + "/targets",
       http({{"url", "https://example.com"}, {"headers", {{"Host", "evil.example"}}}}), 400,
       "invalid_config"},
      {"POST", A + "/targets",
       http({{"url", "https://example.com"}, {"headers", {{"X-A", "a\r\nInjected: 1"}}}}), 400,
       "invalid_config"},
      {"POST", A + "/targets",
       http({{"url", "https://example.com"}, {"headers", {{"Bad Name", "x"}}}}), 400,
       "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"headers", {{"X-A", 5}}}}),
       400, "invalid_config"},
      {"POST", A + "/targets", http({{"url", "https://example.com"}, {"signing_secret", "short"}}),
       400, "invalid_config"},
      {"POST", A + "/targets",
       json{{"name", "t"},
            {"type", "slack"},
            {"config", {{"webhook_url", "ftp://hooks.slack.com/x"}}}}
           .dump(),
       400, "invalid_config"},
      {"POST", A + "/targets",
       json{{"name", "t"},
            {"type", "slack"},
            {"config", {{"webhook_url", "https://u:p@hooks.slack.com/x"}}}}
           .dump(),
       400, "invalid_config"},
      // targets: retry
      {"POST", A + "/targets", retry({{"max_retries", 21}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"max_retries", -1}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"max_retries", "5"}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"base_delay_ms", 50}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"base_delay_ms", 3'600'001}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"max_delay_ms", 1000}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"max_delay_ms", 86'400'001}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"jitter", 1.5}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"jitter", -0.1}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"jitter", "0.2"}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry({{"backoff", "fast"}}), 400, "invalid_retry"},
      {"POST", A + "/targets", retry("fast"), 400, "invalid_retry"},
      // targets: patch
      {"PATCH", T, R"({"name": )", 400, "invalid_json"},
      {"PATCH", T, "[]", 400, "expected_object"},
      {"PATCH", T, R"({"name": 5})", 400, "invalid_field"},
      {"PATCH", T, R"({"active": "yes"})", 400, "invalid_field"},
      {"PATCH", T, R"({"max_concurrency": 0})", 400, "invalid_field"},
      {"PATCH", T, R"({"max_concurrency": 65})", 400, "invalid_field"},
      {"PATCH", T, R"({"colour": "red"})", 400, "unknown_field"},
      {"PATCH", T, R"({"config": {"url": "ftp://example.com/x"}})", 400, "invalid_config"},
      {"PATCH", T, R"({"config": {"url": null}})", 400, "invalid_config"},
      {"PATCH", T, R"({"config": {"nope": 1}})", 400, "invalid_config"},
      {"PATCH", T, R"({"name": "ok", "config": {"signing_secret": "short"}})", 400,
       "invalid_config"},
      {"PATCH", T, R"({"retry": {"jitter": 2}})", 400, "invalid_retry"},
      {"PATCH", T, R"({"name": "ok", "retry": {"max_retries": 99}})", 400, "invalid_retry"},
      {"PATCH", T, R"({"type": "log"})", 400, "immutable_field"},
      // unknown and malformed ids
      {"GET", W + "/" + random, "", 404, "not_found"},
      {"PATCH", W + "/" + random, R"({"name": "x"})", 404, "not_found"},
      {"DELETE", W + "/" + random, "", 404, "not_found"},
      {"GET", W + "/not-a-uuid", "", 404, "not_found"},
      {"PATCH", W + "/not-a-uuid", R"({"name": "x"})", 404, "not_found"},
      {"DELETE", W + "/not-a-uuid", "", 404, "not_found"},
      {"DELETE", W + "/" + aId + "x", "", 404, "not_found"},
      {"GET", W + "/" + random + "/entrypoints", "", 404, "not_found"},
      {"POST", W + "/" + random + "/entrypoints", "", 404, "not_found"},
      {"PATCH", A + "/entrypoints/" + random, R"({"active": false})", 404, "not_found"},
      {"DELETE", A + "/entrypoints/" + random, "", 404, "not_found"},
      {"PATCH", A + "/entrypoints/not-a-uuid", R"({"active": false})", 404, "not_found"},
      {"PATCH", B + "/entrypoints/" + epId, R"({"active": false})", 404, "not_found"},
      {"DELETE", B + "/entrypoints/" + epId, "", 404, "not_found"},
      {"GET", W + "/" + random + "/targets", "", 404, "not_found"},
      {"POST", W + "/" + random + "/targets", target(json::object()), 404, "not_found"},
      {"GET", A + "/targets/" + random, "", 404, "not_found"},
      {"PATCH", A + "/targets/" + random, R"({"name": "x"})", 404, "not_found"},
      {"DELETE", A + "/targets/" + random, "", 404, "not_found"},
      {"GET", A + "/targets/not-a-uuid", "", 404, "not_found"},
      {"PATCH", A + "/targets/not-a-uuid", R"({"name": "x"})", 404, "not_found"},
      {"DELETE", A + "/targets/not-a-uuid", "", 404, "not_found"},
      {"GET", B + "/targets/" + tId, "", 404, "not_found"},
      {"PATCH", B + "/targets/" + tId, R"({"name": "x"})", 404, "not_found"},
      {"DELETE", B + "/targets/" + tId, "", 404, "not_found"},
  };

  for (const BadCase& c : cases) {
    CAPTURE(c.method);
    CAPTURE(c.path);
    CAPTURE(c.body);
    const Unchanged unchanged(server);
    auto res = request(admin, c.method, c.path, c.body);
    CHECK(statusOf(res) == c.status);
    CHECK(errorCode(res) == c.code);
    unchanged.check();
  }
  // The target and the entrypoint of A survived the attempts on them.
  CHECK(statusOf(admin.Get(T)) == 200);
  auto anon = server.anonymousClient();
  CHECK(statusOf(anon.Post("/hooks/" + epId, "{}", "application/json")) == 200);
}

// --- Events DBs never hold target config ------------------------------------

TEST_CASE("no events DB holds a targets table or any target config") {
  TestServer server;
  auto admin = server.client();
  auto anon = server.anonymousClient();
  std::vector<std::string> webhookIds;
  std::vector<std::string> entrypoints;
  std::vector<std::string> targetIds;
  for (const char* name : {"shop", "billing"}) {
    const json w = server.createWebhook(name);
    webhookIds.push_back(w["id"].get<std::string>());
    entrypoints.push_back(w["entrypoints"][0]["id"].get<std::string>());
    targetIds.push_back(
        idOf(server.createTarget(webhookIds.back(), httpTargetBody("tgtname-canary-http"))));
    targetIds.push_back(
        idOf(server.createTarget(webhookIds.back(), slackTargetBody("tgtname-canary-slack"))));
  }
  for (const std::string& ep : entrypoints)
    for (int i = 0; i < 3; ++i)
      REQUIRE(statusOf(anon.Post("/hooks/" + ep, R"({"n": 1})", "application/json")) == 200);

  // A secret rotation and a deletion, then more events.
  const std::string rotated = "whsec_cm90YXRlZC1zaWduaW5nLXNlY3JldC1jYW5hcnktOTg3";
  REQUIRE(statusOf(patchJson(admin,
                             kWebhooks + "/" + webhookIds[0] + "/targets/" + targetIds[0],
                             {{"config", {{"signing_secret", rotated}}}})) == 200);
  REQUIRE(statusOf(admin.Delete(kWebhooks + "/" + webhookIds[1] + "/targets/" + targetIds[3])) ==
          204);
  for (const std::string& ep : entrypoints)
    REQUIRE(statusOf(anon.Post("/hooks/" + ep, R"({"n": 2})", "application/json")) == 200);

  const std::vector<std::string> needles = {
      kSigningSecret, rotated,       kAuthHeaderValue, "hdr-canary", kApiKeyValue, kQueryToken,
      kSlackPath,     "slackcanary9x", "receiver.example.com", "hooks.slack.com",
      "tgtname-canary"};
  const auto files = eventsDbFiles(server.dataDir());
  REQUIRE(files.size() == 2);
  for (const std::string& file : files) {
    CAPTURE(file);
    const std::filesystem::path path = server.dataDir() / file;
    for (const std::string& table : webhooker::testing::tableNames(path))
      CHECK(table.find("target") == std::string::npos);
    // Events were stored and their deliveries name targets by id only.
    CHECK(countRows(path, "events") == 4);
    CHECK(countRows(path, "deliveries") >= 7);
    const std::string dump = dumpDatabase(path);
    for (const std::string& needle : needles) {
      CAPTURE(needle);
      CHECK(dump.find(needle) == std::string::npos);
    }
  }
  // The needles are in the main DB, so the search above could find them.
  const std::string mainDump = dumpDatabase(server.mainDbPath());
  for (const std::string& needle : needles) {
    CAPTURE(needle);
    CHECK(mainDump.find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("signing_secret \"generate\" makes a secret that is shown once") {
  TestServer server;
  auto admin = server.client();
  const std::string webhookId = server.createWebhook("gen")["id"];
  const std::string path = "/api/v1/webhooks/" + webhookId + "/targets";
  auto created = postJson(admin, path,
                          {{"name", "signed"},
                           {"type", "http"},
                           {"config", {{"url", "https://receiver.example/hook"},
                                       {"signing_secret", "generate"}}}});
  REQUIRE(statusOf(created) == 201);
  const json body = jsonOf(created);
  const std::string secret = body.value("generated_signing_secret", "");
  REQUIRE(secret.rfind("whsec_", 0) == 0);
  const auto key = webhooker::base64Decode(std::string_view(secret).substr(6));
  REQUIRE(key);
  CHECK(key->size() == 32);
  CHECK(body["config"]["signing_secret"] == "[redacted]");

  // Stored for signing, never shown again.
  auto shown = admin.Get((path + "/" + body["id"].get<std::string>()).c_str());
  REQUIRE(shown);
  CHECK(shown->body.find(secret) == std::string::npos);
  CHECK(jsonOf(shown).contains("generated_signing_secret") == false);
  CHECK(dumpDatabase(server.dataDir() / "webhooker.db").find(secret) != std::string::npos);
}
