// amqp targets against a real RabbitMQ (Debian's rabbitmq-server), one
// node for the whole file (it takes seconds to start), on loopback ports of
// its own with its own Erlang port mapper: every event once and in order
// under FIFO with its properties, a nack (a full queue that rejects
// publishes) and an unroutable message retried then dead-lettered with
// their reasons, and a kill -9 of the real daemon mid-stream losing nothing
// (duplicates counted). Skipped (exit 77) where rabbitmq-server is not
// installed.
#include <doctest/doctest.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <string>
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

struct Message {
  std::string messageId;
  std::string contentType;
  std::string body;
};

// A client of our own: declares queues and reads them back.
class AmqpClient {
 public:
  explicit AmqpClient(int port) : state_(amqp_new_connection()) {
    amqp_socket_t* socket = amqp_tcp_socket_new(state_);
    if (amqp_socket_open(socket, "127.0.0.1", port) != AMQP_STATUS_OK) return;
    if (amqp_login(state_, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest").reply_type !=
        AMQP_RESPONSE_NORMAL)
      return;
    amqp_channel_open(state_, 1);
    ok_ = amqp_get_rpc_reply(state_).reply_type == AMQP_RESPONSE_NORMAL;
  }
  ~AmqpClient() {
    if (ok_) {
      amqp_channel_close(state_, 1, AMQP_REPLY_SUCCESS);
      amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(state_);
  }
  AmqpClient(const AmqpClient&) = delete;
  AmqpClient& operator=(const AmqpClient&) = delete;

  bool ok() const { return ok_; }

  // A fresh queue (what an earlier test left in one with this name goes);
  // maxLength > 0: it holds that many and rejects publishes past them.
  void declare(const std::string& queue, int maxLength = 0) {
    amqp_queue_delete(state_, 1, amqp_cstring_bytes(queue.c_str()), 0, 0);
    amqp_get_rpc_reply(state_);
    std::vector<amqp_table_entry_t> entries;
    if (maxLength > 0) {
      amqp_table_entry_t length{};
      length.key = amqp_cstring_bytes("x-max-length");
      length.value.kind = AMQP_FIELD_KIND_I32;
      length.value.value.i32 = maxLength;
      amqp_table_entry_t overflow{};
      overflow.key = amqp_cstring_bytes("x-overflow");
      overflow.value.kind = AMQP_FIELD_KIND_UTF8;
      overflow.value.value.bytes = amqp_cstring_bytes("reject-publish");
      entries = {length, overflow};
    }
    amqp_queue_declare(state_, 1, amqp_cstring_bytes(queue.c_str()), 0, /*durable=*/1, 0, 0,
                       amqp_table_t{static_cast<int>(entries.size()), entries.data()});
    if (amqp_get_rpc_reply(state_).reply_type != AMQP_RESPONSE_NORMAL)
      throw std::runtime_error("cannot declare " + queue);
  }

  std::vector<Message> drain(const std::string& queue) {
    std::vector<Message> out;
    for (;;) {
      amqp_rpc_reply_t reply =
          amqp_basic_get(state_, 1, amqp_cstring_bytes(queue.c_str()), /*no_ack=*/1);
      if (reply.reply_type != AMQP_RESPONSE_NORMAL || reply.reply.id != AMQP_BASIC_GET_OK_METHOD)
        return out;
      amqp_message_t message;
      if (amqp_read_message(state_, 1, &message, 0).reply_type != AMQP_RESPONSE_NORMAL) return out;
      const auto text = [](amqp_bytes_t b) {
        return std::string(static_cast<const char*>(b.bytes), b.len);
      };
      out.push_back({text(message.properties.message_id), text(message.properties.content_type),
                     text(message.body)});
      amqp_destroy_message(&message);
    }
  }

 private:
  amqp_connection_state_t state_;
  bool ok_ = false;
};

// One RabbitMQ node for the file: its own node name, ports (AMQP,
// distribution, port mapper) and folders, so it never meets a system one.
class RabbitServer {
 public:
  RabbitServer()
      : bin_(programOrSkip({"/usr/lib/rabbitmq/bin/rabbitmq-server"}, "rabbitmq-server")),
        port_(freeLoopbackPort()),
        epmdPort_(freeLoopbackPort()) {
    const auto dir = process_.dir();
    std::ofstream(dir / "enabled_plugins") << "[].\n";
    env_ = {"HOME=" + dir.string(),
            "RABBITMQ_NODENAME=webhooker" + std::to_string(port_) + "@localhost",
            "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
            "RABBITMQ_NODE_PORT=" + std::to_string(port_),
            "RABBITMQ_DIST_PORT=" + std::to_string(freeLoopbackPort()),
            "ERL_EPMD_PORT=" + std::to_string(epmdPort_),
            "RABBITMQ_MNESIA_BASE=" + (dir / "mnesia").string(),
            "RABBITMQ_LOG_BASE=" + (dir / "log").string(),
            "RABBITMQ_ENABLED_PLUGINS_FILE=" + (dir / "enabled_plugins").string(),
            "RABBITMQ_PID_FILE=" + (dir / "pid").string(),
            "RABBITMQ_CONFIG_FILE=" + (dir / "rabbitmq").string()};
    process_.start({bin_}, env_);
    if (!eventually([&] { return AmqpClient(port_).ok(); }, 90s))
      throw std::runtime_error("rabbitmq-server did not start: " + process_.logText());
  }
  ~RabbitServer() {
    // The node itself (the script's child) stops on SIGTERM; then its port mapper.
    std::ifstream pidFile(process_.dir() / "pid");
    pid_t node = 0;
    if (pidFile >> node && node > 0) {
      ::kill(node, SIGTERM);
      waitFor(node, 20s);
    }
    process_.stop();
    runCommand({"epmd", "-port", std::to_string(epmdPort_), "-kill"}, {}, 5s);
  }

  int port() const { return port_; }
  std::string url() const { return "amqp://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string bin_;
  int port_;
  int epmdPort_;
  std::vector<std::string> env_;
  BrokerProcess process_;
};

RabbitServer& rabbit() {
  static RabbitServer server;
  return server;
}

TEST_CASE("amqp: every event once, in order, acked by the broker") {
  AmqpClient client(rabbit().port());
  REQUIRE(client.ok());
  client.declare("ordered");
  EngineHarness h;
  const Hook hook = h.createWebhook();
  TargetRecord target = h.createTarget(
      hook.webhookId, "amqp", {{"url", rabbit().url()}, {"routing_key", "ordered"}},
      retryPolicy(5, 50), 8);
  h.makeFifo(target);
  constexpr int kEvents = 100;
  std::vector<std::string> ids;
  for (int i = 1; i <= kEvents; ++i)
    ids.push_back(h.post(hook.entrypointId, json{{"seq", i}}.dump()));
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", kEvents, 30s));
  const std::vector<Message> got = client.drain("ordered");
  REQUIRE(got.size() == kEvents);
  for (int i = 0; i < kEvents; ++i) {
    CAPTURE(i);
    CHECK(got[i].messageId == ids[i]);
    CHECK(got[i].contentType == "application/json");
    CHECK(json::parse(got[i].body) == json{{"seq", i + 1}});
  }
}

TEST_CASE("amqp: a nack from a full queue retries, then dead-letters with its reason") {
  AmqpClient client(rabbit().port());
  REQUIRE(client.ok());
  client.declare("tiny", 1);
  EngineHarness h;
  const Hook hook = h.createWebhook();
  TargetRecord target = h.createTarget(
      hook.webhookId, "amqp", {{"url", rabbit().url()}, {"routing_key", "tiny"}},
      retryPolicy(2, 50), 1);
  h.makeFifo(target);
  const std::string kept = h.post(hook.entrypointId, "{}");
  const std::string refused = h.post(hook.entrypointId, "{}");
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, kept, target.id), "delivered", 10s));
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, refused, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).failureReason == "max_attempts");
  const auto rows = h.resultRows(ref);
  REQUIRE(rows.size() == 3);
  for (const ResultRow& row : rows) CHECK(row.error.value_or("").find("nack") != std::string::npos);
  CHECK(client.drain("tiny").size() == 1);
}

TEST_CASE("amqp: a message no queue takes is returned: it retries, then dead-letters") {
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createTarget(
      hook.webhookId, "amqp", {{"url", rabbit().url()}, {"routing_key", "nowhere-{type}"}},
      retryPolicy(1, 50));
  const std::string id = h.post(hook.entrypointId, "{}");
  const DeliveryRef ref = h.deliveryOf(hook.webhookId, id, target.id);
  REQUIRE(h.waitForStatus(ref, "failed", 10s));
  CHECK(h.delivery(ref).failureReason == "max_attempts");
  const auto rows = h.resultRows(ref);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].error.value_or("").find("unroutable") != std::string::npos);
  // A missing exchange closes the channel: retried the same way.
  const TargetRecord noExchange = h.createTarget(
      hook.webhookId, "amqp", {{"url", rabbit().url()}, {"exchange", "missing"}},
      retryPolicy(0, 100), 1, "no-exchange");
  const std::string second = h.post(hook.entrypointId, "{}");
  const DeliveryRef secondRef = h.deliveryOf(hook.webhookId, second, noExchange.id);
  REQUIRE(h.waitForStatus(secondRef, "failed", 10s));
  CHECK(h.resultRows(secondRef).at(0).error.value_or("").find("404") != std::string::npos);
}

TEST_CASE("amqp: a kill -9 of the daemon mid-stream loses nothing; duplicates are few") {
  AmqpClient client(rabbit().port());
  REQUIRE(client.ok());
  client.declare("crash");
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  constexpr int kConcurrency = 8;
  std::vector<std::string> acknowledged;
  std::vector<Message> got;
  std::string webhookId;
  {
    DaemonProcess daemon(dir.path(), options);
    DaemonApi api(daemon.url());
    const json webhook = api.createWebhook("crash");
    webhookId = webhook.at("id");
    api.createTarget(webhook.at("id"), {{"name", "queue"},
                                        {"type", "amqp"},
                                        {"config", {{"url", rabbit().url()}, {"routing_key", "crash"}}},
                                        {"max_concurrency", kConcurrency},
                                        {"retry", {{"base_delay_ms", 100}}}});
    SteadySender sender(api, DaemonApi::hookPath(webhook), 5000);
    REQUIRE(eventually(
        [&] {
          for (Message& m : client.drain("crash")) got.push_back(std::move(m));
          return got.size() >= 100;
        },
        20s));
    daemon.kill9();
    sender.stop();
    acknowledged = sender.acknowledged();
  }
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(eventually([&] { return unfinishedDeliveries(dir.path(), webhookId) == 0; }, 20s));
  for (Message& m : client.drain("crash")) got.push_back(std::move(m));
  std::map<std::string, int> copies;
  for (const Message& m : got) ++copies[m.messageId];
  for (const std::string& id : acknowledged) CHECK(copies.count(id) == 1);
  int duplicates = 0;
  for (const auto& [id, n] : copies) duplicates += n - 1;
  MESSAGE("amqp duplicates after a kill -9: " << duplicates);
  // In flight (max_concurrency) and about as many whose results were
  // waiting for their commit.
  CHECK(duplicates <= 2 * kConcurrency);
  CHECK(acknowledged.size() >= 100);
}

}  // namespace
}  // namespace webhooker::testing
