// isolation: a fast target's delivery rate while another target of the same
// webhook answers every request after 2 s, against the same fast target
// alone. Both runs drain the same seeded backlog; the slow target keeps the
// API's default max_concurrency (4) of the daemon's workers.
#include <chrono>

#include "bench/correctness.h"
#include "bench/receiver.h"
#include "bench/scenarios.h"
#include "bench/scenario_support.h"
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
    expectation = seedWebhook(seeder, "isolation", targets, n, config.bodies);
  }
  const Drain drain = drainBacklog(config, data.path(), fast, n);
  std::map<std::string, const BenchReceiver*> receivers = {{expectation.targetIds.at(0), &fast}};
  if (slow) receivers[expectation.targetIds.at(1)] = slow;
  report.addCheck(checkName, checkCorrectness({data.path(), {expectation}, receivers,
                                               std::set{expectation.targetIds.at(0)}, {}}));
  return drain.rate(fast);
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
