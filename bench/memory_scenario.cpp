// memory: the daemon's peak RSS while 1,000,000 deliveries are pending
// (seeded; every target is a blackhole, so none finishes while we look),
// against an idle daemon's peak RSS.
#include <chrono>
#include <thread>

#include "bench/blackhole.h"
#include "bench/correctness.h"
#include "bench/daemon.h"
#include "bench/load_generator.h"
#include "bench/scenarios.h"
#include "bench/scenario_support.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

void runMemory(const BenchConfig& config, Report& report) {
  testing::TempDir data;
  Blackhole target;
  std::vector<WebhookExpectation> webhooks;
  {
    Seeder seeder(data.path());
    const std::vector<SeedTarget> targets(static_cast<size_t>(config.memoryTargets), {target.url(), 4});
    for (int i = 0; i < config.memoryWebhooks; ++i) {
      webhooks.push_back(seedWebhook(seeder, "memory-" + std::to_string(i), targets,
                                     config.memoryEvents, config.bodies));
    }
  }
  const double idleRss = idleDaemonPeakRssMb();
  double rss = 0;
  {
    BenchDaemon daemon(data.path(), config.daemonSettings({"--shutdown-grace-ms", "100"}));
    if (!daemon.waitForLog("recovery.done", std::chrono::minutes(5)))
      report.addCheck("memory", {"the daemon never logged recovery.done"});
    std::this_thread::sleep_for(std::chrono::seconds(config.smoke ? 0 : 2));  // let the queues settle
    rss = daemon.peakRssMb();
    daemon.stop();
  }
  const size_t pending = static_cast<size_t>(config.memoryWebhooks * config.memoryTargets) *
                         config.memoryEvents;
  report.add({"memory", "peak RSS, " + std::to_string(pending) + " pending", rss, "MB", idleRss,
              "idle daemon peak RSS", Goal{Goal::Kind::kValueAtMost, 100}});
  report.addCheck("memory", checkCorrectness({data.path(), webhooks, {}, {}, {}}));
}

}  // namespace webhooker::bench
