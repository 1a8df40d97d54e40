// nats targets against a real nats-server (Debian's package) with JetStream
// on a temporary store, started by the test on loopback: every event once
// and in order under FIFO with Nats-Msg-Id the event id, retries while the
// broker is away and delivery once it is back, a full stream (discard new)
// retried then dead-lettered with its reason, and a kill -9 of the real
// daemon mid-stream leaving no event lost and none twice in the stream.
// Skipped (exit 77) where nats-server is not installed.
#include <doctest/doctest.h>

#include <nats/nats.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/broker_process.h"
#include "tests/support/daemon_api.h"
#include "tests/support/engine_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/steady_sender.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct StoredMessage {
  std::string subject;
  std::string msgId;
  std::string eventType;
  std::string body;
};

// A nats-server with JetStream on 127.0.0.1 (a free port, kept across
// restarts; the store in the broker's folder survives them), and a client
// of our own to make streams and read them back.
class NatsServer {
 public:
  NatsServer()
      : bin_(programOrSkip({"/usr/sbin/nats-server", "/usr/bin/nats-server"}, "nats-server")),
        port_(freeLoopbackPort()) {
    start();
  }
  ~NatsServer() { disconnect(); }

  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

  void start() {
    process_.start({bin_, "-a", "127.0.0.1", "-p", std::to_string(port_), "-js", "-sd",
                    (process_.dir() / "store").string()});
    if (!eventually([&] { return connect(); }, 10s))
      throw std::runtime_error("nats-server did not start: " + process_.logText());
  }
  void stop() {
    disconnect();
    process_.stop();
  }

  // A stream on `subjects` (discard new past maxMsgs when given).
  void addStream(const std::string& name, const std::string& subject, int64_t maxMsgs = -1) {
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = name.c_str();
    const char* subjects[] = {subject.c_str()};
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    if (maxMsgs > 0) {
      config.MaxMsgs = maxMsgs;
      config.Discard = js_DiscardNew;
    }
    jsStreamInfo* info = nullptr;
    jsErrCode error{};
    const natsStatus s = js_AddStream(&info, js_, &config, nullptr, &error);
    if (s != NATS_OK) throw std::runtime_error(std::string("js_AddStream: ") + natsStatus_GetText(s));
    jsStreamInfo_Destroy(info);
  }

  uint64_t messageCount(const std::string& stream) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, nullptr) != NATS_OK) return 0;
    const uint64_t n = info->State.Msgs;
    jsStreamInfo_Destroy(info);
    return n;
  }

  std::vector<StoredMessage> messages(const std::string& stream) {
    std::vector<StoredMessage> out;
    const uint64_t n = messageCount(stream);
    for (uint64_t seq = 1; seq <= n; ++seq) {
      natsMsg* msg = nullptr;
      if (js_GetMsg(&msg, js_, stream.c_str(), seq, nullptr, nullptr) != NATS_OK) continue;
      StoredMessage m;
      m.subject = natsMsg_GetSubject(msg);
      const char* value = nullptr;
      if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &value) == NATS_OK) m.msgId = value;
      if (natsMsgHeader_Get(msg, "Webhooker-Event-Type", &value) == NATS_OK) m.eventType = value;
      m.body.assign(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
      natsMsg_Destroy(msg);
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  bool connect() {
    disconnect();
    if (natsConnection_ConnectTo(&nc_, url().c_str()) != NATS_OK) return false;
    return natsConnection_JetStream(&js_, nc_, nullptr) == NATS_OK;
  }
  void disconnect() {
    if (js_) jsCtx_Destroy(js_);
    if (nc_) natsConnection_Destroy(nc_);
    js_ = nullptr;
    nc_ = nullptr;
  }

  std::string bin_;
  int port_;
  BrokerProcess process_;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

TargetRecord fifoTarget(EngineHarness& h, const Hook& hook, const json& config, RetryPolicy retry) {
  TargetRecord target = h.createTarget(hook.webhookId, "nats", config, retry, 8);
  h.makeFifo(target);
  return target;
}

TEST_CASE("nats: every event once, in order, with Nats-Msg-Id the event id") {
  NatsServer nats;
  nats.addStream("HOOKS", "hooks.>");
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      fifoTarget(h, hook, {{"url", nats.url()}, {"subject", "hooks.in"}}, retryPolicy(5, 50));
  constexpr int kEvents = 100;
  std::vector<std::string> ids;
  for (int i = 1; i <= kEvents; ++i)
    ids.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump()));
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 30s));
  const std::vector<StoredMessage> stored = nats.messages("HOOKS");
  REQUIRE(stored.size() == kEvents);
  for (int i = 0; i < kEvents; ++i) {
    CAPTURE(i);
    CHECK(stored[i].msgId == ids[i]);
    CHECK(stored[i].subject == "hooks.in");
    CHECK(json::parse(stored[i].body) == json{{"seq", i + 1}});
  }
  CHECK(h.resultRows(h.deliveryOf(hook.webhookId, ids[0], target.id)).at(0).responseBody ==
        "stream=HOOKS seq=1");
}

TEST_CASE("nats: the broker away, deliveries retry and arrive in order once it is back") {
  NatsServer nats;
  nats.addStream("OUTAGE", "outage.>");
  HarnessOptions options;
  options.breakerCooldown = 300ms;  // the breaker opens during the outage
  EngineHarness h(options);
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      fifoTarget(h, hook, {{"url", nats.url()}, {"subject", "outage.x"}, {"timeout_ms", 500}},
                 retryPolicy(20, 100, 0.0, 200));
  // Connected once, so the outage also breaks a live connection.
  const std::string first = h.post(hook.entrypointId, json{{"seq", 0}}.dump());
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, first, target.id), "delivered", 10s));
  nats.stop();
  std::vector<std::string> ids;
  for (int i = 1; i <= 5; ++i) ids.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump()));
  const DeliveryRef head = h.deliveryOf(hook.webhookId, ids[0], target.id);
  REQUIRE(eventually([&] { return h.resultRows(head).size() >= 2; }, 10s));
  CHECK(h.delivery(head).status == "retrying");
  nats.start();
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 6, 20s));
  const std::vector<StoredMessage> stored = nats.messages("OUTAGE");
  REQUIRE(stored.size() == 6);
  for (int i = 0; i < 5; ++i) CHECK(stored[i + 1].msgId == ids[i]);
}

TEST_CASE("nats: a full stream (discard new) retries, then dead-letters with its reason") {
  NatsServer nats;
  nats.addStream("SMALL", "small.>", 1);
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord target = fifoTarget(
      h, hook, {{"url", nats.url()}, {"subject", "small.in"}}, retryPolicy(2, 50));
  const std::string kept = h.post(hook.entrypointId, json{{"n", 1}}.dump());
  const std::string refused = h.post(hook.entrypointId, json{{"n", 2}}.dump());
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, kept, target.id), "delivered", 10s));
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, refused, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).failureReason == "max_attempts");
  const auto rows = h.resultRows(ref);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].error.value_or("").find("maximum messages") != std::string::npos);
  CHECK(nats.messageCount("SMALL") == 1);
}

TEST_CASE("nats: a kill -9 of the daemon mid-stream loses nothing and duplicates nothing") {
  NatsServer nats;
  nats.addStream("CRASH", "crash.>");
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  std::vector<std::string> acknowledged;
  std::string webhookId;
  {
    DaemonProcess daemon(dir.path(), options);
    DaemonApi api(daemon.url());
    const json webhook = api.createWebhook("crash");
    webhookId = webhook.at("id");
    api.createTarget(webhook.at("id"), {{"name", "stream"},
                                        {"type", "nats"},
                                        {"config", {{"url", nats.url()}, {"subject", "crash.in"}}},
                                        {"max_concurrency", 8},
                                        {"retry", {{"base_delay_ms", 100}}}});
    SteadySender sender(api, DaemonApi::hookPath(webhook), 5000);
    // Killed while events still stream in and out.
    REQUIRE(eventually([&] { return nats.messageCount("CRASH") >= 100; }, 20s));
    daemon.kill9();
    sender.stop();
    acknowledged = sender.acknowledged();
  }
  DaemonProcess daemon(dir.path(), options);
  // Until the restarted daemon has sent all it had waiting.
  REQUIRE(eventually([&] { return unfinishedDeliveries(dir.path(), webhookId) == 0; }, 20s));
  const std::vector<StoredMessage> messages = nats.messages("CRASH");
  std::set<std::string> stored;
  for (const StoredMessage& m : messages) stored.insert(m.msgId);
  for (const std::string& id : acknowledged) CHECK(stored.count(id) == 1);
  // Whatever the restarted daemon sent again, the stream holds each event once.
  CHECK(messages.size() == stored.size());
  CHECK(acknowledged.size() >= 100);
}

}  // namespace
}  // namespace webhooker::testing
