// noisy-tenant: one webhook's ingest beside a hostile webhook's routing.
// Webhook Y has a cheap jq filter and takes small events at a fixed rate;
// its ingest answers' p99 is measured alone, then with webhook X beside it,
// whose filter loops through each event's whole jq time budget (100 ms, the
// daemon's default) and whose kHostileSenders senders post 5x what the jq
// workers could run of it. Each run has a daemon of its own, so X's
// throttle starts fresh in each. Y's events are all answered 200 (the
// correctness check): a wait for a jq worker is never Y's verdict.
#include <string>
#include <thread>
#include <vector>

#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

constexpr const char* kCheapFilter = ".body != null";
// Pure CPU, no allocation: it reaches the time budget, not the memory one.
constexpr const char* kHostileFilter = "reduce range(1e12) as $i (0; . + $i) > 0";
constexpr int kHostileSenders = 24;
// The default pool (2 workers, 100 ms) runs 20 such events a second.
constexpr double kHostileRate = 100;
constexpr double kFairRate = 100;
constexpr int kFairConnections = 4;

// Y's load, with X's beside it when `hostile`; Y's ingest latencies.
LoadResult fairLoad(const BenchConfig& config, bool hostile, double seconds) {
  testing::TempDir data;
  BenchDaemon daemon(data.path(), config.daemonSettings({}));
  BenchReceiver receiver(config.workers);
  const CreatedWebhook fair = daemon.createWebhook("fair");
  daemon.createHttpTarget(fair.id, receiver.url(), config.workers,
                          {{"filter", {{"jq", kCheapFilter}}}});
  const CreatedWebhook noisy = daemon.createWebhook("noisy");
  daemon.createHttpTarget(noisy.id, receiver.url(), config.workers,
                          {{"filter", {{"jq", kHostileFilter}}}});

  LoadSpec noisySpec;
  noisySpec.baseUrl = daemon.url();
  noisySpec.path = noisy.hookPath;
  noisySpec.connections = kHostileSenders;
  noisySpec.rate = kHostileRate;
  // Starts first and ends after Y's load.
  noisySpec.requests = static_cast<size_t>(kHostileRate * (seconds + 2));
  noisySpec.firstSeq = reserveSeqs(noisySpec.requests);
  std::thread noisyLoad;
  if (hostile) {
    noisyLoad = std::thread([&] { runLoad(noisySpec, config.smallBodies); });
    std::this_thread::sleep_for(std::chrono::seconds(1));  // X's senders are under way
  }
  LoadSpec fairSpec;
  fairSpec.baseUrl = daemon.url();
  fairSpec.path = fair.hookPath;
  fairSpec.connections = kFairConnections;
  fairSpec.rate = kFairRate;
  fairSpec.requests = static_cast<size_t>(kFairRate * seconds);
  fairSpec.firstSeq = reserveSeqs(fairSpec.requests);
  LoadResult result = runLoad(fairSpec, config.smallBodies);
  if (noisyLoad.joinable()) noisyLoad.join();
  daemon.stop();
  return result;
}

std::vector<std::string> unanswered(const LoadResult& load, const std::string& run) {
  std::vector<std::string> violations;
  const size_t failed = load.requests.size() - load.ok();
  if (failed > 0)
    violations.push_back(run + ": " + std::to_string(failed) + " of webhook Y's " +
                         std::to_string(load.requests.size()) + " events not answered 200");
  return violations;
}

}  // namespace

void runNoisyTenant(const BenchConfig& config, Report& report) {
  const double seconds = config.smoke ? 1 : 10;
  const LoadResult alone = fairLoad(config, false, seconds);
  const LoadResult beside = fairLoad(config, true, seconds);
  std::vector<std::string> violations = unanswered(alone, "alone");
  for (std::string& v : unanswered(beside, "beside a hostile webhook")) violations.push_back(v);
  report.addCheck("noisy-tenant", std::move(violations));
  report.add({"noisy-tenant", "webhook Y's ingest p99 beside a hostile X",
              beside.latencyPercentile(99), "ms", alone.latencyPercentile(99), "webhook Y alone",
              Goal{Goal::Kind::kRatioAtMost, 2}});
  report.add({"noisy-tenant", "webhook Y's ingest p50 beside a hostile X",
              beside.latencyPercentile(50), "ms", alone.latencyPercentile(50), "webhook Y alone",
              std::nullopt});
}

}  // namespace webhooker::bench
