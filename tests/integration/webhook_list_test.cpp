// The webhook list a page at a time (GET /api/v1/webhooks?limit=&cursor=,
// `webhooker webhooks list --limit --cursor`): a walk by cursor sees every
// webhook once, in one stable order, also when webhooks are made during it;
// bad parameters are 400 in the JSON error shape and change nothing. Over
// loopback HTTP against real SQLite files (TestServer, fake clock), and the
// CLI against the real daemon.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/fake_clock.h"
#include "tests/support/test_server.h"
#include "tests/support/text_pattern.h"

namespace {

using nlohmann::json;
using webhooker::testing::FakeClock;
using webhooker::testing::dumpDatabase;
using webhooker::testing::errorCode;
using webhooker::testing::eventsDbFiles;
using webhooker::testing::jsonOf;
using webhooker::testing::statusOf;
using webhooker::testing::TestServer;
using webhooker::testing::TestServerOptions;

const std::string kWebhooks = "/api/v1/webhooks";

struct Walk {
  std::vector<std::string> ids;  // in the order the pages gave them
  int pages = 0;
};

// One page; REQUIREs a 200 with the list's shape.
json listPage(httplib::Client& api, const std::string& query) {
  auto res = api.Get(kWebhooks + query);
  REQUIRE(statusOf(res) == 200);
  json page = jsonOf(res);
  REQUIRE(page["webhooks"].is_array());
  REQUIRE(page.contains("next_cursor"));
  REQUIRE((page["next_cursor"].is_null() || page["next_cursor"].is_string()));
  return page;
}

// Follows next_cursor from the first page; `between` runs after each page.
Walk walk(httplib::Client& api, int limit, const std::function<void(int page)>& between = {}) {
  Walk out;
  std::string cursor;
  do {
    const json page = listPage(
        api, "?limit=" + std::to_string(limit) + (cursor.empty() ? "" : "&cursor=" + cursor));
    CHECK(page["webhooks"].size() <= static_cast<size_t>(limit));
    for (const json& w : page["webhooks"]) out.ids.push_back(w["id"].get<std::string>());
    out.pages += 1;
    REQUIRE(out.pages < 100);
    cursor = page["next_cursor"].is_string() ? page["next_cursor"].get<std::string>() : "";
    if (between) between(out.pages);
  } while (!cursor.empty());
  return out;
}

struct Fixture {
  FakeClock clock;  // first: the server stamps with it
  TestServer server{TestServerOptions{.clock = &clock}};
  httplib::Client api = server.client();
  std::vector<std::string> made;  // ids, oldest first as created

  // `count` webhooks, three to each millisecond: pages must split ties by id.
  void make(int count) {
    for (int i = 0; i < count; ++i) {
      if (i % 3 == 0) clock.advance(std::chrono::milliseconds(1));
      made.push_back(
          server.createWebhook("tenant-" + std::to_string(made.size()))["id"].get<std::string>());
    }
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "a walk by cursor sees every webhook once, oldest first, in one order") {
  make(23);
  const Walk all = walk(api, 500);
  CHECK(all.pages == 1);
  REQUIRE(all.ids.size() == made.size());
  CHECK(std::set<std::string>(all.ids.begin(), all.ids.end()) ==
        std::set<std::string>(made.begin(), made.end()));

  // Oldest first: by created_at, ties by id.
  const json one = listPage(api, "?limit=500")["webhooks"];
  for (size_t i = 1; i < one.size(); ++i) {
    const auto key = [](const json& w) {
      return w["created_at"].get<std::string>() + " " + w["id"].get<std::string>();
    };
    CHECK(key(one[i - 1]) < key(one[i]));
  }

  const Walk paged = walk(api, 5);
  CHECK(paged.pages == 5);
  CHECK(paged.ids == all.ids);  // each once, same order as one big page
  CHECK(walk(api, 5).ids == paged.ids);  // and again: the order is stable

  // Without parameters: the first page of 50 (default), with the next cursor.
  make(40);
  const json first = listPage(api, "");
  CHECK(first["webhooks"].size() == 50);
  REQUIRE(first["next_cursor"].is_string());
  const json rest = listPage(api, "?cursor=" + first["next_cursor"].get<std::string>());
  CHECK(rest["webhooks"].size() == 13);
  CHECK(rest["next_cursor"].is_null());
  CHECK(listPage(api, "?limit=63")["next_cursor"].is_null());  // the last page says so
}

TEST_CASE_FIXTURE(Fixture, "a webhook made or deleted during a walk does not break it") {
  make(12);
  const Walk before = walk(api, 500);
  std::string createdMidWalk;
  const Walk during = walk(api, 4, [&](int page) {
    if (page != 1) return;
    // Made now, so newer than every webhook listed: it comes at the end.
    clock.advance(std::chrono::milliseconds(1));
    createdMidWalk = server.createWebhook("late-tenant")["id"].get<std::string>();
    // One on a page not yet given goes; the walk goes on from its cursor.
    REQUIRE(statusOf(api.Delete(kWebhooks + "/" + before.ids[9])) == 204);
    // So does the last one given, which the cursor names.
    REQUIRE(statusOf(api.Delete(kWebhooks + "/" + before.ids[3])) == 204);
  });
  std::vector<std::string> expected = before.ids;
  expected.erase(expected.begin() + 9);
  expected.push_back(createdMidWalk);
  CHECK(during.ids == expected);
}

TEST_CASE_FIXTURE(Fixture, "each listed webhook has its own entrypoints, as its GET shows them") {
  // Webhooks with none, one, two and three entrypoints, some made later
  // than their webhook (and out of id order in one millisecond), so a page
  // that handed one webhook's entrypoints to another, lost one of several,
  // or ordered them otherwise reads unlike the webhook's own GET.
  make(9);
  const auto addEntrypoint = [&](const std::string& webhookId) {
    auto res = api.Post(kWebhooks + "/" + webhookId + "/entrypoints", "{}", "application/json");
    REQUIRE(statusOf(res) == 201);
    return jsonOf(res)["id"].get<std::string>();
  };
  clock.advance(std::chrono::milliseconds(1));
  for (size_t i = 0; i < made.size(); ++i)
    for (size_t n = 0; n < i % 4; ++n) addEntrypoint(made[i]);
  // One webhook with none: its first entrypoint deleted.
  const json emptied = jsonOf(api.Get(kWebhooks + "/" + made[4]));
  for (const json& e : emptied["entrypoints"])
    REQUIRE(statusOf(api.Delete(kWebhooks + "/" + made[4] + "/entrypoints/" +
                                e["id"].get<std::string>())) == 204);

  std::map<std::string, std::string> own;  // id -> its GET, as text
  std::map<std::string, size_t> counts;
  for (const std::string& id : made) {
    const json w = jsonOf(api.Get(kWebhooks + "/" + id));
    own[id] = w.dump();
    counts[id] = w["entrypoints"].size();
  }
  CHECK(counts[made[3]] == 4);
  CHECK(counts[made[4]] == 0);
  for (int limit : {500, 4, 2, 1}) {
    CAPTURE(limit);
    std::string cursor;
    size_t listed = 0;
    do {
      const json page = listPage(api, "?limit=" + std::to_string(limit) +
                                          (cursor.empty() ? "" : "&cursor=" + cursor));
      for (const json& w : page["webhooks"]) {
        const std::string id = w["id"].get<std::string>();
        CAPTURE(id);
        CHECK(w.dump() == own.at(id));
        ++listed;
      }
      cursor = page["next_cursor"].is_string() ? page["next_cursor"].get<std::string>() : "";
    } while (!cursor.empty());
    CHECK(listed == made.size());
  }
}

TEST_CASE_FIXTURE(Fixture, "bad parameters are 400 with the error shape and change nothing") {
  make(7);
  const std::string dump = dumpDatabase(server.mainDbPath());
  // A cursor of another listing (a webhook's events) is not this one's.
  const std::string webhookId = made.front();
  const std::string eventsCursor = [&] {
    // Two events and a page of one give an events cursor.
    const std::string entrypoint =
        jsonOf(api.Get(kWebhooks + "/" + webhookId))["entrypoints"][0]["id"].get<std::string>();
    for (int i = 0; i < 2; ++i) {
      clock.advance(std::chrono::milliseconds(1));
      REQUIRE(statusOf(api.Post("/hooks/" + entrypoint, "{}", "application/json")) / 100 == 2);
    }
    const json page = jsonOf(api.Get(kWebhooks + "/" + webhookId + "/events?limit=1"));
    REQUIRE(page["next_cursor"].is_string());
    return page["next_cursor"].get<std::string>();
  }();
  const std::string mainAfterEvents = dumpDatabase(server.mainDbPath());
  CHECK(mainAfterEvents == dump);  // events go to the events DB, not here
  const auto files = eventsDbFiles(server.dataDir());  // the first event made one

  const std::string good = listPage(api, "?limit=2")["next_cursor"].get<std::string>();
  struct Bad {
    std::string query;
    std::string code;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"?limit=0", "invalid_field"},
           {"?limit=501", "invalid_field"},
           {"?limit=-3", "invalid_field"},
           {"?limit=ten", "invalid_field"},
           {"?limit=5x", "invalid_field"},
           {"?limit=", "invalid_field"},
           {"?limit=99999999999999999999", "invalid_field"},
           {"?cursor=not-a-cursor", "invalid_cursor"},
           {"?cursor=", "invalid_cursor"},
           {"?cursor=" + eventsCursor, "invalid_cursor"},
           {"?cursor=" + good.substr(0, good.size() - 4), "invalid_cursor"},
           {"?page=2", "unknown_parameter"},
           {"?name=tenant-1", "unknown_parameter"},
           {"?limit=2&limit=3", "invalid_parameter"},
       }) {
    CAPTURE(bad.query);
    auto res = api.Get(kWebhooks + bad.query);
    CHECK(statusOf(res) == 400);
    CHECK(errorCode(res) == bad.code);
  }
  CHECK(dumpDatabase(server.mainDbPath()) == mainAfterEvents);
  CHECK(eventsDbFiles(server.dataDir()) == files);
}

TEST_CASE("webhooker webhooks list walks every page with --cursor, against the real daemon") {
  using webhooker::testing::CommandResult;
  using webhooker::testing::DaemonApi;
  using webhooker::testing::DaemonProcess;
  using webhooker::testing::firstMatch;
  using webhooker::testing::runWebhooker;
  webhooker::testing::TempDir dir;
  DaemonProcess daemon(dir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  const DaemonApi api(daemon.url());
  std::set<std::string> made;
  for (int i = 0; i < 7; ++i) made.insert(api.createWebhook("shop-" + std::to_string(i))["id"].get<std::string>());
  const std::vector<std::string> env = {std::string("WEBHOOKER_TOKEN=") + DaemonApi::kAdminToken,
                                        "WEBHOOKER_URL=" + daemon.url()};
  const auto describe = [](const CommandResult& r) {
    return "exit " + std::to_string(r.exitCode) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
  };

  std::vector<std::string> seen;
  std::vector<std::string> args = {"webhooks", "list", "--limit", "3"};
  int pages = 0;
  for (;;) {
    const CommandResult page = runWebhooker(args, env);
    REQUIRE_MESSAGE(page.exitCode == 0, describe(page));
    ++pages;
    REQUIRE(pages < 10);
    std::string rows = page.out;
    for (auto id = firstMatch(rows, "[0-9a-f-]{36}"); id; id = firstMatch(rows, "[0-9a-f-]{36}")) {
      seen.push_back(*id);
      rows = rows.substr(rows.find(*id) + id->size());
    }
    const auto more = firstMatch(page.out, "more: --cursor [A-Za-z0-9_-]+");
    if (!more) break;
    args = {"webhooks", "list", "--limit", "3", "--cursor", more->substr(15)};
  }
  CHECK(pages == 3);
  CHECK(seen.size() == made.size());
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == made);

  // Bad flags: a clear error, no list.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"webhooks", "list", "--limit", "0"},
        std::vector<std::string>{"webhooks", "list", "--limit", "many"},
        std::vector<std::string>{"webhooks", "list", "--limit", "501"}}) {
    const CommandResult r = runWebhooker(bad, env);
    CHECK_MESSAGE(r.exitCode != 0, describe(r));
    CHECK_MESSAGE(r.err.find("--limit") != std::string::npos, describe(r));
    CHECK(r.out.empty());
  }
  const CommandResult badCursor =
      runWebhooker({"webhooks", "list", "--cursor", "bogus"}, env);
  CHECK_MESSAGE(badCursor.exitCode == 1, describe(badCursor));
  CHECK_MESSAGE(badCursor.err.find("invalid_cursor") != std::string::npos, describe(badCursor));
  CHECK(badCursor.out.empty());
}
