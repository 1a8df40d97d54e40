// A cluster on loopback: three real nodes (`webhooker serve --node-id`),
// real HAProxy in front, configured as docs/scaling.md says, routes applied
// by `webhooker cluster sync` through HAProxy's admin socket. Webhooks are
// spread over the nodes, loaded through HAProxy, and every acknowledged
// event must be stored once, on the node that owns its webhook, and
// delivered to a loopback receiver. A node SIGKILLed under load takes only
// its own webhooks down (503 from HAProxy), and delivers everything once it
// is back. Webhooks move between nodes under load, and back to a node they
// left; a webhook that is moving refuses every change to it (409). Skips
// (exit 77) where haproxy is not installed.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/doc_commands.h"
#include "tests/support/haproxy_process.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

void skipWithoutHaproxy() {
  if (haproxyBin()) return;
  std::fprintf(stderr, "haproxy is not installed (scripts/install-deps installs it): skipped\n");
  std::exit(77);
}

// The nodes of one cluster: each its own data folder, the same admin token.
class Nodes {
 public:
  explicit Nodes(std::vector<std::string> names) : names_(std::move(names)) {
    for (const std::string& name : names_) {
      dirs_[name] = std::make_unique<TempDir>();
      start(name);
    }
  }

  // Starts (or restarts, on its old port) node `name`.
  void start(const std::string& name) {
    DaemonOptions options;
    options.args = {"--node-id", name, "--allow-networks", "127.0.0.1/32", "--sync-mode",
                    "normal", "--jq-workers", "1", "--http-threads", "2", "--workers", "4"};
    options.env = {DaemonApi::adminTokenEnv()};
    if (auto it = daemons_.find(name); it != daemons_.end()) options.port = it->second->port();
    daemons_[name].reset();
    daemons_[name] = std::make_unique<DaemonProcess>(dataDir(name), options);
  }

  DaemonProcess& daemon(const std::string& name) { return *daemons_.at(name); }
  DaemonApi api(const std::string& name) { return DaemonApi(daemon(name).url()); }
  fs::path dataDir(const std::string& name) const { return dirs_.at(name)->path(); }
  const std::vector<std::string>& names() const { return names_; }

  std::map<std::string, int> ports() {
    std::map<std::string, int> out;
    for (const std::string& name : names_) out[name] = daemon(name).port();
    return out;
  }
  std::string nodesArgument() {
    std::string out;
    for (const std::string& name : names_)
      out += (out.empty() ? "" : ",") + name + "=" + daemon(name).url();
    return out;
  }

  json placement(const std::string& name) {
    const auto res = api(name).admin().Get("/api/v1/placement");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return json::parse(res->body);
  }

  // The ids of the events stored for `webhookId` on node `name` (empty
  // when it has no such file).
  std::multiset<std::string> storedEvents(const std::string& name, const std::string& webhookId) {
    const fs::path file = dataDir(name) / ("events-" + webhookId + ".db");
    std::multiset<std::string> ids;
    if (!fs::exists(file)) return ids;
    SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
    SQLite::Statement q(db, "SELECT id FROM events");
    while (q.executeStep()) ids.insert(q.getColumn(0).getString());
    return ids;
  }

 private:
  std::vector<std::string> names_;
  std::map<std::string, std::unique_ptr<TempDir>> dirs_;
  std::map<std::string, std::unique_ptr<DaemonProcess>> daemons_;
};

std::vector<std::string> tokenEnv() {
  return {std::string("WEBHOOKER_TOKEN=") + DaemonApi::kAdminToken};
}

CommandResult cluster(std::vector<std::string> args) {
  args.insert(args.begin(), "cluster");
  return runWebhooker(args, tokenEnv());
}

struct Webhook {
  std::string id;
  std::string hookPath;
  std::string node;
};

// The arguments every cluster command that routes takes: the nodes and HAProxy.
std::vector<std::string> routingArgs(Nodes& nodes, const HaproxyProcess& haproxy) {
  return {"--nodes", nodes.nodesArgument(), "--haproxy-socket", haproxy.socket().string(), "--map",
          haproxy.map().string()};
}

// `args` followed by `more`.
std::vector<std::string> withArgs(std::vector<std::string> args,
                                  const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// An http target delivering to `receiver`.
json receiverTarget(const Receiver& receiver) {
  return {{"name", "receiver"},
          {"type", "http"},
          {"config", {{"url", "http://127.0.0.1:" + std::to_string(receiver.port()) + "/hook"}}}};
}

// Nodes `names` behind a real HAProxy, with a receiver for their targets;
// the test is skipped (exit 77) where haproxy is not installed.
struct LoopbackCluster {
  explicit LoopbackCluster(std::vector<std::string> names)
      : nodes((skipWithoutHaproxy(), std::move(names))),
        haproxy(nodes.ports()),
        routing(routingArgs(nodes, haproxy)) {}
  Receiver receiver;
  Nodes nodes;
  HaproxyProcess haproxy;
  const std::vector<std::string> routing;  // for the commands that route
};

struct Sent {
  std::string webhookId;
  std::string key;  // the body, which the receiver gets back
  int status = 0;
  std::string eventId;
  std::chrono::microseconds took{0};
};

// One event to each webhook in `order`, from `threads` senders through
// HAProxy; `onProgress(n)` runs on the first thread after its n-th event.
std::vector<Sent> load(const std::string& url, const std::vector<Webhook>& order,
                       const std::string& round, int threads,
                       const std::function<void(size_t)>& onProgress = {}) {
  std::vector<Sent> sent(order.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t)
    senders.emplace_back([&, t] {
      httplib::Client client(url);
      client.set_tcp_nodelay(true);
      client.set_connection_timeout(5s);
      client.set_read_timeout(10s);
      size_t mine = 0;
      for (size_t i = next++; i < order.size(); i = next++) {
        Sent& s = sent[i];
        s.webhookId = order[i].id;
        s.key = "{\"key\":\"" + round + "-" + std::to_string(i) + "\"}";
        const auto started = std::chrono::steady_clock::now();
        const auto res = client.Post(order[i].hookPath, s.key, "application/json");
        s.took = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - started);
        if (res) {
          s.status = res->status;
          if (res->status == 200) s.eventId = json::parse(res->body).at("event_id");
        }
        if (t == 0 && onProgress) onProgress(++mine);
      }
    });
  for (auto& s : senders) s.join();
  return sent;
}

double p99Ms(std::vector<std::chrono::microseconds> took) {
  if (took.empty()) return 0;
  std::sort(took.begin(), took.end());
  return static_cast<double>(took[(took.size() * 99) / 100 - (took.size() >= 100 ? 1 : 0)].count()) /
         1000.0;
}

TEST_CASE("cluster commands refuse bad input and change nothing; placement reports ownership") {
  skipWithoutHaproxy();
  Nodes nodes({"a", "b"});
  TempDir dir;
  const fs::path map = dir / "routes.map";
  const std::string urlA = nodes.daemon("a").url();
  const std::string urlB = nodes.daemon("b").url();

  // Placement: authenticated, the node's name, a version that moves with
  // ownership.
  CHECK(DaemonApi(urlA).sender().Get("/api/v1/placement")->status == 401);
  const json empty = nodes.placement("a");
  CHECK(empty["node_id"] == "a");
  CHECK(empty["webhooks"].empty());
  const json created = nodes.api("a").createWebhook("shop");
  const json one = nodes.placement("a");
  REQUIRE(one["webhooks"].size() == 1);
  CHECK(one["webhooks"][0]["id"] == created["id"]);
  CHECK(one["webhooks"][0]["entrypoints"][0] == created["entrypoints"][0]["id"]);
  CHECK(one["version"].get<int64_t>() > empty["version"].get<int64_t>());
  REQUIRE(nodes.api("a").admin().Delete("/api/v1/webhooks/" + created["id"].get<std::string>())->status == 204);
  const json none = nodes.placement("a");
  CHECK(none["webhooks"].empty());
  CHECK(none["version"].get<int64_t>() > one["version"].get<int64_t>());

  const auto refused = [&](std::vector<std::string> args, const std::string& why) {
    const CommandResult r = cluster(args);
    CHECK_MESSAGE(r.exitCode == 1, r.err);
    CHECK_MESSAGE(contains(r.err, why), r.err);
    CHECK(!fs::exists(map));
  };
  const std::string socket = (dir / "no-haproxy.sock").string();
  const std::vector<std::string> routing = {"--haproxy-socket", socket, "--map", map.string()};
  // A node that is another one, named twice, not a URL, not answering.
  refused(withArgs({"sync", "--nodes", "a=" + urlA + ",c=" + urlB}, routing),
          "is node b, not node c");
  refused(withArgs({"sync", "--nodes", "a=" + urlA + ",a=" + urlB}, routing), "named twice");
  refused(withArgs({"sync", "--nodes", "a=ftp://127.0.0.1:1"}, routing),
          "must be http://host:port");
  refused(withArgs({"sync", "--nodes", "a bad=" + urlA}, routing), "is not a node id");
  const int closedPort = freeLoopbackPort();
  refused(withArgs({"sync", "--nodes",
                    "a=" + urlA + ",b=http://127.0.0.1:" + std::to_string(closedPort)},
                   routing),
          "did not answer");
  // create-webhook on a node that is not in the list: nothing created.
  refused(withArgs({"create-webhook", "--name", "x", "--node", "z", "--nodes",
                    "a=" + urlA + ",b=" + urlB},
                   routing),
          "--node z is not one of --nodes");
  CHECK(nodes.placement("a")["webhooks"].empty());
  CHECK(nodes.placement("b")["webhooks"].empty());
  // No HAProxy at the socket: the map file is written for its next start,
  // and the command says the running one was not updated.
  const CommandResult noHaproxy = cluster(withArgs({"sync", "--nodes", "a=" + urlA}, routing));
  CHECK(noHaproxy.exitCode == 1);
  CHECK_MESSAGE(contains(noHaproxy.err, "admin socket"), noHaproxy.err);

  // Moves that make no sense: refused, nothing changed.
  const json kept = nodes.api("a").createWebhook("kept");
  const std::string keptId = kept["id"];
  const std::string both = "a=" + urlA + ",b=" + urlB;
  const json before = nodes.placement("a");
  const auto moveRefused = [&](std::vector<std::string> args, const std::string& why) {
    args.insert(args.begin(), "move");
    args.insert(args.end(), {"--nodes", both});
    const CommandResult r = cluster(withArgs(args, routing));
    CHECK_MESSAGE(r.exitCode != 0, r.out);
    CHECK_MESSAGE(contains(r.err, why), r.err);
  };
  moveRefused({keptId, "--to", "a"}, "is on node a already");
  moveRefused({keptId, "--to", "z"}, "--to z is not one of --nodes");
  moveRefused({"5f0c5a8e-0d6f-4c62-9d5e-000000000000", "--to", "b"}, "is on none of the nodes");
  moveRefused({"not-a-webhook", "--to", "b"}, "is not a webhook id");
  moveRefused({keptId, "--to", "a", "--rollback"}, "no move to roll back");
  // A rollback where no move is under way drops nothing but a stray copy.
  std::vector<std::string> rollback = {"move", keptId, "--to", "b", "--rollback", "--nodes", both};
  const CommandResult nothing = cluster(withArgs(rollback, routing));
  CHECK_MESSAGE(nothing.exitCode == 0, nothing.err);
  CHECK(contains(nothing.out, "no move of webhook " + keptId + " was under way"));
  CHECK(nodes.placement("a") == before);
  CHECK(nodes.placement("b")["webhooks"].empty());

  // A body that is no piece of an events DB: a JSON 400, no copy started.
  const std::string stranger = "5f0c5a8e-0d6f-4c62-9d5e-000000000001";
  const auto garbage = nodes.api("b").admin().Put("/api/v1/webhooks/" + stranger + "/move/events",
                                                  "not a database", "application/vnd.sqlite3");
  REQUIRE(garbage);
  CHECK(garbage->status == 400);
  CHECK(json::parse(garbage->body)["error"]["code"] == "invalid_transfer");
  CHECK(!fs::exists(nodes.dataDir("b") / ("incoming-" + stranger + ".db")));
  // Taking over a webhook whose events were never copied: refused.
  const auto noCopy = nodes.api("b").admin().Post("/api/v1/webhooks/" + stranger + "/move/in",
                                                  "{}", "application/json");
  REQUIRE(noCopy);
  CHECK(noCopy->status == 409);
  CHECK(nodes.placement("b")["webhooks"].empty());

  // A data folder keeps the node id it was first served with.
  nodes.daemon("b").stop();
  const CommandResult other = runCommand({webhookerBin(), "serve", "--port", "0", "--data-dir",
                                          nodes.dataDir("b").string(), "--node-id", "c"},
                                         {DaemonApi::adminTokenEnv()}, 10s);
  CHECK(other.exitCode == 2);
  CHECK_MESSAGE(contains(other.err, "belongs to node b, not c"), other.err);
}

TEST_CASE("docs/scaling.md's HAProxy configuration starts as given once its map is made as said") {
  skipWithoutHaproxy();
  const char* source = std::getenv("WEBHOOKER_SOURCE_DIR");
  REQUIRE(source);
  const fs::path doc = fs::path(source) / "docs" / "scaling.md";
  std::ifstream in(doc);
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  const size_t start = page.find("```\nglobal\n");
  REQUIRE_MESSAGE(start != std::string::npos, "no HAProxy configuration in " << doc);
  const size_t end = page.find("```", start + 4);
  REQUIRE(end != std::string::npos);
  std::string config = page.substr(start + 4, end - start - 4);

  // Only what this machine cannot have changes: paths into the test's
  // folder, loopback for the nodes, plain HTTP (no certificate here); the
  // elided backend ("...") goes.
  TempDir dir;
  const std::map<std::string, std::string> local = {
      {"/etc/haproxy/webhooker.map", (dir / "webhooker.map").string()},
      {"/run/haproxy/admin.sock", (dir / "admin.sock").string()},
      {"bind :443 ssl crt /etc/haproxy/webhooker.pem",
       "bind 127.0.0.1:" + std::to_string(freeLoopbackPort())},
      {"10.0.0.1", "127.0.0.1"},
      {"backend node_b\n  ...\n", ""}};
  for (const auto& [from, to] : local) {
    const auto& rewritten = from;  // clang 14: a lambda cannot name a binding
    CAPTURE(rewritten);
    CHECK(contains(config, from));
    replaceAll(config, from, to);
  }
  const fs::path file = dir / "haproxy.cfg";
  std::ofstream(file) << config;
  const auto check = [&] { return runCommand({haproxyBin().value(), "-c", "-f", file.string()}); };

  const CommandResult without = check();  // what the doc warns about
  CHECK(without.exitCode != 0);
  CHECK(contains(without.out + without.err, "webhooker.map"));

  const auto steps = docCommands(doc, "sh", [](const std::string& line) { return !line.empty(); });
  REQUIRE(steps.size() == 1);
  std::string makeMap = steps[0].command;
  replaceAll(makeMap, "/etc/haproxy/webhooker.map", (dir / "webhooker.map").string());
  const CommandResult made = runCommand({"bash", "-c", makeMap});
  REQUIRE_MESSAGE(made.exitCode == 0, made.err);

  const CommandResult with = check();
  CHECK_MESSAGE(with.exitCode == 0, with.out << with.err);
}

TEST_CASE("create-webhook prints the entrypoint it routed; list-webhooks lists every node's") {
  skipWithoutHaproxy();
  Nodes nodes({"a", "b"});
  HaproxyProcess haproxy(nodes.ports());
  const std::vector<std::string> routing = routingArgs(nodes, haproxy);

  const CommandResult created =
      cluster(withArgs({"create-webhook", "--name", "shop", "--node", "b"}, routing));
  REQUIRE_MESSAGE(created.exitCode == 0, created.err);
  const json placed = nodes.placement("b");
  REQUIRE(placed["webhooks"].size() == 1);
  const std::string webhookId = placed["webhooks"][0]["id"];
  const std::string entrypointId = placed["webhooks"][0]["entrypoints"][0];
  CHECK(contains(created.out, "created webhook " + webhookId + " on node b"));
  CHECK(contains(created.out, "entrypoint " + entrypointId + ": POST /hooks/" + entrypointId));
  // Routed when printed: HAProxy takes an event for it.
  httplib::Client viaHaproxy(haproxy.url());
  const auto sent = viaHaproxy.Post("/hooks/" + entrypointId, R"({"n":1})", "application/json");
  REQUIRE(sent);
  CHECK(sent->status == 200);

  const json other = nodes.api("a").createWebhook("billing");
  const std::string otherId = other["id"];
  const std::vector<std::string> nodeList = {"--nodes", nodes.nodesArgument()};
  const CommandResult table = cluster(withArgs({"list-webhooks"}, nodeList));
  REQUIRE_MESSAGE(table.exitCode == 0, table.err);
  CHECK(contains(table.out, "NODE"));
  CHECK(firstMatch(table.out, "\\nb +" + webhookId + " +shop +" + entrypointId + "\\n"));
  CHECK(firstMatch(table.out, "\\na +" + otherId + " +billing +"));

  const CommandResult asJson = cluster(withArgs({"list-webhooks", "--json"}, nodeList));
  REQUIRE_MESSAGE(asJson.exitCode == 0, asJson.err);
  const json listed = json::parse(asJson.out)["webhooks"];
  REQUIRE(listed.size() == 2);
  std::map<std::string, std::string> nodeOf;
  for (const json& w : listed) nodeOf[w["id"].get<std::string>()] = w["node"].get<std::string>();
  CHECK(nodeOf == std::map<std::string, std::string>{{webhookId, "b"}, {otherId, "a"}});

  // A node that does not answer fails the list: it would look whole without it.
  const CommandResult partial = cluster(withArgs(
      {"list-webhooks"},
      {"--nodes", nodes.nodesArgument() + ",c=http://127.0.0.1:" + std::to_string(freeLoopbackPort())}));
  CHECK(partial.exitCode == 1);
  CHECK(contains(partial.err, "did not answer"));
}

TEST_CASE("list-webhooks follows a node's next_cursor: 501 webhooks on one node, all listed") {
  // The command asks a node for pages of 500 (the API's most): a node with
  // more gives a cursor, and a list that stopped at the first page would
  // look whole while it lacks the rest. No HAProxy: the list only reads.
  Nodes nodes({"a", "b"});
  constexpr int kOnA = 501;
  std::mutex madeMutex;
  std::set<std::string> madeOnA;
  std::vector<std::thread> creators;
  for (int t = 0; t < 8; ++t)
    creators.emplace_back([&, t] {
      const DaemonApi api = nodes.api("a");
      for (int i = t; i < kOnA; i += 8) {
        const std::string id = api.createWebhook("tenant-" + std::to_string(i))["id"];
        std::lock_guard lock(madeMutex);
        madeOnA.insert(id);
      }
    });
  for (auto& t : creators) t.join();
  REQUIRE(madeOnA.size() == kOnA);
  const std::string onB = nodes.api("b").createWebhook("billing")["id"];

  const CommandResult listed =
      cluster({"list-webhooks", "--json", "--nodes", nodes.nodesArgument()});
  REQUIRE_MESSAGE(listed.exitCode == 0, listed.err);
  const json rows = json::parse(listed.out)["webhooks"];
  REQUIRE(rows.is_array());
  CHECK(rows.size() == kOnA + 1);  // each once
  std::set<std::string> seenOnA;
  std::set<std::string> seenOnB;
  for (const json& w : rows)
    (w["node"] == "a" ? seenOnA : seenOnB).insert(w["id"].get<std::string>());
  CHECK(seenOnA == madeOnA);
  CHECK(seenOnB == std::set<std::string>{onB});
}

TEST_CASE("three nodes behind HAProxy: spread, routed, stored once, delivered; a killed node "
          "takes down only its own webhooks") {
  skipWithoutHaproxy();
  Receiver receiver;
  Nodes nodes({"a", "b", "c"});
  HaproxyProcess haproxy(nodes.ports());
  const std::vector<std::string> routing = routingArgs(nodes, haproxy);
  json target = receiverTarget(receiver);
  target["retry"] = {{"base_delay_ms", 100}, {"max_delay_ms", 500}};

  // The first three through the cluster command: each to the node with the
  // fewest webhooks.
  std::vector<Webhook> webhooks;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args = {"create-webhook", "--name", "w" + std::to_string(i), "--json"};
    args.insert(args.end(), routing.begin(), routing.end());
    const CommandResult r = cluster(args);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    const json w = json::parse(r.out);
    webhooks.push_back({w["id"], DaemonApi::hookPath(w), w["node"]});
  }
  CHECK(std::set<std::string>{webhooks[0].node, webhooks[1].node, webhooks[2].node} ==
        std::set<std::string>{"a", "b", "c"});
  // The rest straight on the nodes, then one sync.
  constexpr int kWebhooks = 300;
  std::mutex webhooksMutex;
  std::vector<std::thread> creators;
  for (const std::string& name : nodes.names())
    creators.emplace_back([&, name] {
      DaemonApi api = nodes.api(name);
      for (int i = 0; i < (kWebhooks - 3) / 3; ++i) {
        const json w = api.createWebhook(name + std::to_string(i));
        std::lock_guard lock(webhooksMutex);
        webhooks.push_back({w["id"], DaemonApi::hookPath(w), name});
      }
    });
  for (auto& t : creators) t.join();
  REQUIRE(webhooks.size() == kWebhooks);
  for (const Webhook& w : webhooks) nodes.api(w.node).createTarget(w.id, target);
  const CommandResult synced = cluster(withArgs({"sync"}, routing));
  REQUIRE_MESSAGE(synced.exitCode == 0, synced.err);
  CHECK(contains(synced.out, "synced 600 routes from 3 nodes"));
  // The map file is what a restarted HAProxy would load.
  {
    std::ifstream in(haproxy.map());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(contains(text, webhooks[5].id + " node_" + webhooks[5].node));
  }

  httplib::Client front(haproxy.url());
  // The admin API by webhook id, on the owner; unknown ids: a JSON 404.
  for (const Webhook& w : {webhooks[0], webhooks[1], webhooks[2]}) {
    httplib::Headers auth = {{"Authorization", std::string("Bearer ") + DaemonApi::kAdminToken}};
    const auto res = front.Get("/api/v1/webhooks/" + w.id, auth);
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  const auto unknown = front.Post("/hooks/5f0c5a8e-0d6f-4c62-9d5e-000000000000", "{}", "application/json");
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  CHECK(json::parse(unknown->body)["error"]["code"] == "not_found");

  std::vector<std::string> status = {"status", "--json", "--nodes", nodes.nodesArgument()};
  const CommandResult healthy = cluster(status);
  CHECK_MESSAGE(healthy.exitCode == 0, healthy.err);
  const json healthyNodes = json::parse(healthy.out);
  for (const json& row : healthyNodes["nodes"]) {
    CHECK(row["ready"] == true);
    CHECK(row["webhooks"] == kWebhooks / 3);
  }

  std::vector<Sent> all;
  const auto otherNodesP99 = [&](const std::vector<Sent>& sent) {
    std::vector<std::chrono::microseconds> took;
    for (size_t i = 0; i < sent.size(); ++i)
      if (webhooks[i].node != "b") took.push_back(sent[i].took);
    return p99Ms(took);
  };

  // Round 1: every node up.
  const std::vector<Sent> baseline = load(haproxy.url(), webhooks, "r1", 6);
  for (const Sent& s : baseline) CHECK(s.status == 200);
  all.insert(all.end(), baseline.begin(), baseline.end());

  // Round 2: node b SIGKILLed a third of the way in.
  const std::vector<Sent> killed = load(haproxy.url(), webhooks, "r2", 6, [&](size_t n) {
    if (n == kWebhooks / 18) nodes.daemon("b").kill9();
  });
  size_t bRefused = 0;
  for (size_t i = 0; i < killed.size(); ++i) {
    if (webhooks[i].node == "b") {
      // Refused by HAProxy, or no answer at all (0) when the kill cut a
      // response HAProxy had begun to relay: either way not acknowledged.
      const int answer = killed[i].status;
      CHECK_MESSAGE((answer == 200 || answer == 502 || answer == 503 || answer == 0), answer);
      bRefused += answer != 200;
    } else {
      CHECK_MESSAGE(killed[i].status == 200, webhooks[i].node);
    }
  }
  CHECK(bRefused > 0);
  all.insert(all.end(), killed.begin(), killed.end());
  MESSAGE("p99 of the other nodes' ingest through HAProxy: " << otherNodesP99(baseline)
          << " ms with every node up, " << otherNodesP99(killed) << " ms while node b was killed");
  // Once HAProxy's check saw it: 503 in the JSON shape for b's webhooks.
  std::this_thread::sleep_for(500ms);
  for (const Webhook& w : webhooks) {
    if (w.node != "b") continue;
    const auto res = front.Post(w.hookPath, "{}", "application/json");
    REQUIRE(res);
    CHECK(res->status == 503);
    CHECK(json::parse(res->body)["error"]["code"] == "node_unavailable");
    break;
  }
  const CommandResult degraded = cluster(status);
  CHECK(degraded.exitCode == 3);

  // Node b back on its address: HAProxy sees it ready, its webhooks take
  // events again.
  nodes.start("b");
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    std::this_thread::sleep_for(100ms);
    const auto res = front.Post(webhooks[1].hookPath, "{\"key\":\"probe\"}", "application/json");
    if (res && res->status == 200) {
      up = true;
      all.push_back({webhooks[1].id, "{\"key\":\"probe\"}", 200,
                     json::parse(res->body)["event_id"], {}});
    }
  }
  REQUIRE(up);
  const std::vector<Sent> after = load(haproxy.url(), webhooks, "r3", 6);
  for (const Sent& s : after) CHECK(s.status == 200);
  all.insert(all.end(), after.begin(), after.end());

  // Every acknowledged event: stored once, on its owner only; delivered.
  std::map<std::string, std::multiset<std::string>> acked;
  std::set<std::string> ackedKeys;
  for (const Sent& s : all)
    if (s.status == 200) {
      acked[s.webhookId].insert(s.eventId);
      ackedKeys.insert(s.key);
    }
  for (const Webhook& w : webhooks) {
    const std::multiset<std::string> stored = nodes.storedEvents(w.node, w.id);
    for (const std::string& id : acked[w.id]) CHECK(stored.count(id) == 1);
    for (const std::string& other : nodes.names())
      if (other != w.node) CHECK(nodes.storedEvents(other, w.id).empty());
  }
  std::map<std::string, std::string> nodeOfKey;
  for (size_t i = 0; i < all.size(); ++i)
    for (const Webhook& w : webhooks)
      if (w.id == all[i].webhookId) nodeOfKey[all[i].key] = w.node;
  bool delivered = false;
  std::map<std::string, int> received;
  for (int i = 0; i < 200 && !delivered; ++i) {
    received.clear();
    for (const ReceivedRequest& r : receiver.requests()) ++received[r.body];
    delivered = std::all_of(ackedKeys.begin(), ackedKeys.end(),
                            [&](const std::string& k) { return received.count(k) > 0; });
    if (!delivered) std::this_thread::sleep_for(100ms);
  }
  CHECK(delivered);
  // Twice only where a crash can cause it: node b's at-least-once.
  for (const auto& arrival : received)
    if (nodeOfKey[arrival.first] != "b") CHECK_MESSAGE(arrival.second == 1, arrival.first);
}

// Senders through HAProxy, one event after another to each of `webhooks` in
// turn, retrying a 5xx (or no answer) as webhook senders do. Stopped and
// joined by stop() or when it goes, so a failed REQUIRE leaves no thread.
class RetryingSenders {
 public:
  RetryingSenders(const std::string& url, std::vector<Webhook> webhooks, int threads)
      : webhooks_(std::move(webhooks)) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this, url, threads, t] {
        send(url, static_cast<size_t>(t), static_cast<size_t>(threads));
      });
  }
  ~RetryingSenders() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  // After stop(): every event a node answered 200 to.
  const std::vector<Sent>& acked() const { return acked_; }
  // After stop(): how many answers were retried, and why: "503
  // webhook_moving: 12, ...". A request stored whose answer was lost is sent
  // again and stored twice, so this is what to read first when the check
  // below finds a duplicate.
  size_t retried() const {
    size_t n = 0;
    for (const auto& [body, whys] : failedSends_) n += whys.size();
    return n;
  }
  std::string retryReasons() const {
    std::map<std::string, size_t> counts;
    for (const auto& [body, whys] : failedSends_)
      for (const std::string& why : whys) ++counts[why];
    std::string out;
    for (const auto& [why, count] : counts)
      out += (out.empty() ? "" : ", ") + why + ": " + std::to_string(count);
    return out;
  }
  // After stop(): what the sends of `body` got before its 200, in order.
  std::string failuresOf(const std::string& body) const {
    const auto it = failedSends_.find(body);
    if (it == failedSends_.end()) return "none";
    std::string out;
    for (const std::string& why : it->second) out += (out.empty() ? "" : ", ") + why;
    return out;
  }

 private:
  void send(const std::string& url, size_t first, size_t step) {
    httplib::Client client(url);
    client.set_connection_timeout(5s);
    client.set_read_timeout(10s);
    for (size_t n = first; !stop_; n += step) {
      const Webhook& w = webhooks_[n % webhooks_.size()];
      const std::string key = "{\"key\":\"m-" + std::to_string(n) + "\"}";
      for (int attempt = 0; attempt < 200 && !stop_; ++attempt) {
        const auto res = client.Post(w.hookPath, key, "application/json");
        const bool ok = res && res->status == 200;
        {
          std::lock_guard lock(mutex_);
          if (ok) acked_.push_back({w.id, key, 200, json::parse(res->body)["event_id"], {}});
          else failedSends_[key].push_back(failureOf(res));
        }
        if (ok) break;
        std::this_thread::sleep_for(20ms);
      }
      std::this_thread::sleep_for(2ms);
    }
  }

  // "503 webhook_moving", or "no answer (Read)" for a request that got none.
  static std::string failureOf(const httplib::Result& res) {
    if (!res) return "no answer (" + httplib::to_string(res.error()) + ")";
    const json body = json::parse(res->body, nullptr, false);
    std::string why = std::to_string(res->status);
    if (body.is_object() && body.contains("error") && body["error"].contains("code") &&
        body["error"]["code"].is_string())
      why += " " + body["error"]["code"].get<std::string>();
    return why;
  }

  const std::vector<Webhook> webhooks_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<Sent> acked_;  // guarded by mutex_ until stop()
  std::map<std::string, std::vector<std::string>> failedSends_;  // by body; the same
  std::vector<std::thread> threads_;
};

// `cluster move` of the webhook to node `to`; false (its output checked
// and shown) when it fails.
bool moveWebhook(const std::string& webhookId, const std::string& to,
                 const std::vector<std::string>& routing,
                 const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"move", webhookId, "--to", to};
  args.insert(args.end(), more.begin(), more.end());
  args.insert(args.end(), routing.begin(), routing.end());
  const CommandResult moved = cluster(args);
  CHECK_MESSAGE(moved.exitCode == 0, "move to " << to << ": " << moved.out << moved.err);
  return moved.exitCode == 0;
}

// After moves: each webhook listed by its owner only; every event `senders`
// had acknowledged stored exactly once, on the owner, nowhere else; each
// delivered to `receiver` exactly once (a body that arrived more often is
// shown with what its sends got before their 200).
void checkStoredOnceAndDeliveredOnce(Nodes& nodes, const std::vector<Webhook>& webhooks,
                                     const RetryingSenders& senders, const Receiver& receiver) {
  const std::vector<Sent>& acked = senders.acked();
  for (const Webhook& w : webhooks) {
    for (const std::string& name : nodes.names()) {
      bool listed = false;
      const json placement = nodes.placement(name);
      for (const json& p : placement["webhooks"]) listed = listed || p["id"] == w.id;
      CHECK(listed == (name == w.node));
    }
  }
  std::map<std::string, std::multiset<std::string>> ackedIds;
  for (const Sent& s : acked) ackedIds[s.webhookId].insert(s.eventId);
  for (const Webhook& w : webhooks) {
    const std::multiset<std::string> stored = nodes.storedEvents(w.node, w.id);
    for (const std::string& id : ackedIds[w.id]) CHECK(stored.count(id) == 1);
    CHECK(stored.size() == ackedIds[w.id].size());
    for (const std::string& other : nodes.names())
      if (other != w.node) CHECK(nodes.storedEvents(other, w.id).empty());
  }
  std::map<std::string, int> received;
  bool delivered = false;
  for (int i = 0; i < 300 && !delivered; ++i) {
    received.clear();
    for (const ReceivedRequest& r : receiver.requests()) ++received[r.body];
    delivered = std::all_of(acked.begin(), acked.end(),
                            [&](const Sent& s) { return received.count(s.key) > 0; });
    if (!delivered) std::this_thread::sleep_for(100ms);
  }
  CHECK(delivered);
  for (const auto& arrival : received)
    CHECK_MESSAGE(arrival.second == 1, arrival.first << " (its failed sends: "
                                                     << senders.failuresOf(arrival.first) << ")");
}

// One webhook per entry of `owners`, created on that node with `target`.
std::vector<Webhook> createWebhooks(Nodes& nodes, const std::vector<std::string>& owners,
                                    const json& target) {
  std::vector<Webhook> webhooks;
  for (size_t i = 0; i < owners.size(); ++i) {
    const json w = nodes.api(owners[i]).createWebhook("w" + std::to_string(i));
    nodes.api(owners[i]).createTarget(w["id"], target);
    webhooks.push_back({w["id"], DaemonApi::hookPath(w), owners[i]});
  }
  return webhooks;
}

struct Move {
  size_t webhook;  // index in the webhooks
  std::string to;
};

// Routes `webhooks`, then makes `moves` one after another, `pause` before
// each, while `threads` senders post to every webhook through HAProxy;
// then checks that at least `atLeast` events were acknowledged, each stored
// once on its webhook's final owner and delivered once.
void moveUnderLoad(LoopbackCluster& c, std::vector<Webhook>& webhooks,
                   const std::vector<Move>& moves, std::chrono::milliseconds pause, int threads,
                   size_t atLeast) {
  REQUIRE(cluster(withArgs({"sync"}, c.routing)).exitCode == 0);
  RetryingSenders senders(c.haproxy.url(), webhooks, threads);
  for (const Move& m : moves) {
    std::this_thread::sleep_for(pause);
    Webhook& w = webhooks.at(m.webhook);
    REQUIRE(moveWebhook(w.id, m.to, c.routing));
    w.node = m.to;
  }
  std::this_thread::sleep_for(300ms);
  senders.stop();
  MESSAGE(senders.acked().size() << " events acknowledged during the moves; " << senders.retried()
                                 << " answers were retried (" << senders.retryReasons() << ")");
  REQUIRE(senders.acked().size() >= atLeast);
  checkStoredOnceAndDeliveredOnce(c.nodes, webhooks, senders, c.receiver);
}

TEST_CASE("ten webhooks moved between nodes while events keep arriving: every acknowledged "
          "event stored once and delivered once") {
  LoopbackCluster c({"a", "b", "c"});
  std::vector<std::string> owners;
  for (int i = 0; i < 30; ++i) owners.push_back(c.nodes.names()[i % 3]);
  std::vector<Webhook> webhooks = createWebhooks(c.nodes, owners, receiverTarget(c.receiver));
  // Ten moves, each webhook to the next node.
  std::vector<Move> moves;
  for (size_t i = 0; i < 10; ++i) moves.push_back({i, c.nodes.names()[(i + 1) % 3]});
  moveUnderLoad(c, webhooks, moves, 0ms, 4, 100);
}

TEST_CASE("a webhook moved to another node and back, with no restart, under load: every "
          "acknowledged event stored once on the final owner and delivered once") {
  LoopbackCluster c({"a", "b"});
  // The one that travels, and one that stays on b meanwhile.
  std::vector<Webhook> webhooks = createWebhooks(c.nodes, {"a", "b"}, receiverTarget(c.receiver));
  // a → b → a: node a was the source of the first move in this process
  // life; → b once more: and node b of the second.
  moveUnderLoad(c, webhooks, {{0, "b"}, {0, "a"}, {0, "b"}}, 300ms, 2, 50);
}

TEST_CASE("a webhook moving out refuses every change to it with 409 webhook_moving and changes "
          "nothing; after a rollback the change is made, after the move its new owner makes it") {
  LoopbackCluster c({"a", "b"});
  const json created = c.nodes.api("a").createWebhook("settings");
  const std::string id = created["id"];
  const std::string entrypointId = created["entrypoints"][0]["id"];
  const std::string targetId = c.nodes.api("a").createTarget(id, receiverTarget(c.receiver))["id"];
  REQUIRE(cluster(withArgs({"sync"}, c.routing)).exitCode == 0);
  httplib::Client front = DaemonApi(c.haproxy.url()).admin();
  const std::string path = "/api/v1/webhooks/" + id;

  // One event delivered: an event to redeliver, a delivery to retry.
  const auto posted = front.Post(DaemonApi::hookPath(created), "{}", "application/json");
  REQUIRE(posted);
  REQUIRE(posted->status == 200);
  const std::string eventId = json::parse(posted->body)["event_id"];
  for (int i = 0; i < 100 && c.receiver.requests().empty(); ++i) std::this_thread::sleep_for(50ms);
  REQUIRE(c.receiver.requests().size() == 1);
  const auto deliveries = front.Get(path + "/deliveries");
  REQUIRE(deliveries);
  REQUIRE(deliveries->status == 200);
  const std::string deliveryId = json::parse(deliveries->body)["deliveries"][0]["id"];

  // What a move copies, and the deliveries, as node a shows them.
  httplib::Client a = c.nodes.api("a").admin();
  const auto shown = [&] {
    std::string out;
    for (const std::string& part : {std::string(), std::string("/targets"),
                                    std::string("/deliveries")}) {
      const auto res = a.Get(path + part);
      REQUIRE(res);
      out += std::to_string(res->status) + " " + res->body;
    }
    return out;
  };
  struct Write {
    std::string method;
    std::string path;
    std::string body;
  };
  const auto send = [](httplib::Client& client, const Write& w) {
    const httplib::Result res =
        w.method == "PATCH"    ? client.Patch(w.path, w.body, "application/json")
        : w.method == "DELETE" ? client.Delete(w.path)
                               : client.Post(w.path, w.body, "application/json");
    REQUIRE(res);
    return std::make_pair(res->status, res->body);
  };
  const std::vector<Write> writes = {
      {"PATCH", path, R"({"name":"renamed"})"},
      {"DELETE", path, ""},
      {"POST", path + "/entrypoints", "{}"},
      {"PATCH", path + "/entrypoints/" + entrypointId, R"({"active":false})"},
      {"DELETE", path + "/entrypoints/" + entrypointId, ""},
      {"POST", path + "/targets", receiverTarget(c.receiver).dump()},
      {"PATCH", path + "/targets/" + targetId, R"({"name":"renamed"})"},
      {"DELETE", path + "/targets/" + targetId, ""},
      {"POST", path + "/events/" + eventId + "/redeliver", ""},
      {"POST", path + "/deliveries/" + deliveryId + "/retry", ""},
      {"POST", path + "/replay", R"({"status":"all"})"},
  };

  // A move stopped after `out` (the command killed there): node a refuses
  // every write, through HAProxy as on the node itself.
  const auto out = a.Post(path + "/move/out", R"({"to":"b"})", "application/json");
  REQUIRE(out);
  REQUIRE(out->status == 200);
  const std::string before = shown();
  for (httplib::Client* client : {&a, &front})
    for (const Write& w : writes) {
      const auto answer = send(*client, w);
      CHECK_MESSAGE(answer.first == 409, w.method << " " << w.path << ": " << answer.second);
      CHECK_MESSAGE(json::parse(answer.second)["error"]["code"] == "webhook_moving",
                    w.method << " " << w.path);
    }
  CHECK(shown() == before);
  CHECK(c.receiver.requests().size() == 1);

  // Rolled back: node a takes the change.
  REQUIRE(moveWebhook(id, "b", c.routing, {"--rollback"}));
  CHECK(send(front, writes[0]).first == 200);
  CHECK(json::parse(a.Get(path)->body)["name"] == "renamed");

  // Moved: the new owner, through HAProxy, takes the next change.
  REQUIRE(moveWebhook(id, "b", c.routing));
  CHECK(send(front, {"PATCH", path, R"({"name":"on b"})"}).first == 200);
  CHECK(json::parse(c.nodes.api("b").admin().Get(path)->body)["name"] == "on b");
  CHECK(a.Get(path)->status == 404);
}

TEST_CASE(
    "a webhook with no event moves without its source making an events file; its new "
    "owner takes it with no events") {
  LoopbackCluster c({"a", "b"});
  const json created = c.nodes.api("a").createWebhook("quiet");
  const std::string id = created["id"];
  c.nodes.api("a").createTarget(id, receiverTarget(c.receiver));
  REQUIRE(cluster(withArgs({"sync"}, c.routing)).exitCode == 0);
  const std::string path = "/api/v1/webhooks/" + id;
  const fs::path sourceFile = c.nodes.dataDir("a") / ("events-" + id + ".db");
  REQUIRE_FALSE(fs::exists(sourceFile));

  // The move's read of the source, as its first step makes it: a whole,
  // empty piece, and still no file (the source deletes its files at the
  // move's end, so this is where one made would show).
  httplib::Client a = c.nodes.api("a").admin();
  const auto piece = a.Get(path + "/move/events?after_event=0");
  REQUIRE(piece);
  INFO(piece->body);
  REQUIRE(piece->status == 200);
  CHECK(piece->get_header_value("X-Transfer-Last-Event") == "0");
  CHECK(piece->get_header_value("X-Transfer-More") == "false");
  CHECK_FALSE(fs::exists(sourceFile));

  REQUIRE(moveWebhook(id, "b", c.routing));
  httplib::Client b = c.nodes.api("b").admin();
  const auto events = b.Get(path + "/events");
  REQUIRE(events);
  REQUIRE(events->status == 200);
  CHECK(json::parse(events->body)["events"] == json::array());
  CHECK(a.Get(path)->status == 404);
  // The new owner takes events: one through HAProxy is delivered.
  httplib::Client front = DaemonApi(c.haproxy.url()).admin();
  const auto posted = front.Post(DaemonApi::hookPath(created), "{}", "application/json");
  REQUIRE(posted);
  CHECK(posted->status == 200);
  CHECK(c.nodes.storedEvents("b", id).size() == 1);
}

TEST_CASE("a move waits for the events still being routed when it starts: every event "
          "acknowledged on the source is in the events DB the move copies") {
  // One node: the source's side of a move is the question, no HAProxy needed.
  Nodes nodes({"a"});
  DaemonApi api = nodes.api("a");
  const json created = api.createWebhook("routed");
  const std::string id = created["id"];
  const std::string path = "/api/v1/webhooks/" + id;
  // A type rule that runs to its time budget: with one jq worker the events
  // below are routed one at a time, about a tenth of a second each.
  const auto rule = api.admin().Patch(
      path + "/entrypoints/" + created["entrypoints"][0]["id"].get<std::string>(),
      R"({"event_type": {"jq": "def f: f; f"}})", "application/json");
  REQUIRE(rule);
  REQUIRE(rule->status == 200);

  constexpr int kSenders = 12;
  std::vector<std::pair<int, std::string>> answers(kSenders);  // status, event id
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i)
    senders.emplace_back([&, i] {
      httplib::Client client = api.sender();
      client.set_read_timeout(30s);
      const auto res = client.Post(DaemonApi::hookPath(created), "{}", "application/json");
      if (!res) return;
      answers[static_cast<size_t>(i)].first = res->status;
      if (res->status == 200)
        answers[static_cast<size_t>(i)].second = json::parse(res->body).at("event_id");
    });
  std::this_thread::sleep_for(150ms);  // all sent; most are still waiting for their routing
  const auto out = api.admin().Post(path + "/move/out", R"({"to":"b"})", "application/json");
  REQUIRE(out);
  REQUIRE(out->status == 200);
  const std::multiset<std::string> copied = nodes.storedEvents("a", id);  // what the move reads
  for (auto& s : senders) s.join();

  int acknowledged = 0;
  // Named copies, not a structured binding: clang does not let CHECK_MESSAGE's
  // lambda capture one.
  for (const auto& answer : answers) {
    const int status = answer.first;
    const std::string eventId = answer.second;
    if (status == 200) {
      ++acknowledged;
      CHECK_MESSAGE(copied.count(eventId) == 1, "event " << eventId << " was acknowledged but "
                                                         << "stored after the move's copy");
    } else {
      CHECK(status == 503);  // refused as moving: the sender tries again on the new owner
    }
  }
  CHECK(acknowledged > 0);
  CHECK(copied.size() == static_cast<size_t>(acknowledged));
}

}  // namespace
}  // namespace webhooker::testing
