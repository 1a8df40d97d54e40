// A webhook's retention settings over the admin API and the CLI: max_events
// and mask_pointers are accepted on create and update, shown in every
// webhook view, and bad values are refused with 400 invalid_field without
// changing anything.
#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <vector>

#include "base/uuid.h"
#include "engine/retention_pruner.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;

const std::string kWebhooks = "/api/v1/webhooks";

json created(TestServer& server, const json& body) {
  auto c = server.client();
  auto res = postJson(c, kWebhooks, body);
  REQUIRE(res);
  REQUIRE_MESSAGE(res->status == 201, res->body);
  return json::parse(res->body);
}

json shown(TestServer& server, const std::string& id) {
  auto c = server.client();
  auto res = c.Get(kWebhooks + "/" + id);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exitCode) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

}  // namespace

TEST_CASE("max_events and mask_pointers have defaults and are shown everywhere") {
  TestServer server;
  const json plain = server.createWebhook("plain");
  CHECK(plain["max_events"] == 100000);
  CHECK(plain["mask_pointers"] == json::array());
  CHECK(plain["retention_days"] == 30);

  const json pointers = {"/user/email", "/card/number", "/items/0/sku", "/a~1b", "/m~0n", "", "/"};
  const json custom = created(server, {{"name", "shop"},
                                       {"retention_days", 7},
                                       {"max_events", 5000},
                                       {"mask_pointers", pointers}});
  const std::string id = custom["id"].get<std::string>();
  CHECK(custom["max_events"] == 5000);
  CHECK(custom["mask_pointers"] == pointers);
  CHECK(custom["retention_days"] == 7);
  CHECK(shown(server, id)["mask_pointers"] == pointers);
  CHECK(shown(server, id)["max_events"] == 5000);

  auto c = server.client();
  auto list = c.Get(kWebhooks);
  REQUIRE(list);
  bool found = false;
  const json all = json::parse(list->body);
  for (const json& w : all["webhooks"]) {
    if (w["id"] != id) continue;
    found = true;
    CHECK(w["mask_pointers"] == pointers);
    CHECK(w["max_events"] == 5000);
  }
  CHECK(found);

  // Stored where the sqlite3 CLI shows them.
  SQLite::Database db = openReadOnly(server.mainDbPath());
  SQLite::Statement q(db, "SELECT max_events, mask_pointers FROM webhooks WHERE id = ?");
  q.bind(1, id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getInt64() == 5000);
  CHECK(json::parse(q.getColumn(1).getString()) == pointers);
}

TEST_CASE("PATCH changes max_events and replaces mask_pointers; other PATCHes keep them") {
  TestServer server;
  const json webhook =
      created(server, {{"name", "shop"}, {"mask_pointers", {"/a"}}, {"max_events", 10}});
  const std::string id = webhook["id"].get<std::string>();
  auto c = server.client();

  auto renamed = patchJson(c, kWebhooks + "/" + id, {{"name", "renamed"}});
  REQUIRE(statusOf(renamed) == 200);
  CHECK(jsonOf(renamed)["mask_pointers"] == json{"/a"});
  CHECK(jsonOf(renamed)["max_events"] == 10);

  auto changed = patchJson(c, kWebhooks + "/" + id,
                           {{"mask_pointers", {"/b", "/c/0"}}, {"max_events", 10000000}});
  REQUIRE(statusOf(changed) == 200);
  CHECK(jsonOf(changed)["mask_pointers"] == json{"/b", "/c/0"});
  CHECK(jsonOf(changed)["max_events"] == 10000000);

  auto cleared =
      patchJson(c, kWebhooks + "/" + id, {{"mask_pointers", json::array()}, {"max_events", 1}});
  REQUIRE(statusOf(cleared) == 200);
  CHECK(jsonOf(cleared)["mask_pointers"] == json::array());
  CHECK(jsonOf(cleared)["max_events"] == 1);
  CHECK(shown(server, id)["mask_pointers"] == json::array());
}

TEST_CASE("bad mask_pointers and max_events are refused with 400 and change nothing") {
  TestServer server;
  const json webhook =
      created(server, {{"name", "shop"}, {"mask_pointers", {"/a"}}, {"max_events", 10}});
  const std::string id = webhook["id"].get<std::string>();
  json tooMany = json::array();
  for (int i = 0; i < 65; ++i) tooMany.push_back("/f" + std::to_string(i));
  const std::vector<json> bad = {
      {{"mask_pointers", "/a"}},
      {{"mask_pointers", {{"a", 1}}}},
      {{"mask_pointers", {1}}},
      {{"mask_pointers", {nullptr}}},
      {{"mask_pointers", {"user/email"}}},
      {{"mask_pointers", {"/ok", "#/a"}}},
      {{"mask_pointers", {"/~2"}}},
      {{"mask_pointers", {"/a~"}}},
      {{"mask_pointers", {"/~x/b"}}},
      {{"mask_pointers", tooMany}},
      {{"mask_pointers", {"/" + std::string(1100, 'x')}}},
      {{"mask_pointers", nullptr}},
      {{"max_events", 0}},
      {{"max_events", -5}},
      {{"max_events", 10000001}},
      {{"max_events", "100"}},
      {{"max_events", 1.5}},
      {{"max_events", nullptr}},
      {{"max_events", 18446744073709551615ULL}},
      // One good field does not carry a bad one.
      {{"max_events", 50}, {"mask_pointers", {"nope"}}},
      {{"mask_pointers", {"/fine"}}, {"max_events", 0}},
  };
  const std::string mainBefore = dumpDatabase(server.mainDbPath());
  const int64_t webhooksBefore = countRows(server.mainDbPath(), "webhooks");
  const auto filesBefore = eventsDbFiles(server.dataDir());
  for (const json& fields : bad) {
    CAPTURE(fields.dump());
    auto c = server.client();
    json createBody = fields;
    createBody["name"] = "refused";
    auto create = postJson(c, kWebhooks, createBody);
    CHECK(statusOf(create) == 400);
    CHECK(errorCode(create) == "invalid_field");
    auto patch = patchJson(c, kWebhooks + "/" + id, fields);
    CHECK(statusOf(patch) == 400);
    CHECK(errorCode(patch) == "invalid_field");
  }
  CHECK(dumpDatabase(server.mainDbPath()) == mainBefore);
  CHECK(countRows(server.mainDbPath(), "webhooks") == webhooksBefore);
  CHECK(eventsDbFiles(server.dataDir()) == filesBefore);

  // The message says what a pointer must look like.
  auto c = server.client();
  auto res = patchJson(c, kWebhooks + "/" + id, {{"mask_pointers", {"user/email"}}});
  REQUIRE(res);
  CHECK(jsonOf(res)["error"]["message"].get<std::string>().find("RFC 6901") != std::string::npos);

  // The edges of the ranges are fine.
  json sixtyFour = json::array();
  for (int i = 0; i < 64; ++i) sixtyFour.push_back("/f" + std::to_string(i));
  auto edge =
      patchJson(c, kWebhooks + "/" + id, {{"mask_pointers", sixtyFour}, {"max_events", 1}});
  CHECK(statusOf(edge) == 200);
}

TEST_CASE("changing mask_pointers applies the new list to events masked before") {
  TestServer server;
  const json webhook = created(server, {{"name", "shop"}, {"mask_pointers", {"/a"}}});
  const std::string id = webhook["id"].get<std::string>();
  const std::string entrypoint = webhook["entrypoints"][0]["id"].get<std::string>();
  // No target: the event has no delivery to wait for.
  auto sender = server.anonymousClient();
  auto posted = sender.Post("/hooks/" + entrypoint, R"({"a": "one", "b": "two"})",
                            "application/json");
  REQUIRE(statusOf(posted) == 200);
  const std::string eventId = jsonOf(posted)["event_id"].get<std::string>();

  RetentionPruner pruner(server.store(), server.eventsDbs());
  const auto body = [&] {
    SQLite::Database db = openReadOnly(server.eventsDbPath(id));
    SQLite::Statement q(db, "SELECT CAST(body AS TEXT) FROM events WHERE id = ?");
    q.bind(1, eventId);
    REQUIRE(q.executeStep());
    return q.getColumn(0).getString();
  };
  REQUIRE(pruner.runOnce().ok());
  CHECK(body() == R"({"a":"[masked]","b":"two"})");

  auto c = server.client();
  // The same list again changes nothing; a new one is applied on the next pass.
  REQUIRE(statusOf(patchJson(c, kWebhooks + "/" + id, {{"mask_pointers", {"/a"}}})) == 200);
  CHECK(pruner.runOnce()->examined == 0);
  REQUIRE(statusOf(patchJson(c, kWebhooks + "/" + id, {{"mask_pointers", {"/b"}}})) == 200);
  REQUIRE(pruner.runOnce().ok());
  CHECK(body() == R"({"a":"[masked]","b":"[masked]"})");
}

TEST_CASE("the CLI sets max_events and mask pointers") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + *daemon.adminToken(),
                                        "WEBHOOKER_URL=" + daemon.url()};
  const auto create = runWebhooker({"webhooks", "create", "--name", "shop", "--max-events", "250",
                                    "--mask", "/user/email", "--mask", "/card/number"},
                                   env);
  REQUIRE_MESSAGE(create.exitCode == 0, describe(create));
  const json webhook = json::parse(create.out);
  CHECK(webhook["max_events"] == 250);
  CHECK(webhook["mask_pointers"] == json{"/user/email", "/card/number"});
  const std::string id = webhook["id"].get<std::string>();

  const auto update = runWebhooker({"webhooks", "update", id, "--mask", "/items/0/sku"}, env);
  REQUIRE_MESSAGE(update.exitCode == 0, describe(update));
  CHECK(json::parse(update.out)["mask_pointers"] == json{"/items/0/sku"});
  CHECK(json::parse(update.out)["max_events"] == 250);

  const auto clear = runWebhooker({"webhooks", "update", id, "--no-masks"}, env);
  REQUIRE_MESSAGE(clear.exitCode == 0, describe(clear));
  CHECK(json::parse(clear.out)["mask_pointers"] == json::array());

  const auto bad = runWebhooker({"webhooks", "update", id, "--mask", "user/email"}, env);
  CHECK(bad.exitCode == 1);
  CHECK(bad.err.find("invalid_field") != std::string::npos);
  const auto zero = runWebhooker({"webhooks", "update", id, "--max-events", "0"}, env);
  CHECK(zero.exitCode == 1);
  CHECK(zero.err.find("max_events") != std::string::npos);
}

}  // namespace webhooker::testing
