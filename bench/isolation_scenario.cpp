// isolation: a fast target's delivery rate while ten other targets of the
// same webhook answer every request after 2 s, against the same fast target
// alone. Both runs drain the same seeded backlog. Each slow target keeps the
// API's default max_concurrency (4): together they could hold 40 requests
// in flight, five times the daemon's workers, so per-target limits alone do
// not keep the fast target served.
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/correctness.h"
#include "bench/receiver.h"
#include "bench/scenarios.h"
#include "bench/scenario_support.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

constexpr int kSlowTargets = 10;
constexpr auto kSlowAnswer = std::chrono::seconds(2);
constexpr int kSlowConcurrency = 4;
// A fast target that keeps 0.9 of its own rate drains the backlog in
// seconds; one held up by its neighbours may take hours, and the scenario
// stops waiting here (the check then reports what was left undelivered).
constexpr auto kFastDrainCap = std::chrono::seconds(20);

struct FastDrain {
  double rate = 0;  // deliveries/s
  double longestPauseMs = 0;
};

// Drains `n` seeded events to `fast` and to each of `slow` (a target each);
// measures the fast receiver and adds the correctness check as
// `checkName`. Only the fast target's deliveries must all be delivered.
FastDrain drainFast(BenchConfig config, BenchReceiver& fast, const ReceiverSet& slow,
                 const std::string& checkName, Report& report) {
  config.drainCap = std::min(config.drainCap, kFastDrainCap);
  const size_t n = config.isolationEvents;
  testing::TempDir data;
  std::vector<SeedTarget> targets = {{fast.url(), config.workers}};
  for (const auto& receiver : slow) targets.push_back({receiver->url(), kSlowConcurrency});
  WebhookExpectation expectation;
  {
    Seeder seeder(data.path());
    expectation = seedWebhook(seeder, "isolation", targets, n, config.bodies);
  }
  const Drain drain = drainBacklog(config, data.path(), fast, n);
  CorrectnessSpec check{data.path(), {expectation}, {}, {expectation.targetIds.at(0)}, {}};
  check.receivers[expectation.targetIds.at(0)] = &fast;
  for (size_t i = 0; i < slow.size(); ++i) check.receivers[expectation.targetIds.at(i + 1)] = slow[i].get();
  addCheckAfterWait(report, checkName, config, drain.drained, check);
  return {drain.rate(fast), fast.longestPause().count()};
}

}  // namespace

void runIsolation(const BenchConfig& config, Report& report) {
  BenchReceiver alone(config.workers);
  const FastDrain aloneDrain = drainFast(config, alone, {}, "isolation (alone)", report);
  BenchReceiver fast(config.workers);
  // Threads to spare beyond each target's limit: the receiver is never what
  // holds a slow target back.
  const ReceiverSet slow = makeReceivers(kSlowTargets, 2 * kSlowConcurrency, kSlowAnswer);
  const FastDrain withNeighbours = drainFast(config, fast, slow, "isolation", report);
  const std::string beside = std::to_string(kSlowTargets) + " slow neighbours";
  report.add({"isolation", "fast target deliveries/s, " + beside, withNeighbours.rate, "1/s",
              aloneDrain.rate, "the fast target alone", Goal{Goal::Kind::kRatioAtLeast, 0.9}});
  // A stall of the whole webhook (a long hold of its events DB) shows here
  // even where the rate over the drain hides it.
  report.add({"isolation", "fast target's longest pause, " + beside, withNeighbours.longestPauseMs,
              "ms", aloneDrain.longestPauseMs, "the fast target alone", std::nullopt});
}

}  // namespace webhooker::bench
