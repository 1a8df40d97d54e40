// isolation: a fast target's delivery rate while another target of the same
// webhook answers every request after 2 s, against the same fast target
// alone. Both runs drain the same seeded backlog; the slow target keeps the
// API's default max_concurrency (4) of the daemon's workers.
#include <chrono>

#include "bench/correctness.h"
#include "bench/daemon.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenarios.h"
#include "bench/seeder.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

constexpr auto kSlowAnswer = std::chrono::seconds(2);
constexpr int kSlowConcurrency = 4;

// Drains `n` seeded events to `fast` (and `slow`, when given); returns the
// fast receiver's rate and adds the correctness check as `checkName`.
double drainFast(const BenchConfig& config, BenchReceiver& fast, BenchReceiver* slow,
                 const std::string& checkName, Report& report) {
  const size_t n = config.isolationEvents;
  testing::TempDir data;
  std::vector<SeedTarget> targets = {{fast.url(), config.workers}};
  if (slow) targets.push_back({slow->url(), kSlowConcurrency});
  WebhookExpectation expectation;
  {
    Seeder seeder(data.path());
    const SeededWebhook webhook = seeder.createWebhook("isolation", targets);
    const int64_t first = reserveSeqs(n);
    seeder.addEvents(webhook, n, config.bodies, first);
    expectation = {webhook.id, webhook.targetIds, {}};
    for (size_t i = 0; i < n; ++i) expectation.acceptedSeqs.push_back(first + static_cast<int64_t>(i));
  }
  bool drained = false;
  SteadyTime end;
  {
    BenchDaemon daemon(data.path(), config.daemonSettings());
    drained = fast.waitForCount(n, config.drainCap);
    end = std::chrono::steady_clock::now();
    daemon.stop();
  }
  std::map<std::string, const BenchReceiver*> receivers = {{expectation.targetIds.at(0), &fast}};
  if (slow) receivers[expectation.targetIds.at(1)] = slow;
  report.addCheck(checkName, checkCorrectness({data.path(), {expectation}, receivers,
                                               drained ? std::set{expectation.targetIds.at(0)} : std::set<std::string>{}}));
  return fast.arrivalRate(drained ? std::nullopt : std::optional(end));
}

}  // namespace

void runIsolation(const BenchConfig& config, Report& report) {
  BenchReceiver alone(config.workers);
  const double aloneRate = drainFast(config, alone, nullptr, "isolation (alone)", report);
  BenchReceiver fast(config.workers);
  BenchReceiver slow(2 * kSlowConcurrency, kSlowAnswer);
  const double withNeighbour = drainFast(config, fast, &slow, "isolation", report);
  report.add({"isolation", "fast target deliveries/s, slow neighbour", withNeighbour, "1/s", aloneRate,
              "the fast target alone", Goal{Goal::Kind::kRatioAtLeast, 0.9}});
}

}  // namespace webhooker::bench
