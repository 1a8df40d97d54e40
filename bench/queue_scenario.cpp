// queues: how fast the queue targets deliver a seeded backlog to a real
// broker on loopback (redis_stream to redis-server, nats to nats-server
// with JetStream, amqp to rabbitmq-server), each against a bare publish
// loop with the same client library in the same run: as many connections
// as the target's max_concurrency, each publishing the same bodies one
// after another and waiting for each answer (XADD's entry id, the stream's
// ack, the broker's confirm), as the target does. A broker that is not
// installed is left out, and RabbitMQ from the smoke run. The check: the
// broker holds every event. Also a pull target's consumer: one loop leasing
// 100 and acking them, against the deliver scenario's shape in the same run
// (the same backlog drained by the daemon to an http receiver).
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <hiredis/hiredis.h>
#include <nats/nats.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/daemon.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "tests/support/broker_process.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kConnections = 8;

// Publishes n messages over kConnections threads, each its own `publish`
// (made per thread); the rate in messages/s.
double bareLoop(size_t n, const std::function<std::function<bool(size_t)>()>& makePublisher) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < kConnections; ++t)
    threads.emplace_back([&] {
      auto publish = makePublisher();
      for (size_t i = next++; i < n; i = next++)
        if (!publish(i)) return;
    });
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

// Seeds n events for one target of `type`, runs the daemon until `count()`
// reaches n (or the drain cap), and returns the rate from the first message
// seen to the last; `drained` says whether all arrived.
double drainThrough(const BenchConfig& config, TargetType type, const nlohmann::json& target,
                    size_t n, const std::function<size_t()>& count, bool& drained) {
  testing::TempDir data;
  {
    Seeder seeder(data.path());
    SeedTarget seed;
    seed.type = type;
    seed.configJson = target.dump();
    seed.maxConcurrency = kConnections;
    seedWebhook(seeder, std::string(targetTypeWord(type)), {seed}, n, config.bodies);
  }
  BenchDaemon daemon(data.path(), config.daemonSettings());
  const auto deadline = Clock::now() + config.drainCap;
  std::optional<Clock::time_point> first;
  size_t firstCount = 0;
  size_t seen = 0;
  while (Clock::now() < deadline) {
    seen = count();
    if (!first && seen > 0) {
      first = Clock::now();
      firstCount = seen;
    }
    if (seen >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto end = Clock::now();
  daemon.stop();
  drained = seen >= n;
  if (!first || seen <= firstCount) return 0;
  const double seconds = std::chrono::duration<double>(end - *first).count();
  return seconds > 0 ? static_cast<double>(seen - firstCount) / seconds : 0;
}

void report(Report& report, const std::string& type, double rate, double bare,
            const std::string& bareName, bool drained, size_t n) {
  report.add({"queues", "deliveries/s to " + type, rate, "1/s", bare, bareName,
              Goal{Goal::Kind::kRatioAtLeast, 0.5}});
  std::vector<std::string> problems;
  if (!drained) problems.push_back(type + ": the broker did not get all " + std::to_string(n) +
                                   " events within the drain cap");
  report.addCheck("queues", problems);
}

// --- Redis ---

struct RedisFree {
  void operator()(redisContext* c) const { redisFree(c); }
};

void runRedis(const BenchConfig& config, Report& out, size_t n) {
  const auto bin = testing::installedProgram({"/usr/bin/redis-server"});
  if (!bin) return;
  testing::BrokerProcess process;
  const int port = testing::freeLoopbackPort();
  process.start({*bin, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", process.dir().string()});
  const auto client = [port] {
    return std::unique_ptr<redisContext, RedisFree>(redisConnect("127.0.0.1", port));
  };
  const auto xlen = [&](const char* stream) -> size_t {
    auto c = client();
    if (!c || c->err) return 0;
    auto* r = static_cast<redisReply*>(redisCommand(c.get(), "XLEN %s", stream));
    const size_t len = r && r->type == REDIS_REPLY_INTEGER ? static_cast<size_t>(r->integer) : 0;
    if (r) freeReplyObject(r);
    return len;
  };
  if (!testing::eventually([&] { auto c = client(); return c && !c->err; }, std::chrono::seconds(10)))
    throw std::runtime_error("redis-server did not start");
  const double bare = bareLoop(n, [&] {
    auto c = std::make_shared<std::unique_ptr<redisContext, RedisFree>>(client());
    return [&config, c](size_t i) {
      const std::string id = "evt_" + std::to_string(i);
      const std::string& body = config.bodies[i % config.bodies.size()];
      const char* argv[] = {"XADD", "bare", "*", "event_id", id.c_str(), "body", body.data()};
      const size_t lengths[] = {4, 4, 1, 8, id.size(), 4, body.size()};
      auto* r = static_cast<redisReply*>(redisCommandArgv(c->get(), 7, argv, lengths));
      const bool ok = r && r->type == REDIS_REPLY_STRING;
      if (r) freeReplyObject(r);
      return ok;
    };
  });
  bool drained = false;
  const double rate = drainThrough(
      config, TargetType::kRedisStream,
      {{"url", "redis://127.0.0.1:" + std::to_string(port)}, {"stream", "bench"}}, n,
      [&] { return xlen("bench"); }, drained);
  report(out, "redis_stream", rate, bare, "bare XADD loop, hiredis, 8 connections", drained, n);
}

// --- NATS JetStream ---

void runNats(const BenchConfig& config, Report& out, size_t n) {
  const auto bin = testing::installedProgram({"/usr/sbin/nats-server", "/usr/bin/nats-server"});
  if (!bin) return;
  testing::BrokerProcess process;
  const int port = testing::freeLoopbackPort();
  const std::string url = "nats://127.0.0.1:" + std::to_string(port);
  process.start({*bin, "-a", "127.0.0.1", "-p", std::to_string(port), "-js", "-sd",
                 (process.dir() / "store").string()});
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  if (!testing::eventually([&] { return natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK; },
                           std::chrono::seconds(10)) ||
      natsConnection_JetStream(&js, nc, nullptr) != NATS_OK)
    throw std::runtime_error("nats-server did not start");
  for (const char* name : {"BARE", "BENCH"}) {
    jsStreamConfig stream;
    jsStreamConfig_Init(&stream);
    stream.Name = name;
    const std::string subject = std::string(name) + ".>";
    const char* subjects[] = {subject.c_str()};
    stream.Subjects = subjects;
    stream.SubjectsLen = 1;
    jsStreamInfo* info = nullptr;
    if (js_AddStream(&info, js, &stream, nullptr, nullptr) != NATS_OK)
      throw std::runtime_error("cannot make a JetStream stream");
    jsStreamInfo_Destroy(info);
  }
  const auto messages = [&](const char* stream) -> size_t {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js, stream, nullptr, nullptr) != NATS_OK) return 0;
    const size_t count = info->State.Msgs;
    jsStreamInfo_Destroy(info);
    return count;
  };
  // One connection shared by the publishing threads, as the target shares one.
  const double bare = bareLoop(n, [&] {
    return [&config, js](size_t i) {
      const std::string id = "evt_" + std::to_string(i);
      const std::string& body = config.bodies[i % config.bodies.size()];
      jsPubOptions options;
      jsPubOptions_Init(&options);
      options.MsgId = id.c_str();
      jsPubAck* ack = nullptr;
      const natsStatus s = js_Publish(&ack, js, "BARE.in", body.data(),
                                      static_cast<int>(body.size()), &options, nullptr);
      jsPubAck_Destroy(ack);
      return s == NATS_OK;
    };
  });
  bool drained = false;
  const double rate = drainThrough(config, TargetType::kNats, {{"url", url}, {"subject", "BENCH.in"}}, n,
                                   [&] { return messages("BENCH"); }, drained);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  report(out, "nats", rate, bare, "bare JetStream publish loop, libnats, 8 threads", drained, n);
}

// --- RabbitMQ ---

struct AmqpChannel {
  explicit AmqpChannel(int port) : state(amqp_new_connection()) {
    amqp_socket_t* socket = amqp_tcp_socket_new(state);
    ok = amqp_socket_open(socket, "127.0.0.1", port) == AMQP_STATUS_OK &&
         amqp_login(state, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest")
                 .reply_type == AMQP_RESPONSE_NORMAL;
    if (!ok) return;
    amqp_channel_open(state, 1);
    ok = amqp_get_rpc_reply(state).reply_type == AMQP_RESPONSE_NORMAL;
  }
  ~AmqpChannel() { amqp_destroy_connection(state); }
  size_t declare(const char* queue) {
    auto* r = amqp_queue_declare(state, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
    return r ? r->message_count : 0;
  }
  amqp_connection_state_t state;
  bool ok = false;
};

void runAmqp(const BenchConfig& config, Report& out, size_t n) {
  const auto bin = testing::installedProgram({"/usr/lib/rabbitmq/bin/rabbitmq-server"});
  if (!bin) return;
  testing::BrokerProcess process;
  const int port = testing::freeLoopbackPort();
  const int epmd = testing::freeLoopbackPort();
  const auto dir = process.dir();
  std::ofstream(dir / "enabled_plugins") << "[].\n";
  process.start({*bin},
                {"HOME=" + dir.string(), "RABBITMQ_NODENAME=bench" + std::to_string(port) + "@localhost",
                 "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1", "RABBITMQ_NODE_PORT=" + std::to_string(port),
                 "RABBITMQ_DIST_PORT=" + std::to_string(testing::freeLoopbackPort()),
                 "ERL_EPMD_PORT=" + std::to_string(epmd),
                 "RABBITMQ_MNESIA_BASE=" + (dir / "mnesia").string(),
                 "RABBITMQ_LOG_BASE=" + (dir / "log").string(),
                 "RABBITMQ_ENABLED_PLUGINS_FILE=" + (dir / "enabled_plugins").string(),
                 "RABBITMQ_PID_FILE=" + (dir / "pid").string(),
                 "RABBITMQ_CONFIG_FILE=" + (dir / "rabbitmq").string()});
  const auto stopNode = [&] {
    std::ifstream pidFile(dir / "pid");
    pid_t node = 0;
    if (pidFile >> node && node > 0) {
      ::kill(node, SIGTERM);
      testing::waitFor(node, std::chrono::seconds(20));
    }
    process.stop();
    testing::runCommand({"epmd", "-port", std::to_string(epmd), "-kill"}, {}, std::chrono::seconds(5));
  };
  if (!testing::eventually([&] { return AmqpChannel(port).ok; }, std::chrono::seconds(90))) {
    stopNode();
    throw std::runtime_error("rabbitmq-server did not start");
  }
  AmqpChannel admin(port);
  admin.declare("bare");
  admin.declare("bench");
  const double bare = bareLoop(n, [&] {
    auto channel = std::make_shared<AmqpChannel>(port);
    amqp_confirm_select(channel->state, 1);
    amqp_get_rpc_reply(channel->state);
    return [&config, channel](size_t i) {
      const std::string& body = config.bodies[i % config.bodies.size()];
      amqp_basic_properties_t properties{};
      properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
      properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
      if (amqp_basic_publish(channel->state, 1, amqp_empty_bytes, amqp_cstring_bytes("bare"), 1, 0,
                             &properties, amqp_bytes_t{body.size(), const_cast<char*>(body.data())}) !=
          AMQP_STATUS_OK)
        return false;
      amqp_frame_t frame;
      return amqp_simple_wait_frame(channel->state, &frame) == AMQP_STATUS_OK &&
             frame.frame_type == AMQP_FRAME_METHOD &&
             frame.payload.method.id == AMQP_BASIC_ACK_METHOD;
    };
  });
  bool drained = false;
  const double rate = drainThrough(
      config, TargetType::kAmqp, {{"url", "amqp://127.0.0.1:" + std::to_string(port)}, {"routing_key", "bench"}},
      n, [&] { return admin.declare("bench"); }, drained);
  stopNode();
  report(out, "amqp", rate, bare, "bare confirmed publish loop, librabbitmq, 8 connections", drained,
         n);
}

// --- Pull ---

// Leases 100 at a time and acks them until `n` are acked or the drain cap
// passes; the rate in acks/s and whether all were.
double leaseAndAck(const BenchConfig& config, BenchDaemon& daemon, const std::string& targetPath,
                   size_t n, bool& drained) {
  size_t acked = 0;
  const auto start = Clock::now();
  const auto deadline = start + config.drainCap;
  while (acked < n && Clock::now() < deadline) {
    const auto lease = nlohmann::json::parse(daemon.adminPost(
        targetPath + "/lease", nlohmann::json{{"count", 100}, {"lease_seconds", 60}}.dump()));
    std::vector<std::string> ids;
    for (const auto& d : lease.at("deliveries")) ids.push_back(d.at("id"));
    if (ids.empty()) continue;  // the daemon is still recovering the backlog
    const auto answer = nlohmann::json::parse(daemon.adminPost(
        targetPath + "/ack", nlohmann::json{{"lease", lease.at("lease")}, {"ids", ids}}.dump()));
    for (const auto& r : answer.at("results")) acked += r.value("status", "") == "delivered";
  }
  drained = acked >= n;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return seconds > 0 ? static_cast<double>(acked) / seconds : 0;
}

void runPull(const BenchConfig& config, Report& out, size_t n) {
  double deliverRate = 0;
  {
    testing::TempDir data;
    BenchReceiver receiver(config.workers);
    {
      Seeder seeder(data.path());
      seedWebhook(seeder, "deliver", {{receiver.url(), config.workers}}, n, config.bodies);
    }
    deliverRate = drainBacklog(config, data.path(), receiver, n).rate(receiver);
  }
  testing::TempDir data;
  WebhookExpectation seeded;
  {
    Seeder seeder(data.path());
    SeedTarget seed;
    seed.type = TargetType::kPull;
    seed.configJson = "{}";
    seeded = seedWebhook(seeder, "pull", {seed}, n, config.bodies);
  }
  BenchDaemon daemon(data.path(), config.daemonSettings());
  bool drained = false;
  const double rate = leaseAndAck(
      config, daemon, "/api/v1/webhooks/" + seeded.id + "/targets/" + seeded.targetIds.at(0), n,
      drained);
  daemon.stop();
  out.add({"queues", "pull: deliveries/s leased and acked, 100 a call, one consumer", rate, "1/s",
           deliverRate, "deliver: the same backlog drained to an http receiver", std::nullopt});
  std::vector<std::string> problems;
  if (!drained)
    problems.push_back("pull: not all " + std::to_string(n) + " acked within the drain cap");
  out.addCheck("queues", problems);
}

}  // namespace

void runQueues(const BenchConfig& config, Report& report) {
  runPull(config, report, config.queueEvents);
  runRedis(config, report, config.queueEvents);
  runNats(config, report, config.queueEvents);
  // RabbitMQ takes seconds to start: not in the smoke run.
  if (!config.smoke) runAmqp(config, report, config.queueEvents);
}

}  // namespace webhooker::bench
