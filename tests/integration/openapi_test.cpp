// The admin API's OpenAPI document (docs/openapi.json): served at
// /api/v1/openapi.json behind the token, the same bytes as the file, and
// describing exactly the routes the server registers — a new route without
// its entry fails here. Its schemas are checked against the API's answers by
// tests/browser/openapi.test.mjs.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/console.h"
#include "tests/support/test_server.h"

namespace {

using nlohmann::json;
using webhooker::testing::jsonOf;
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
