// Webhook-scoped tokens and the audit log (docs/security.md, *Access
// model*), over loopback HTTP against real SQLite files.
//
// The walk takes every route the server has (enumerated from its router, so
// a new route fails it until the table below has a row for it) and calls it
// with no token, a wrong one, an expired one, a revoked one, a token of
// another webhook and a token of each scope. Every cell has its expected
// status; after every refusal the main DB, every events DB, the data
// folder's files and what the engine was handed are compared with before.
// The table is the specification, written apart from the server's own
// (routeAccess in server/router.cpp).
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/secret.h"
#include "base/time_format.h"
#include "base/uuid.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/history_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_pattern.h"

namespace {

using nlohmann::json;
using webhooker::formatTime;
using webhooker::newUuid;
using webhooker::testing::dumpDatabase;
using webhooker::testing::errorCode;
using webhooker::testing::eventsDbFiles;
using webhooker::testing::HistoryFixture;
using webhooker::testing::jsonOf;
using webhooker::testing::openReadOnly;
using webhooker::testing::postJson;
using webhooker::testing::request;
using webhooker::testing::statusOf;

const std::string kWebhooks = "/api/v1/webhooks";

// kOpen: no token at all (a portal link's exchange, which takes the link).
enum class Need { kOpen, kAdmin, kRead, kOperate, kManage };

struct Expect {
  Need need;
  json body = nullptr;  // sent with the request; "<event>" stands for an event id
  // A body with which operate suffices (a target's "active").
  json operateBody = nullptr;
};

// Every route under /api/ and who may call it. A scoped token reaches the
// routes of its own webhook within its scope; everything else is the
// admin's (docs/security.md).
const std::map<std::string, Expect>& expectations() {
  const json newTarget = HistoryFixture::targetBody("walked");
  static const std::map<std::string, Expect> table = {
      {"GET /api/v1/webhooks", {Need::kAdmin}},
      {"POST /api/v1/webhooks", {Need::kAdmin, {{"name", "created"}}}},
      {"GET /api/v1/webhooks/{id}", {Need::kRead}},
      {"PATCH /api/v1/webhooks/{id}", {Need::kAdmin, {{"name", "renamed"}}}},
      {"DELETE /api/v1/webhooks/{id}", {Need::kAdmin}},
      {"GET /api/v1/webhooks/{id}/entrypoints", {Need::kRead}},
      {"POST /api/v1/webhooks/{id}/entrypoints", {Need::kManage, json::object()}},
      {"PATCH /api/v1/webhooks/{id}/entrypoints/{id}", {Need::kManage, {{"active", false}}}},
      {"DELETE /api/v1/webhooks/{id}/entrypoints/{id}", {Need::kManage}},
      {"GET /api/v1/webhooks/{id}/targets", {Need::kRead}},
      {"POST /api/v1/webhooks/{id}/targets", {Need::kManage, newTarget}},
      {"GET /api/v1/webhooks/{id}/targets/{id}", {Need::kRead}},
      {"PATCH /api/v1/webhooks/{id}/targets/{id}",
       {Need::kManage, {{"name", "renamed"}}, {{"active", false}}}},
      {"DELETE /api/v1/webhooks/{id}/targets/{id}", {Need::kManage}},
      {"POST /api/v1/webhooks/{id}/targets/{id}/preview",
       {Need::kRead, {{"event_id", "<event>"}}}},
      // Pull: operate; the walked target is http, so the handler answers
      // not_pull_target (tests/integration/pull_test.cpp leases for real).
      {"POST /api/v1/webhooks/{id}/targets/{id}/lease", {Need::kOperate, json::object()}},
      {"POST /api/v1/webhooks/{id}/targets/{id}/ack", {Need::kOperate, json::object()}},
      {"POST /api/v1/webhooks/{id}/targets/{id}/nack", {Need::kOperate, json::object()}},
      {"POST /api/v1/webhooks/{id}/targets/{id}/extend", {Need::kOperate, json::object()}},
      {"GET /api/v1/webhooks/{id}/events", {Need::kRead}},
      {"GET /api/v1/webhooks/{id}/events/{id}", {Need::kRead}},
      {"POST /api/v1/webhooks/{id}/events/{id}/redeliver", {Need::kOperate, json::object()}},
      {"GET /api/v1/webhooks/{id}/deliveries", {Need::kRead}},
      {"POST /api/v1/webhooks/{id}/deliveries/{id}/retry", {Need::kOperate, json::object()}},
      {"POST /api/v1/webhooks/{id}/replay", {Need::kOperate, {{"status", "all"}}}},
      {"GET /api/v1/webhooks/{id}/stats", {Need::kRead}},
      {"GET /api/v1/webhooks/{id}/audit", {Need::kRead}},
      {"POST /api/v1/webhooks/{id}/tokens",
       {Need::kAdmin, {{"name", "minted"}, {"scopes", {"manage"}}}}},
      {"GET /api/v1/webhooks/{id}/tokens", {Need::kAdmin}},
      {"DELETE /api/v1/webhooks/{id}/tokens/{id}", {Need::kAdmin}},
      {"GET /api/v1/audit", {Need::kAdmin}},
      {"POST /api/v1/webhooks/{id}/portal-links", {Need::kManage, {{"scopes", {"read"}}}}},
      {"POST /api/v1/portal/session", {Need::kOpen, {{"link", "whp_unknown"}}}},
      {"DELETE /api/v1/portal/session", {Need::kOpen}},
      {"GET /api/v1/settings/operational-webhook", {Need::kAdmin}},
      {"PUT /api/v1/settings/operational-webhook",
       {Need::kAdmin, {{"url", "https://ops.example.com/in"}}}},
      {"DELETE /api/v1/settings/operational-webhook", {Need::kAdmin}},
      {"GET /api/v1/placement", {Need::kAdmin}},
      {"GET /api/v1/summary", {Need::kAdmin}},
      {"GET /api/v1/openapi.json", {Need::kAdmin}},
      {"GET /api/v1/webhooks/{id}/move/events", {Need::kAdmin}},
      {"PUT /api/v1/webhooks/{id}/move/events", {Need::kAdmin, {{"events", json::array()}}}},
      {"POST /api/v1/webhooks/{id}/move/out", {Need::kAdmin, {{"to", "node-b"}}}},
      {"POST /api/v1/webhooks/{id}/move/back", {Need::kAdmin}},
      {"GET /api/v1/webhooks/{id}/move/config", {Need::kAdmin}},
      {"POST /api/v1/webhooks/{id}/move/finish", {Need::kAdmin}},
      {"POST /api/v1/webhooks/{id}/move/in", {Need::kAdmin}},
      {"DELETE /api/v1/webhooks/{id}/move/in", {Need::kAdmin}},
  };
  return table;
}

// Everything a request could change: every row of every database, the
// files of the data folder, what ingest and the admin API told the engine.
struct State {
  std::map<std::string, std::string> dumps;
  std::set<std::string> files;
  size_t batches = 0;
  size_t targetChanges = 0;
  bool operator==(const State&) const = default;
};

State stateOf(const HistoryFixture& f) {
  State s;
  s.dumps["webhooker.db"] = dumpDatabase(f.server.mainDbPath());
  for (const std::string& name : eventsDbFiles(f.server.dataDir()))
    s.dumps[name] = dumpDatabase(f.server.dataDir() / name);
  for (const auto& entry : std::filesystem::directory_iterator(f.server.dataDir()))
    s.files.insert(entry.path().filename().string());
  s.batches = f.server.dispatcher().batchCount();
  s.targetChanges = f.server.dispatcher().targetChanges().size();
  return s;
}

// One webhook's ids, to fill a route's pattern with.
struct Ids {
  std::string webhook, entrypoint, target, event, delivery, token;
};

// The pattern with each {id} replaced by the id of the kind its preceding
// segment names.
std::string pathFor(const std::string& pattern, const Ids& ids) {
  std::string out;
  std::string previous;
  size_t at = 1;
  while (at <= pattern.size()) {
    const size_t end = std::min(pattern.find('/', at), pattern.size());
    std::string segment = pattern.substr(at, end - at);
    if (segment == "{id}") {
      const std::map<std::string, std::string> byKind = {
          {"webhooks", ids.webhook}, {"entrypoints", ids.entrypoint}, {"targets", ids.target},
          {"events", ids.event},     {"deliveries", ids.delivery},    {"tokens", ids.token}};
      REQUIRE(byKind.count(previous) == 1);
      segment = byKind.at(previous);
    }
    out += "/" + segment;
    previous = pattern.substr(at, end - at);
    at = end + 1;
  }
  return out;
}

std::string bodyFor(const json& body, const Ids& ids) {
  if (body.is_null()) return "";
  std::string text = body.dump();
  const std::string marker = "\"<event>\"";
  if (const size_t at = text.find(marker); at != std::string::npos)
    text.replace(at, marker.size(), json(ids.event).dump());
  return text;
}

httplib::Result call(HistoryFixture& f, const std::string& method, const std::string& path,
                     const std::string& body, const std::optional<std::string>& token) {
  auto c = f.server.anonymousClient();
  httplib::Headers headers;
  if (token) headers.emplace("Authorization", "Bearer " + *token);
  return request(c, method, path, body, headers);
}

// A token made through the API: its answer, "token" and "id" included.
json mintTokenView(HistoryFixture& f, const std::string& webhookId, const std::string& scope,
                   const json& extra = json::object()) {
  auto c = f.server.client();
  json body = {{"name", scope + "-token"}, {"scopes", {scope}}};
  body.update(extra);
  auto res = postJson(c, kWebhooks + "/" + webhookId + "/tokens", body);
  REQUIRE(statusOf(res) == 201);
  return jsonOf(res);
}

std::string mintToken(HistoryFixture& f, const std::string& webhookId, const std::string& scope,
                      const json& extra = json::object()) {
  return mintTokenView(f, webhookId, scope, extra)["token"].get<std::string>();
}

bool allowed(Need need, Need scope) {
  return need != Need::kAdmin && need != Need::kOpen &&
         static_cast<int>(scope) >= static_cast<int>(need);
}

const char* scopeName(Need scope) {
  switch (scope) {
    case Need::kRead: return "read";
    case Need::kOperate: return "operate";
    case Need::kManage: return "manage";
    case Need::kAdmin:
    case Need::kOpen: break;
  }
  return "admin";
}

}  // namespace

TEST_CASE("every admin route refuses what its caller may not do, and changes nothing") {
  HistoryFixture f;
  auto admin = f.server.client();
  // Something for every route to act on: an event with a failed delivery.
  const std::string eventId = f.ingest(R"({"order": 1})");
  const std::string deliveryId = f.deliveryOf(eventId, f.ordersId);
  f.fail(deliveryId, 6);

  Ids own{f.webhookId, f.entrypointId, f.ordersId, eventId, deliveryId, ""};
  auto otherEntrypoints = admin.Get(kWebhooks + "/" + f.otherWebhookId + "/entrypoints");
  REQUIRE(statusOf(otherEntrypoints) == 200);
  Ids other{f.otherWebhookId, jsonOf(otherEntrypoints)["entrypoints"][0]["id"], f.otherTargetId,
            newUuid(), newUuid(), ""};

  std::map<Need, std::string> scoped;
  for (Need scope : {Need::kRead, Need::kOperate, Need::kManage})
    scoped[scope] = mintToken(f, f.webhookId, scopeName(scope));
  const std::string otherWebhook = mintToken(f, f.otherWebhookId, "manage");
  const std::string expired = mintToken(
      f, f.webhookId, "manage", {{"expires_at", formatTime(f.clock.now() + std::chrono::minutes(1))}});
  const json revokedView = mintTokenView(f, f.webhookId, "manage");
  const std::string revoked = revokedView["token"];
  own.token = other.token = revokedView["id"];
  REQUIRE(statusOf(admin.Delete(kWebhooks + "/" + f.webhookId + "/tokens/" + own.token)) == 200);
  f.clock.advance(std::chrono::minutes(2));  // past the expired token's end
  // Each works before the walk: what refuses them below is what they are.
  for (const auto& [scope, token] : scoped)
    REQUIRE(statusOf(call(f, "GET", kWebhooks + "/" + f.webhookId, "", token)) == 200);

  const std::vector<std::pair<std::string, std::optional<std::string>>> unauthenticated = {
      {"no token", std::nullopt},
      {"wrong token", "wht_" + std::string(64, '0')},
      {"wrong admin token", "whk_" + std::string(64, '0')},
      {"expired token", expired},
      {"revoked token", revoked},
  };

  int walked = 0;
  for (const auto& route : f.server.http().routes()) {
    if (route.pattern.rfind("/api/", 0) != 0) continue;
    const std::string key = route.method + " " + route.pattern;
    CAPTURE(key);
    const auto row = expectations().find(key);
    if (row == expectations().end()) {
      FAIL_CHECK("no expectation for this route: add a row to expectations()");
      continue;
    }
    ++walked;
    const Expect& expect = row->second;
    if (expect.need == Need::kOpen) {  // answered without a token, never "unauthorized"
      const State before = stateOf(f);
      auto res = call(f, route.method, route.pattern, bodyFor(expect.body, own), std::nullopt);
      CHECK(statusOf(res) < 500);
      CHECK(errorCode(res) != "unauthorized");
      CHECK(stateOf(f) == before);
      continue;
    }
    const std::string ownPath = pathFor(route.pattern, own);
    const std::string ownBody = bodyFor(expect.body, own);

    const auto refused = [&](const std::string& cell, const std::string& path,
                             const std::string& body, const std::optional<std::string>& token,
                             int status, const std::string& code) {
      CAPTURE(cell);
      const State before = stateOf(f);
      auto res = call(f, route.method, path, body, token);
      CHECK(statusOf(res) == status);
      CHECK(errorCode(res) == code);
      CHECK(stateOf(f) == before);
    };

    for (const auto& [cell, token] : unauthenticated)
      refused(cell, ownPath, ownBody, token, 401, "unauthorized");

    // Another webhook's token: a path naming a webhook not its own is 404,
    // as if it did not exist; any other route 403.
    const bool namesWebhook = route.pattern.rfind(kWebhooks + "/{id}", 0) == 0;
    refused("other webhook's token", pathFor(route.pattern, namesWebhook ? own : other),
            ownBody, otherWebhook, namesWebhook ? 404 : 403,
            namesWebhook ? "not_found" : "forbidden");
    if (namesWebhook)  // and its own token on the other webhook's ids
      refused("own token, other webhook's ids", pathFor(route.pattern, other),
              bodyFor(expect.body, other), scoped[Need::kManage], 404, "not_found");

    for (Need scope : {Need::kRead, Need::kOperate, Need::kManage}) {
      const std::string cell = std::string("scope ") + scopeName(scope);
      std::vector<std::pair<json, bool>> bodies = {{expect.body, allowed(expect.need, scope)}};
      if (!expect.operateBody.is_null())
        bodies.emplace_back(expect.operateBody, allowed(Need::kOperate, scope));
      for (const auto& [body, ok] : bodies) {
        if (!ok) {
          refused(cell, ownPath, bodyFor(body, own), scoped[scope], 403, "forbidden");
          continue;
        }
        // Allowed: the handler answers (its own status). A delete gets a
        // fresh entrypoint or target, so the rest of the walk keeps its ids.
        Ids ids = own;
        if (route.method == "DELETE" && route.pattern.find("/entrypoints/") != std::string::npos) {
          auto made = postJson(admin, kWebhooks + "/" + f.webhookId + "/entrypoints", json::object());
          REQUIRE(statusOf(made) == 201);
          ids.entrypoint = jsonOf(made)["id"];
        }
        if (route.method == "DELETE" && route.pattern.find("/targets/") != std::string::npos)
          ids.target = f.server.createTarget(f.webhookId, HistoryFixture::targetBody("doomed"))["id"];
        CAPTURE(cell);
        auto res = call(f, route.method, pathFor(route.pattern, ids), bodyFor(body, ids),
                        scoped[scope]);
        CHECK(statusOf(res) != 401);
        CHECK(statusOf(res) != 403);
        CHECK(statusOf(res) < 500);
        CHECK(errorCode(res) != "not_found");
      }
    }
  }
  // Every row of the table is a route the server has.
  CHECK(walked == static_cast<int>(expectations().size()));
}

TEST_CASE("a scoped token is shown once, stored hashed, and revoked at once") {
  HistoryFixture f;
  auto admin = f.server.client();
  const std::string tokens = kWebhooks + "/" + f.webhookId + "/tokens";
  auto created = postJson(admin, tokens, {{"name", "customer portal"}, {"scopes", {"operate"}}});
  REQUIRE(statusOf(created) == 201);
  const json view = jsonOf(created);
  const std::string token = view["token"];
  CHECK(token.rfind("wht_", 0) == 0);
  CHECK(view["scopes"] == json({"read", "operate"}));
  CHECK(view["expires_at"].is_null());
  CHECK(view["revoked_at"].is_null());

  // Only its hash is kept; the list never shows it.
  const std::string dump = dumpDatabase(f.server.mainDbPath());
  CHECK(dump.find(token) == std::string::npos);
  CHECK(dump.find(webhooker::sha256Hex(token)) != std::string::npos);
  auto listed = admin.Get(tokens);
  REQUIRE(statusOf(listed) == 200);
  CHECK(listed->body.find(token) == std::string::npos);
  REQUIRE(jsonOf(listed)["tokens"].size() == 1);
  CHECK(jsonOf(listed)["tokens"][0]["id"] == view["id"]);
  CHECK_FALSE(jsonOf(listed)["tokens"][0].contains("token"));

  // It reads its webhook's targets, secrets redacted, like the admin does.
  auto target = call(f, "GET", kWebhooks + "/" + f.webhookId + "/targets/" + f.ordersId, "", token);
  REQUIRE(statusOf(target) == 200);
  CHECK(target->body.find(webhooker::testing::kFixtureSigningSecret) == std::string::npos);
  CHECK(target->body.find("history-canary") == std::string::npos);
  // It may disable a target (operate), not rename it (manage).
  const std::string targetPath = kWebhooks + "/" + f.webhookId + "/targets/" + f.ordersId;
  CHECK(statusOf(call(f, "PATCH", targetPath, R"({"active": false})", token)) == 200);
  CHECK(statusOf(call(f, "PATCH", targetPath, R"({"active": true, "name": "x"})", token)) == 403);

  // Revoked: refused from the next request on.
  auto revoked = admin.Delete(tokens + "/" + view["id"].get<std::string>());
  REQUIRE(statusOf(revoked) == 200);
  CHECK(jsonOf(revoked)["revoked_at"].is_string());
  CHECK(statusOf(call(f, "GET", kWebhooks + "/" + f.webhookId, "", token)) == 401);
  // Another webhook's token id is not found through this webhook.
  CHECK(statusOf(admin.Delete(kWebhooks + "/" + f.otherWebhookId + "/tokens/" +
                              view["id"].get<std::string>())) == 404);
}

TEST_CASE("bad token requests are refused and change nothing") {
  HistoryFixture f;
  auto admin = f.server.client();
  const std::string tokens = kWebhooks + "/" + f.webhookId + "/tokens";
  const std::string past = formatTime(f.clock.now() - std::chrono::seconds(1));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "{"},
      {"no name", R"({"scopes": ["read"]})"},
      {"no scopes", R"({"name": "a"})"},
      {"empty scopes", R"({"name": "a", "scopes": []})"},
      {"unknown scope", R"({"name": "a", "scopes": ["admin"]})"},
      {"scope not a string", R"({"name": "a", "scopes": [1]})"},
      {"unknown field", R"({"name": "a", "scopes": ["read"], "webhook_id": "x"})"},
      {"expiry in the past", json{{"name", "a"}, {"scopes", {"read"}}, {"expires_at", past}}.dump()},
      {"expiry not a time", R"({"name": "a", "scopes": ["read"], "expires_at": "soon"})"},
  };
  for (const auto& [label, body] : cases) {
    const std::string& what = label;  // clang cannot capture a structured binding
    CAPTURE(what);
    const State before = stateOf(f);
    auto res = request(admin, "POST", tokens, body);
    CHECK(statusOf(res) == 400);
    CHECK(stateOf(f) == before);
  }
  const State before = stateOf(f);
  CHECK(statusOf(postJson(admin, kWebhooks + "/" + newUuid() + "/tokens",
                          {{"name", "a"}, {"scopes", {"read"}}})) == 404);
  CHECK(statusOf(admin.Delete(tokens + "/" + newUuid())) == 404);
  CHECK(statusOf(admin.Get("/api/v1/audit?limit=0")) == 400);
  CHECK(statusOf(admin.Get("/api/v1/audit?limit=abc")) == 400);
  CHECK(statusOf(admin.Get("/api/v1/audit?color=red")) == 400);
  CHECK(stateOf(f) == before);
}

TEST_CASE("the audit log records who wrote what, never a secret value") {
  HistoryFixture f;
  auto admin = f.server.client();
  const std::string manage = mintToken(f, f.webhookId, "manage");
  const std::string read = mintToken(f, f.webhookId, "read");
  const std::string otherRead = mintToken(f, f.otherWebhookId, "read");
  const std::string webhook = kWebhooks + "/" + f.webhookId;

  // A secret rotated by the webhook's own token.
  const std::string rotated = "whsec_cm90YXRlZC1zZWNyZXQtY2FuYXJ5LTk4NzY1NDMyMTA=";
  auto patched = call(f, "PATCH", webhook + "/targets/" + f.ordersId,
                      json{{"config", {{"url", "https://receiver.example.com/orders"},
                                       {"signing_secret", rotated}}}}.dump(),
                      manage);
  REQUIRE(statusOf(patched) == 200);
  // A refused write is not recorded.
  CHECK(statusOf(call(f, "DELETE", webhook + "/targets/" + f.ordersId, "", read)) == 403);
  CHECK(statusOf(request(admin, "POST", webhook + "/targets", "{")) == 400);

  auto page = call(f, "GET", webhook + "/audit", "", read);
  REQUIRE(statusOf(page) == 200);
  const json entries = jsonOf(page)["entries"];
  // Newest first: the PATCH, the two tokens the admin made, then the
  // fixture's two targets and the webhook itself.
  REQUIRE(entries.size() == 6);
  const json& write = entries[0];
  CHECK(write["actor"] == "token");
  CHECK(write["method"] == "PATCH");
  CHECK(write["route"] == "/api/v1/webhooks/{id}/targets/{id}");
  CHECK(write["ids"] == json({f.webhookId, f.ordersId}));
  CHECK(write["webhook_id"] == f.webhookId);
  CHECK(write["status"] == 200);
  CHECK(write["fields"] == json({"config", "config.signing_secret", "config.url"}));
  auto listed = admin.Get(webhook + "/tokens");
  bool named = false;
  const json listedTokens = jsonOf(listed)["tokens"];
  for (const json& t : listedTokens) named = named || t["id"] == write["actor_id"];
  CHECK(named);
  CHECK(entries[1]["actor"] == "admin");
  CHECK(entries[1]["route"] == "/api/v1/webhooks/{id}/tokens");
  CHECK(entries[1]["fields"] == json({"name", "scopes"}));
  CHECK(entries[5]["route"] == "/api/v1/webhooks");
  CHECK(entries[5]["webhook_id"] == f.webhookId);  // a new webhook's, from its answer

  // No secret value in the log's rows: neither the new signing secret nor a token.
  {
    SQLite::Database db = openReadOnly(f.server.mainDbPath());
    SQLite::Statement q(db, "SELECT * FROM audit_log");
    std::string rows;
    while (q.executeStep())
      for (int i = 0; i < q.getColumnCount(); ++i) rows += q.getColumn(i).getString() + "|";
    CHECK(rows.find(rotated) == std::string::npos);
    CHECK(rows.find(manage) == std::string::npos);
    CHECK(rows.find("whsec_") == std::string::npos);
  }

  // The other webhook's token sees its own (empty) log and nothing of this one.
  auto others = call(f, "GET", kWebhooks + "/" + f.otherWebhookId + "/audit", "", otherRead);
  REQUIRE(statusOf(others) == 200);
  // The admin making the webhook, its target and the token.
  CHECK(jsonOf(others)["entries"].size() == 3);
  CHECK(statusOf(call(f, "GET", webhook + "/audit", "", otherRead)) == 404);

  // The admin's whole log, a page at a time.
  auto all = admin.Get("/api/v1/audit?limit=2");
  REQUIRE(statusOf(all) == 200);
  CHECK(jsonOf(all)["entries"].size() == 2);
  const int64_t before = jsonOf(all)["next_before"];
  auto rest = admin.Get("/api/v1/audit?limit=100&before=" + std::to_string(before));
  REQUIRE(statusOf(rest) == 200);
  CHECK(jsonOf(rest)["entries"].size() == 7);
  CHECK(jsonOf(rest)["next_before"].is_null());
}

TEST_CASE("audit rows go with their webhook's retention") {
  HistoryFixture f;
  auto admin = f.server.client();
  REQUIRE(statusOf(webhooker::testing::patchJson(admin, kWebhooks + "/" + f.otherWebhookId,
                                                 {{"retention_days", 7}})) == 200);
  mintToken(f, f.webhookId, "read");       // kept 30 days
  mintToken(f, f.otherWebhookId, "read");  // kept 7 days
  const auto count = [&](const std::string& webhookId) {
    return webhooker::testing::countRows(f.server.mainDbPath(), "audit_log",
                                         "webhook_id = '" + webhookId + "'");
  };
  // The fixture's writes (webhook, targets), the PATCH and the tokens.
  REQUIRE(count(f.webhookId) == 4);
  REQUIRE(count(f.otherWebhookId) == 4);

  f.clock.advance(std::chrono::hours(24 * 6));
  auto pruned = f.server.store().pruneAudit();
  REQUIRE(pruned);
  CHECK(pruned.value() == 0);
  f.clock.advance(std::chrono::hours(24 * 2));
  pruned = f.server.store().pruneAudit();
  REQUIRE(pruned);
  CHECK(pruned.value() == 4);
  CHECK(count(f.otherWebhookId) == 0);
  CHECK(count(f.webhookId) == 4);
  f.clock.advance(std::chrono::hours(24 * 23));
  CHECK(f.server.store().pruneAudit().value() == 4);
  CHECK(count(f.webhookId) == 0);
}

TEST_CASE("webhooker tokens create, list and revoke, against the real daemon") {
  using webhooker::testing::DaemonApi;
  using webhooker::testing::DaemonProcess;
  using webhooker::testing::firstMatch;
  using webhooker::testing::runWebhooker;
  webhooker::testing::TempDir dir;
  DaemonProcess daemon(dir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  const DaemonApi api(daemon.url());
  const std::string webhookId = api.createWebhook("shop")["id"];
  const std::vector<std::string> env = {std::string("WEBHOOKER_TOKEN=") + DaemonApi::kAdminToken,
                                        "WEBHOOKER_URL=" + daemon.url()};
  const auto describe = [](const webhooker::testing::CommandResult& r) {
    return "exit " + std::to_string(r.exitCode) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
  };

  // By name, as the other commands take it.
  const auto created = runWebhooker(
      {"tokens", "create", "shop", "--name", "customer", "--scope", "operate"}, env);
  REQUIRE_MESSAGE(created.exitCode == 0, describe(created));
  const auto token = firstMatch(created.out, "wht_[0-9a-f]+");
  REQUIRE(token);
  CHECK(created.out == *token + "\n");
  CHECK(created.err.find("shown only now") != std::string::npos);

  httplib::Client customer(daemon.url());
  customer.set_bearer_token_auth(*token);
  CHECK(statusOf(customer.Get(kWebhooks + "/" + webhookId)) == 200);
  CHECK(statusOf(customer.Get(kWebhooks)) == 403);

  const auto listed = runWebhooker({"tokens", "list", webhookId}, env);
  REQUIRE_MESSAGE(listed.exitCode == 0, describe(listed));
  CHECK(firstMatch(listed.out, "ID +NAME +SCOPE +EXPIRES_AT +REVOKED_AT\n"));
  const auto row = firstMatch(listed.out, "[0-9a-f-]{36} +customer +operate +- +-\n");
  REQUIRE_MESSAGE(row, listed.out);
  CHECK(listed.out.find(*token) == std::string::npos);
  const std::string tokenId = row->substr(0, 36);

  // Refused input changes nothing: still one token.
  const auto badScope = runWebhooker(
      {"tokens", "create", webhookId, "--name", "x", "--scope", "admin"}, env);
  CHECK(badScope.exitCode != 0);
  CHECK(badScope.out.empty());
  const auto badExpiry = runWebhooker({"tokens", "create", webhookId, "--name", "x", "--scope",
                                       "read", "--expires-at", "2001-01-01T00:00:00Z"},
                                      env);
  CHECK(badExpiry.exitCode == 1);
  CHECK(badExpiry.err.find("invalid_field") != std::string::npos);
  const auto asJson = runWebhooker({"tokens", "list", webhookId, "--json"}, env);
  REQUIRE_MESSAGE(asJson.exitCode == 0, describe(asJson));
  CHECK(nlohmann::json::parse(asJson.out)["tokens"].size() == 1);

  const auto revoked = runWebhooker({"tokens", "revoke", webhookId, tokenId}, env);
  REQUIRE_MESSAGE(revoked.exitCode == 0, describe(revoked));
  CHECK(revoked.out == "revoked " + tokenId + "\n");
  CHECK(statusOf(customer.Get(kWebhooks + "/" + webhookId)) == 401);
  const auto again = runWebhooker({"tokens", "list", webhookId}, env);
  CHECK(firstMatch(again.out, tokenId + " +customer +operate +- +20[0-9T:.-]+Z\n"));
}
