// GET /api/v1/summary over HTTP, against real SQLite files: the node's
// totals equal the sum of every webhook's stats, the backlog is the
// sampler's latest pass (and says when it was taken), a quiet webhook's
// events file is not opened, and bad requests change nothing.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/time_format.h"
#include "storage/events_db.h"
#include "tests/support/fake_clock.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kSummary = "/api/v1/summary";

json targetBody(const std::string& name) {
  return {{"name", name},
          {"type", "http"},
          {"config", {{"url", "https://receiver.example.com/" + name}}}};
}

// The -wal and -shm files of the data folder: what opening an events DB
// through the pool leaves behind.
std::set<std::string> walAndShmFiles(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("-wal") || name.ends_with("-shm")) out.insert(name);
  }
  return out;
}

// A node of `kWebhooks` webhooks: the first four with targets and events
// (some deliveries retrying, one target disabled, one breaker open), the
// rest quiet: created, never sent anything.
struct Node {
  static constexpr int kWebhooks = 7;
  static constexpr int kBusy = 4;

  Node() {
    for (int i = 0; i < kWebhooks; ++i) {
      const json w = server.createWebhook("w" + std::to_string(i));
      webhookIds.push_back(w["id"].get<std::string>());
      entrypoints.push_back(w["entrypoints"][0]["id"].get<std::string>());
    }
    for (int i = 0; i < kBusy; ++i) {
      targetIds.push_back(
          server.createTarget(webhookIds[i], targetBody("t" + std::to_string(i)))["id"].get<std::string>());
      // Events i+1 of webhook i, one second apart: webhook 0's first is the oldest.
      for (int e = 0; e <= i; ++e) ingest(i);
    }
    // Webhook 1 has a second target: each later event goes to both.
    secondTargetId = server.createTarget(webhookIds[1], targetBody("t1b"))["id"].get<std::string>();
    ingest(1);
    // Webhook 2's deliveries all retry later; webhook 3's target is disabled.
    auto db = EventsDb::open(server.eventsDbPath(webhookIds[2]), DbOptions{}, clock);
    REQUIRE(db);
    auto unfinished = db.value()->unfinishedDeliveries();
    REQUIRE(unfinished);
    REQUIRE(unfinished->size() == 3);
    for (const UnfinishedDelivery& d : unfinished.value()) {
      AttemptRecord retry;
      retry.deliveryId = d.id;
      retry.error = "connection refused";
      retry.newStatus = DeliveryStatus::kRetrying;
      retry.nextAttemptAt = clock.now() + 1h;
      REQUIRE(db.value()->recordAttempt(retry));
    }
    REQUIRE(server.store().setTargetDisabled(webhookIds[3], targetIds[3], DisabledReason::kGone));
    for (int i = 0; i < 5; ++i) server.breakers().recordFailure(targetIds[1]);
    REQUIRE(server.breakers().status(targetIds[1]).state == BreakerState::kOpen);
  }

  void ingest(int webhook) {
    auto res = server.anonymousClient().Post("/hooks/" + entrypoints[webhook], "{}",
                                             "application/json");
    REQUIRE(statusOf(res) == 200);
    clock.advance(1s);
  }

  json get(const std::string& path) {
    auto c = server.client();
    auto res = c.Get(path);
    REQUIRE(statusOf(res) == 200);
    return json::parse(res->body);
  }

  // What `webhooker status` used to add up: every webhook's stats.
  json summedStats() {
    json sum = {{"webhooks", 0}, {"targets", 0}, {"targets_disabled", 0}, {"breakers_open", 0},
                {"pending", 0},  {"retrying", 0}};
    for (const std::string& id : webhookIds) {
      const json stats = get("/api/v1/webhooks/" + id + "/stats");
      sum["webhooks"] = sum["webhooks"].get<int>() + 1;
      sum["pending"] = sum["pending"].get<int>() + stats["deliveries"]["pending"].get<int>();
      sum["retrying"] = sum["retrying"].get<int>() + stats["deliveries"]["retrying"].get<int>();
      for (const json& t : stats["targets"]) {
        sum["targets"] = sum["targets"].get<int>() + 1;
        if (t["state"] == "disabled") sum["targets_disabled"] = sum["targets_disabled"].get<int>() + 1;
        if (t["breaker"].is_object() && t["breaker"]["state"] == "open")
          sum["breakers_open"] = sum["breakers_open"].get<int>() + 1;
      }
    }
    return sum;
  }

  FakeClock clock;  // first: the server stamps with it
  TestServer server{TestServerOptions{.clock = &clock}};
  std::vector<std::string> webhookIds, entrypoints, targetIds;
  std::string secondTargetId;
};

}  // namespace

TEST_CASE("the node summary adds up what every webhook's stats say, opening no events file") {
  Node node;
  // Before the sampler's first pass there is nothing to answer from.
  {
    auto c = node.server.client();
    auto res = c.Get(kSummary);
    CHECK(statusOf(res) == 503);
    CHECK(errorCode(res) == "unavailable");
  }
  // The quiet webhooks' files have never been opened for writing.
  const auto quietFiles = [&] {
    std::set<std::string> names;
    for (int i = Node::kBusy; i < Node::kWebhooks; ++i) {
      const std::string db = node.server.eventsDbPath(node.webhookIds[i]).filename().string();
      for (const char* suffix : {"-wal", "-shm"})
        if (walAndShmFiles(node.server.dataDir()).count(db + suffix)) names.insert(db + suffix);
    }
    return names;
  };
  REQUIRE(quietFiles().empty());

  REQUIRE(node.server.sampler().sampleOnce());
  const TimePoint sampledAt = node.clock.now();
  node.clock.advance(7s);
  const json summary = node.get(kSummary);
  CHECK(quietFiles().empty());  // neither the pass nor the summary opened them

  CHECK(summary["sampled_at"] == formatTime(sampledAt));
  CHECK(summary["sample_age_seconds"] == 7);
  CHECK(summary["webhooks"] == Node::kWebhooks);
  CHECK(summary["targets"] == 5);
  CHECK(summary["targets_disabled"] == 1);
  CHECK(summary["breakers_open"] == 1);
  // Webhook 0: 1 pending; 1: 3 + 1; 2: 3 retrying; 3: 4 pending (disabled target).
  CHECK(summary["pending"] == 9);
  CHECK(summary["retrying"] == 3);
  CHECK(summary["backlog"] == 12);
  // The oldest due delivery is webhook 0's first event, 11 s old at the pass
  // (webhook 2's retry later, webhook 3's target waits on purpose).
  CHECK(summary["oldest_pending"] == json{{"webhook_id", node.webhookIds[0]},
                                          {"webhook_name", "w0"},
                                          {"target_id", node.targetIds[0]},
                                          {"target_name", "t0"}});
  CHECK(summary["oldest_pending_age_seconds"] == 11);

  // The same figures as every webhook's stats (which do open each file).
  const json summed = node.summedStats();
  for (const char* key : {"webhooks", "targets", "targets_disabled", "breakers_open", "pending",
                          "retrying"})
    CHECK_MESSAGE(summary[key] == summed[key], key);
}

TEST_CASE("the node summary's backlog is the sampler's latest pass, and says when it was taken") {
  Node node;
  REQUIRE(node.server.sampler().sampleOnce());
  const json first = node.get(kSummary);
  REQUIRE(first["backlog"] == 12);

  // New events, a new webhook and a new target: the main DB's counts move
  // at once, the backlog at the next pass.
  node.ingest(0);
  node.server.createWebhook("late");
  node.server.createTarget(node.webhookIds[5], targetBody("t5"));
  const json between = node.get(kSummary);
  CHECK(between["webhooks"] == Node::kWebhooks + 1);
  CHECK(between["targets"] == 6);
  CHECK(between["backlog"] == 12);
  CHECK(between["sampled_at"] == first["sampled_at"]);
  CHECK(between["sample_age_seconds"] == 1);

  REQUIRE(node.server.sampler().sampleOnce());
  const json next = node.get(kSummary);
  CHECK(next["backlog"] == 13);
  CHECK(next["pending"] == 10);
  CHECK(next["sample_age_seconds"] == 0);
  CHECK(next["sampled_at"] != first["sampled_at"]);
}

TEST_CASE("the node summary refuses bad requests with the JSON error shape, changing nothing") {
  Node node;
  REQUIRE(node.server.sampler().sampleOnce());
  const auto before = dumpDatabase(node.server.mainDbPath());
  const auto filesBefore = eventsDbFiles(node.server.dataDir());
  const auto walsBefore = walAndShmFiles(node.server.dataDir());

  auto admin = node.server.client();
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    auto res = request(admin, method, kSummary, "{}");
    CHECK_MESSAGE(statusOf(res) == 405, method);
    CHECK_MESSAGE(errorCode(res) == "method_not_allowed", method);
  }
  auto res = request(admin, "GET", kSummary + "?webhook=w0");
  CHECK(statusOf(res) == 400);
  CHECK(errorCode(res) == "unknown_parameter");

  auto anonymous = node.server.anonymousClient();
  res = anonymous.Get(kSummary);
  CHECK(statusOf(res) == 401);
  CHECK(errorCode(res) == "unauthorized");
  res = request(anonymous, "GET", kSummary, "", {{"Authorization", "Bearer whk_not-the-token-0123456789"}});
  CHECK(statusOf(res) == 401);
  CHECK(errorCode(res) == "unauthorized");
  CHECK(dumpDatabase(node.server.mainDbPath()) == before);
  // A webhook's own token sees its webhook, never the node.
  auto minted = postJson(admin, "/api/v1/webhooks/" + node.webhookIds[0] + "/tokens",
                         {{"name", "reader"}, {"scopes", {"read"}}});
  REQUIRE(statusOf(minted) == 201);
  const std::string scoped = json::parse(minted->body)["token"];
  const auto afterMint = dumpDatabase(node.server.mainDbPath());
  res = request(anonymous, "GET", kSummary, "", {{"Authorization", "Bearer " + scoped}});
  CHECK(statusOf(res) == 403);
  CHECK(errorCode(res) == "forbidden");

  CHECK(dumpDatabase(node.server.mainDbPath()) == afterMint);
  CHECK(afterMint != before);  // the mint itself did write: the dump sees writes
  CHECK(eventsDbFiles(node.server.dataDir()) == filesBefore);
  CHECK(walAndShmFiles(node.server.dataDir()) == walsBefore);
}

}  // namespace webhooker::testing
