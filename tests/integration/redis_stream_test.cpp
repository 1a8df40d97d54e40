// redis_stream targets against a real redis-server (Debian's package) the
// test starts on loopback: every event once and in order under FIFO, the
// entry's fields, retries while the broker is away and delivery once it is
// back, an error reply retried then dead-lettered with its reason, AUTH
// with a password, and the SSRF guard on the broker's address. Skipped
// (exit 77) where redis-server is not installed.
#include <doctest/doctest.h>

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/broker_process.h"
#include "tests/support/engine_harness.h"
#include "tests/support/daemon_api.h"
#include "tests/support/eventually.h"
#include "tests/support/steady_sender.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};

// One stream entry: its id and fields.
struct Entry {
  std::string id;
  std::map<std::string, std::string> fields;
};

// A redis-server on 127.0.0.1 (redis cannot bind port 0: a free port is
// picked once and kept across restarts), no persistence.
class RedisServer {
 public:
  explicit RedisServer(std::string password = "")
      : bin_(programOrSkip({"/usr/bin/redis-server", "/usr/sbin/redis-server"}, "redis-server")),
        password_(std::move(password)),
        port_(freeLoopbackPort()) {
    start();
  }

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  void start() {
    std::vector<std::string> args = {bin_, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir",
                                     process_.dir().string()};
    if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
    process_.start(args);
    if (!eventually([&] { return ping(); }, 10s))
      throw std::runtime_error("redis-server did not start: " + process_.logText());
  }
  void stop() { process_.stop(); }

  // A command from a client of our own (not the code under test).
  Reply command(const std::vector<std::string>& args) const {
    std::unique_ptr<redisContext, ContextFree> c(redisConnect("127.0.0.1", port_));
    if (!c || c->err) return nullptr;
    if (!password_.empty()) Reply(static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", password_.c_str())));
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    return Reply(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(args.size()), argv.data(), lengths.data())));
  }

  std::vector<Entry> entries(const std::string& stream) const {
    std::vector<Entry> out;
    Reply r = command({"XRANGE", stream, "-", "+"});
    if (!r || r->type != REDIS_REPLY_ARRAY) return out;
    for (size_t i = 0; i < r->elements; ++i) {
      const redisReply* e = r->element[i];
      Entry entry{std::string(e->element[0]->str, e->element[0]->len), {}};
      const redisReply* f = e->element[1];
      for (size_t k = 0; k + 1 < f->elements; k += 2)
        entry.fields[std::string(f->element[k]->str, f->element[k]->len)] =
            std::string(f->element[k + 1]->str, f->element[k + 1]->len);
      out.push_back(std::move(entry));
    }
    return out;
  }

 private:
  bool ping() const {
    Reply r = command({"PING"});
    return r && r->type == REDIS_REPLY_STATUS;
  }

  std::string bin_;
  std::string password_;
  int port_;
  BrokerProcess process_;
};

TargetRecord fifoTarget(EngineHarness& h, const Hook& hook, const json& config, RetryPolicy retry) {
  TargetRecord target = h.createTarget(hook.webhookId, "redis_stream", config, retry, 8);
  h.makeFifo(target);
  return target;
}

TEST_CASE("redis_stream: every event once, in order, with its id, type and headers") {
  RedisServer redis;
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      fifoTarget(h, hook, {{"url", redis.url()}, {"stream", "events"}}, retryPolicy(5, 50));

  constexpr int kEvents = 100;
  std::vector<std::string> ids;
  for (int i = 1; i <= kEvents; ++i)
    ids.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump(), "application/json",
                         {{"X-Trace", "t" + std::to_string(i)}}));
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 30s));

  const std::vector<Entry> entries = redis.entries("events");
  REQUIRE(entries.size() == kEvents);
  for (int i = 0; i < kEvents; ++i) {
    CAPTURE(i);
    CHECK(entries[i].fields.at("event_id") == ids[i]);
    CHECK(json::parse(entries[i].fields.at("body")) == json{{"seq", i + 1}});
    CHECK(entries[i].fields.at("content_type") == "application/json");
    const json headers = json::parse(entries[i].fields.at("headers"));
    CHECK(std::find(headers.begin(), headers.end(), json{"X-Trace", "t" + std::to_string(i + 1)}) !=
          headers.end());
    CHECK(entries[i].fields.count("type") == 1);
  }
  // The result row keeps the entry id Redis gave.
  const DeliveryRef first = h.deliveryOf(hook.webhookId, ids[0], target.id);
  CHECK(h.resultRows(first).at(0).responseBody == entries[0].id);
}

TEST_CASE("redis_stream: the broker away, deliveries retry and arrive in order once it is back") {
  RedisServer redis;
  HarnessOptions options;
  options.breakerCooldown = 300ms;  // the breaker opens during the outage
  EngineHarness h(options);
  const Hook hook = h.createWebhook();
  const TargetRecord target = fifoTarget(
      h, hook, {{"url", redis.url()}, {"stream", "outage"}, {"timeout_ms", 500}},
      retryPolicy(20, 100, 0.0, 200));
  redis.stop();
  std::vector<std::string> ids;
  for (int i = 1; i <= 5; ++i) ids.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump()));
  const DeliveryRef head = h.deliveryOf(hook.webhookId, ids[0], target.id);
  REQUIRE(eventually([&] { return h.resultRows(head).size() >= 2; }, 10s));
  CHECK(h.delivery(head).status == "retrying");
  CHECK(h.resultRows(head).at(0).error.value_or("").find("cannot connect") != std::string::npos);

  redis.start();
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 5, 20s));
  const std::vector<Entry> entries = redis.entries("outage");
  REQUIRE(entries.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(entries[i].fields.at("event_id") == ids[i]);
}

TEST_CASE("redis_stream: an error reply retries, then dead-letters with its reason") {
  RedisServer redis;
  EngineHarness h;
  const Hook hook = h.createWebhook();
  // The key holds a string: XADD answers WRONGTYPE.
  REQUIRE(redis.command({"SET", "taken", "x"}));
  const TargetRecord target = h.createTarget(
      hook.webhookId, "redis_stream", {{"url", redis.url()}, {"stream", "taken"}},
      retryPolicy(2, 50));
  const std::string id = h.post(hook.entrypointId, "{}");
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, id, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).failureReason == "max_attempts");
  const auto rows = h.resultRows(ref);
  REQUIRE(rows.size() == 3);
  for (const ResultRow& row : rows) CHECK(row.error.value_or("").find("WRONGTYPE") != std::string::npos);
}

TEST_CASE("redis_stream: AUTH with the configured password; a wrong one retries") {
  RedisServer redis("s3cret-redis-pass");
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord good = h.createTarget(
      hook.webhookId, "redis_stream",
      {{"url", redis.url()}, {"stream", "authed"}, {"password", "s3cret-redis-pass"}, {"maxlen", 1000}},
      retryPolicy(0, 100));
  const TargetRecord bad = h.createTarget(
      hook.webhookId, "redis_stream",
      {{"url", redis.url()}, {"stream", "authed"}, {"password", "not-the-password-42"}}, retryPolicy(0, 100));
  const std::string id = h.post(hook.entrypointId, "{}");
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, id, good.id), "delivered", 10s));
  const DeliveryRef refused = h.deliveryOf(hook.webhookId, id, bad.id);
  REQUIRE(h.waitForStatus(refused, "failed", 10s));
  const std::string error = h.resultRows(refused).at(0).error.value_or("");
  CHECK(error.find("AUTH") != std::string::npos);
  CHECK(error.find("not-the-password-42") == std::string::npos);
  CHECK(redis.entries("authed").size() == 1);
}

TEST_CASE("redis_stream: the broker's address goes through the SSRF guard") {
  RedisServer redis;
  HarnessOptions options;
  options.allowNetworks = "";  // loopback is forbidden
  EngineHarness h(options);
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createTarget(
      hook.webhookId, "redis_stream", {{"url", redis.url()}, {"stream", "guarded"}},
      retryPolicy(3, 50));
  const std::string id = h.post(hook.entrypointId, "{}");
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, id, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).failureReason == "blocked_destination");
  CHECK(h.resultRows(ref).size() == 1);
  CHECK(redis.entries("guarded").empty());
}

TEST_CASE("redis_stream: a kill -9 of the daemon mid-stream loses nothing; duplicates are few") {
  RedisServer redis;
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  constexpr int kConcurrency = 8;
  std::vector<std::string> acknowledged;
  std::string webhookId;
  {
    DaemonProcess daemon(dir.path(), options);
    DaemonApi api(daemon.url());
    const json webhook = api.createWebhook("crash");
    webhookId = webhook.at("id");
    api.createTarget(webhook.at("id"), {{"name", "stream"},
                                        {"type", "redis_stream"},
                                        {"config", {{"url", redis.url()}, {"stream", "crash"}}},
                                        {"max_concurrency", kConcurrency},
                                        {"retry", {{"base_delay_ms", 100}}}});
    SteadySender sender(api, DaemonApi::hookPath(webhook), 5000);
    REQUIRE(eventually([&] { return redis.entries("crash").size() >= 100; }, 20s));
    daemon.kill9();
    sender.stop();
    acknowledged = sender.acknowledged();
  }
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(eventually([&] { return unfinishedDeliveries(dir.path(), webhookId) == 0; }, 20s));
  std::map<std::string, int> copies;
  for (const Entry& e : redis.entries("crash")) ++copies[e.fields.at("event_id")];
  for (const std::string& id : acknowledged) CHECK(copies.count(id) == 1);
  int duplicates = 0;
  for (const auto& [id, n] : copies) duplicates += n - 1;
  MESSAGE("redis_stream duplicates after a kill -9: " << duplicates);
  // In flight (max_concurrency) and about as many whose results were
  // waiting for their commit.
  CHECK(duplicates <= 2 * kConcurrency);
  CHECK(acknowledged.size() >= 100);
}

}  // namespace
}  // namespace webhooker::testing
