// isolation: a fast target's delivery rate while ten other targets of the
// same webhook answer every request after 2 s, against the same fast target
// alone. Both runs drain the same seeded backlog. Each slow target keeps the
// API's default max_concurrency (4): together they could hold 40 requests
// in flight, five times the daemon's workers, so per-target limits alone do
// not keep the fast target served.
//
// The same pair again with live traffic: events posted at the end-to-end
// scenario's rate, each to be delivered to the fast target and to each slow
// one, whose backlogs grow all the while (to 10,000 each at the normal
// sizes), with the sweep every second. What is measured is the fast
// target's ingest-to-receiver latency. A drain of a seeded backlog ends
// before the first sweep and with no ingest beside it, so it cannot show a
// fast target starved by its neighbours' new tasks or by a sweep
// re-admitting their backlog.
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/correctness.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
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
// The live runs' sweep: every second instead of every minute, so that it
// runs while the load lasts.
constexpr const char* kLiveSweepMs = "1000";

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

struct LiveRun {
  std::vector<double> toFast;  // per event: due to arrival at the fast receiver, ms
  double ackP50 = 0;           // the ingest answers' median latency, ms
};

// Posts the end-to-end load to a webhook whose targets are `fast` and one
// per `slow`; measures it and adds the correctness check as `checkName`
// (only the fast target's deliveries must all be delivered).
LiveRun liveToFast(BenchConfig config, BenchReceiver& fast, const ReceiverSet& slow,
                   const std::string& checkName, Report& report) {
  config.drainCap = std::min(config.drainCap, kFastDrainCap);
  testing::TempDir data;
  BenchDaemon daemon(data.path(), config.daemonSettings({"--sweep-interval-ms", kLiveSweepMs}));
  const CreatedWebhook webhook = daemon.createWebhook("isolation-live");
  std::vector<std::string> targetIds = {
      daemon.createHttpTarget(webhook.id, fast.url(), config.workers)};
  for (const auto& receiver : slow)
    targetIds.push_back(daemon.createHttpTarget(webhook.id, receiver->url(), kSlowConcurrency));
  LoadSpec spec = endToEndLoad(config);
  spec.baseUrl = daemon.url();
  spec.path = webhook.hookPath;
  spec.firstSeq = reserveSeqs(spec.requests);
  const LoadResult load = runLoad(spec, config.bodies);
  const bool delivered = fast.waitForCount(load.ok(), config.drainCap);
  daemon.stop();

  CorrectnessSpec check{
      data.path(), {{webhook.id, targetIds, load.acceptedSeqs()}}, {}, {targetIds.at(0)}, {}};
  check.receivers[targetIds.at(0)] = &fast;
  for (size_t i = 0; i < slow.size(); ++i) check.receivers[targetIds.at(i + 1)] = slow[i].get();
  addCheckAfterWait(report, checkName, config, delivered, check);
  return {deliveryLatencies(load, fast), load.latencyPercentile(50)};
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

  BenchReceiver liveAlone(config.workers);
  const LiveRun liveAloneRun = liveToFast(config, liveAlone, {}, "isolation, live (alone)", report);
  BenchReceiver liveFast(config.workers);
  const ReceiverSet liveSlow = makeReceivers(kSlowTargets, 2 * kSlowConcurrency, kSlowAnswer);
  const LiveRun liveBesideRun = liveToFast(config, liveFast, liveSlow, "isolation, live", report);
  for (const double p : {50.0, 99.0, 100.0}) {
    const std::string name = p == 100 ? "max" : "p" + std::to_string(static_cast<int>(p));
    report.add({"isolation", "live: fast target ingest-to-receiver " + name + ", " + beside,
                percentile(liveBesideRun.toFast, p), "ms", percentile(liveAloneRun.toFast, p),
                "the fast target alone", std::nullopt});
  }
  // Every event is stored with eleven deliveries beside the neighbours, one
  // alone: the commit's share of the latency above.
  report.add({"isolation", "live: ingest answer p50, " + beside, liveBesideRun.ackP50, "ms",
              liveAloneRun.ackP50, "the fast target alone", std::nullopt});
}

}  // namespace webhooker::bench
