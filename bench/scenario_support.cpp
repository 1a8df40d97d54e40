#include "bench/scenario_support.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "bench/daemon.h"
#include "bench/process_cpu.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

WebhookExpectation seedWebhook(Seeder& seeder, const std::string& name,
                               const std::vector<SeedTarget>& targets, size_t n,
                               const std::vector<std::string>& bodies,
                               std::optional<TimePoint> retryAt) {
  const SeededWebhook webhook = seeder.createWebhook(name, targets);
  const int64_t first = reserveSeqs(n);
  seeder.addEvents(webhook, n, bodies, first, retryAt);
  WebhookExpectation expectation{webhook.id, webhook.targetIds, {}};
  for (size_t i = 0; i < n; ++i) expectation.acceptedSeqs.push_back(first + static_cast<int64_t>(i));
  return expectation;
}

int portOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

ReceiverSet makeReceivers(size_t count, int threads, std::chrono::milliseconds delay) {
  ReceiverSet receivers;
  for (size_t i = 0; i < count; ++i) receivers.push_back(std::make_unique<BenchReceiver>(threads, delay));
  return receivers;
}

void addCheckAfterWait(Report& report, const std::string& scenario, const BenchConfig& config,
                       bool waitFinished, const CorrectnessSpec& spec) {
  std::vector<std::string> violations;
  if (!waitFinished)
    violations.push_back("the deliveries did not all arrive within the " +
                         std::to_string(config.drainCap.count()) + " s cap");
  for (std::string& v : checkCorrectness(spec)) violations.push_back(std::move(v));
  report.addCheck(scenario, std::move(violations));
}

double Drain::rate(const BenchReceiver& receiver) const {
  return receiver.arrivalRate(drained ? std::nullopt : std::optional(end));
}

Drain drainBacklog(const BenchConfig& config, const std::filesystem::path& dataDir,
                   const BenchReceiver& receiver, size_t n) {
  BenchDaemon daemon(dataDir, config.daemonSettings());
  Drain drain;
  drain.drained = receiver.waitForCount(n, config.drainCap);
  drain.end = std::chrono::steady_clock::now();
  drain.daemonCpuSeconds = processTreeCpuSeconds(daemon.pid());
  daemon.stop();
  return drain;
}

MultiDrain drainBacklog(const BenchConfig& config, const std::filesystem::path& dataDir,
                        const std::vector<ExpectedArrivals>& expected) {
  BenchDaemon daemon(dataDir, config.daemonSettings());
  MultiDrain drain;
  const auto deadline = std::chrono::steady_clock::now() + config.drainCap;
  drain.drained = true;
  for (const ExpectedArrivals& e : expected) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    drain.drained = drain.drained && e.receiver->waitForCount(e.count, std::max(left, {}));
  }
  const SteadyTime end = std::chrono::steady_clock::now();
  drain.daemonCpuSeconds = processTreeCpuSeconds(daemon.pid());
  daemon.stop();
  std::vector<SteadyTime> times;
  for (const ExpectedArrivals& e : expected)
    for (const Arrival& a : e.receiver->arrivals()) times.push_back(a.at);
  if (times.size() >= 2) {
    const auto [first, last] = std::minmax_element(times.begin(), times.end());
    const double seconds =
        std::chrono::duration<double>((drain.drained ? *last : end) - *first).count();
    if (seconds > 0) drain.rate = static_cast<double>(times.size() - 1) / seconds;
  }
  return drain;
}

LoadSpec endToEndLoad(const BenchConfig& config) {
  LoadSpec spec;
  spec.connections = config.connections;
  spec.rate = config.endToEndRate;
  spec.requests = static_cast<size_t>(config.endToEndRate * config.endToEndSeconds);
  return spec;
}

std::vector<double> deliveryLatencies(const LoadResult& load, const BenchReceiver& receiver) {
  std::unordered_map<int64_t, SteadyTime> arrived;
  for (const Arrival& a : receiver.arrivals()) arrived.emplace(a.seq, a.at);
  std::vector<double> latencies;
  for (const RequestOutcome& r : load.requests) {
    const auto a = arrived.find(r.seq);
    if (r.status == 200 && a != arrived.end())
      latencies.push_back(std::chrono::duration<double, std::milli>(a->second - r.due).count());
  }
  return latencies;
}

LoadResult loadThroughDaemon(const BenchConfig& config, LoadSpec spec, LoadTarget target,
                             const std::string& scenario, Report& report,
                             std::vector<std::string> extraArgs, const LoadRunner& runner,
                             const nlohmann::json& routing) {
  testing::TempDir data;
  BenchDaemon daemon(data.path(), config.daemonSettings(std::move(extraArgs)));
  const CreatedWebhook webhook = daemon.createWebhook(scenario);
  std::string targetId;
  if (target.kind == LoadTarget::Kind::kHttp)
    targetId = daemon.createHttpTarget(webhook.id, target.receiver->url(), config.workers, routing);
  else if (target.kind == LoadTarget::Kind::kDatabase)
    targetId = daemon.createDatabaseTarget(webhook.id, config.workers);
  spec.baseUrl = daemon.url();
  spec.path = spec.signingSecret.empty()
                  ? webhook.hookPath
                  : daemon.createVerifiedEntrypoint(webhook.id, spec.signingSecret);
  spec.firstSeq = reserveSeqs(spec.requests);
  LoadResult result = runner ? runner(daemon, spec) : runLoad(spec, config.bodies);
  bool delivered = true;
  if (target.kind == LoadTarget::Kind::kHttp)
    delivered = target.receiver->waitForCount(result.ok(), config.drainCap);
  else if (target.kind == LoadTarget::Kind::kDatabase) {
    // Read beside the daemon's writer, as a WAL reader.
    SQLite::Database db((data.path() / ("events-" + webhook.id + ".db")).string(),
                        SQLite::OPEN_READONLY);
    delivered = testing::eventually(
        [&] {
          return static_cast<size_t>(
                     db.execAndGet("SELECT COUNT(*) FROM deliveries WHERE status = 'delivered'")
                         .getInt64()) >= result.ok();
        },
        config.drainCap);
  }
  daemon.stop();

  WebhookExpectation expectation{webhook.id, {}, result.acceptedSeqs()};
  CorrectnessSpec check{data.path(), {}, {}, {}, {}};
  if (!targetId.empty()) {
    expectation.targetIds = {targetId};
    check.drainedTargets = {targetId};
  }
  if (target.receiver) {
    check.receivers = {{targetId, target.receiver}};
    if (routing.contains("transform")) check.reshapedTargets.insert(targetId);
  }
  check.webhooks = {expectation};
  addCheckAfterWait(report, scenario, config, delivered, check);
  return result;
}

LoadRunner measuringCpu(const BenchConfig& config, BenchReceiver* receiver, double& cpuPerEvent) {
  return [&config, receiver, &cpuPerEvent](BenchDaemon& daemon, const LoadSpec& load) {
    const CpuMeter cpu(daemon.pid());
    LoadResult result = runLoad(load, config.bodies);
    if (receiver) receiver->waitForCount(result.ok(), config.drainCap);
    cpuPerEvent = cpu.secondsPer(result.ok());
    return result;
  };
}

}  // namespace webhooker::bench
