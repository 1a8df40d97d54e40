// The admin API's OpenAPI document (docs/openapi.json): served at
// /api/v1/openapi.json behind the token, the same bytes as the file, and
// describing exactly the routes the server registers — a new route without
// its entry fails here. Its schemas are checked against the API's answers by
// tests/browser/openapi.test.mjs.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/console.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace {

using nlohmann::json;
using webhooker::testing::DaemonApi;
using webhooker::testing::DaemonOptions;
using webhooker::testing::DaemonProcess;
using webhooker::testing::jsonOf;
using webhooker::testing::postJson;
using webhooker::testing::TempDir;
using webhooker::testing::statusOf;
using webhooker::testing::TestServer;

// "GET", "/api/v1/webhooks/{id}" → "get /api/v1/webhooks/{}": the router
// names every parameter {id}, the document names each for what it is.
std::string operationKey(std::string method, const std::string& pattern) {
  for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return method + " " + std::regex_replace(pattern, std::regex(R"(\{[^}]*\})"), "{}");
}

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += "\n  " + item;
  return out;
}

std::string sourceFile(const std::string& relative) {
  const char* root = std::getenv("WEBHOOKER_SOURCE_DIR");
  REQUIRE_MESSAGE(root, "WEBHOOKER_SOURCE_DIR is not set; run through meson test");
  std::ifstream in(std::string(root) + "/" + relative, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the OpenAPI document is served as kept in docs/, behind the admin token") {
  TestServer server;
  auto served = server.client().Get("/api/v1/openapi.json");
  REQUIRE(statusOf(served) == 200);
  CHECK(served->get_header_value("Content-Type") == "application/json");
  CHECK(served->body == sourceFile("docs/openapi.json"));
  CHECK(jsonOf(served)["openapi"] == "3.1.0");
  CHECK(statusOf(server.anonymousClient().Get("/api/v1/openapi.json")) == 401);
}

TEST_CASE("the OpenAPI document describes every route of the server, and no other") {
  TestServer server;
  std::set<std::string> consoleFiles;  // static files, not API
  for (const webhooker::EmbeddedFile& file : webhooker::server::consoleFiles())
    consoleFiles.insert(file.path == "index.html" ? "/" : "/" + std::string(file.path));

  std::set<std::string> routes;
  for (const auto& route : server.http().routes())
    if (!(route.method == "GET" && consoleFiles.contains(route.pattern)))
      routes.insert(operationKey(route.method, route.pattern));
  REQUIRE(routes.size() > 30);

  const json document = json::parse(sourceFile("docs/openapi.json"));
  std::set<std::string> documented;
  for (const auto& [path, item] : document.at("paths").items())
    for (const auto& [method, operation] : item.items())
      if (method != "parameters") documented.insert(operationKey(method, path));

  std::set<std::string> undocumented, stale;
  for (const std::string& r : routes)
    if (!documented.contains(r)) undocumented.insert(r);
  for (const std::string& d : documented)
    if (!routes.contains(d)) stale.insert(d);
  CHECK_MESSAGE(undocumented.empty(),
                (std::string("routes missing from docs/openapi.json:") + join(undocumented)));
  CHECK_MESSAGE(stale.empty(),
                (std::string("docs/openapi.json describes routes the server lacks:") + join(stale)));
}

// The operations the other API suites do not reach answer here once with
// success, through recording clients, so that tests/browser/openapi.test.mjs
// checks their answers against the document too (it fails for an operation
// no suite answered with a 2xx): the health checks, /metrics, the placement,
// the operational webhook and the node side of a move, between two real
// daemons (nodes a and b).
TEST_CASE("the health, placement, operational webhook and move routes answer as documented") {
  TempDir dir;
  auto node = [&](const std::string& name) {
    std::filesystem::create_directory(dir / name);
    return DaemonOptions{.args = {"--node-id", name},
                         .env = {DaemonApi::adminTokenEnv()}};
  };
  DaemonProcess a(dir / "a", node("a"));
  DaemonProcess b(dir / "b", node("b"));
  const DaemonApi apiA(a.url()), apiB(b.url());
  auto adminA = apiA.admin(), adminB = apiB.admin();
  auto senderA = apiA.sender();

  CHECK(statusOf(senderA.Get("/healthz")) == 200);
  CHECK(statusOf(senderA.Get("/readyz")) == 200);
  auto metrics = senderA.Get("/metrics");
  REQUIRE(statusOf(metrics) == 200);
  CHECK(metrics->body.find("webhooker_") != std::string::npos);

  // The operational webhook: set, shown, changed, removed.
  const std::string ops = "/api/v1/settings/operational-webhook";
  const json setting = {{"url", "https://ops.example.com/events"}, {"signing_secret", "generate"}};
  CHECK(statusOf(adminA.Get(ops)) == 404);
  auto put = adminA.Put(ops, setting.dump(), "application/json");
  REQUIRE(statusOf(put) == 200);
  CHECK(jsonOf(put)["url"] == "https://ops.example.com/events");
  CHECK(statusOf(adminA.Get(ops)) == 200);
  CHECK(statusOf(adminA.Put(ops, R"({"event_types": ["target.disabled"]})",
                            "application/json")) == 200);
  CHECK(statusOf(adminA.Delete(ops)) == 204);

  // A move of "shop" from a to b, step by step as `webhooker cluster move` calls them.
  const json shop = apiA.createWebhook("shop");
  const std::string path = "/api/v1/webhooks/" + shop["id"].get<std::string>();
  REQUIRE(statusOf(senderA.Post(DaemonApi::hookPath(shop), "{}", "application/json")) == 200);
  auto placement = adminA.Get("/api/v1/placement");
  REQUIRE(statusOf(placement) == 200);
  CHECK(jsonOf(placement)["webhooks"].dump().find(shop["id"].get<std::string>()) !=
        std::string::npos);
  REQUIRE(statusOf(adminA.Post(path + "/move/out", R"({"to": "b"})", "application/json")) == 200);
  auto piece = adminA.Get(path + "/move/events?after_event=0");
  REQUIRE(statusOf(piece) == 200);
  CHECK(piece->get_header_value("X-Transfer-More") == "false");
  REQUIRE(statusOf(adminB.Put(path + "/move/events", piece->body, "application/vnd.sqlite3")) ==
          200);
  auto config = adminA.Get(path + "/move/config");
  REQUIRE(statusOf(config) == 200);
  REQUIRE(statusOf(adminB.Post(path + "/move/in", config->body, "application/json")) == 200);
  REQUIRE(statusOf(adminA.Post(path + "/move/finish", "", "application/json")) == 204);
  CHECK(statusOf(adminA.Get(path)) == 404);
  CHECK(jsonOf(adminB.Get(path + "/events"))["events"].size() == 1);

  // A move given up: b drops its copy, a takes the webhook back.
  const json billing = apiA.createWebhook("billing");
  const std::string back = "/api/v1/webhooks/" + billing["id"].get<std::string>();
  REQUIRE(statusOf(adminA.Post(back + "/move/out", R"({"to": "b"})", "application/json")) == 200);
  auto copy = adminA.Get(back + "/move/events?after_event=0");
  REQUIRE(statusOf(copy) == 200);
  REQUIRE(statusOf(adminB.Put(back + "/move/events", copy->body, "application/vnd.sqlite3")) ==
          200);
  CHECK(statusOf(adminB.Delete(back + "/move/in")) == 204);
  REQUIRE(statusOf(adminA.Post(back + "/move/back", "", "application/json")) == 200);
  CHECK(statusOf(senderA.Post(DaemonApi::hookPath(billing), "{}", "application/json")) == 200);
}

// GET /hooks/{entrypoint} answers only a provider's handshake
// (docs/providers.md): once as text (Dropbox) and once as JSON (X).
TEST_CASE("an entrypoint's handshake answers GET as documented") {
  TestServer server;
  auto admin = server.client();
  const std::string webhookId = server.createWebhook("handshakes")["id"];
  auto hook = server.anonymousClient();
  for (const char* kind : {"dropbox", "twitter"}) {
    CAPTURE(kind);
    auto created = postJson(admin, "/api/v1/webhooks/" + webhookId + "/entrypoints",
                            {{"verification", {{"scheme", kind}, {"secret", "app-secret"}}},
                             {"handshake", {{"kind", kind}}}});
    REQUIRE(statusOf(created) == 201);
    const std::string path = "/hooks/" + jsonOf(created)["id"].get<std::string>();
    const std::string query = std::string(kind) == "dropbox" ? "?challenge=c1" : "?crc_token=c1";
    CHECK(statusOf(hook.Get(path + query)) == 200);
  }
}
