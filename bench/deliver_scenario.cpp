// deliver: how fast the daemon drains a backlog to one fast http target,
// against a bare keep-alive client loop posting the same bodies to the same
// kind of receiver with the same concurrency (the daemon's worker count).
// Both rates are taken at the receiver, between its first and last arrival.
#include <chrono>

#include "bench/correctness.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenarios.h"
#include "bench/scenario_support.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

void runDeliver(const BenchConfig& config, Report& report) {
  const size_t n = config.deliverBacklog;
  double bareRate = 0;
  {
    BenchReceiver receiver(config.workers);
    LoadSpec spec;
    spec.baseUrl = "http://127.0.0.1:" + std::to_string(receiver.port());
    spec.path = "/hook";
    spec.connections = config.workers;
    spec.requests = n;
    spec.firstSeq = reserveSeqs(n);
    runLoad(spec, config.bodies);
    bareRate = receiver.arrivalRate();
  }

  testing::TempDir data;
  BenchReceiver receiver(config.workers);
  WebhookExpectation expectation;
  {
    Seeder seeder(data.path());
    expectation = seedWebhook(seeder, "deliver", {{receiver.url(), config.workers}}, n, config.bodies);
  }
  const Drain drain = drainBacklog(config, data.path(), receiver, n);
  report.add({"deliver", "deliveries/s draining the backlog", drain.rate(receiver), "1/s", bareRate,
              "bare keep-alive client loop req/s", Goal{Goal::Kind::kRatioAtLeast, 0.6}});
  report.add({"deliver", "deliveries/s while deliveries arrived", receiver.arrivalRate(), "1/s",
              bareRate, "bare keep-alive client loop req/s", std::nullopt});
  report.add({"deliver", "delivered within the cap", static_cast<double>(receiver.count()), "",
              static_cast<double>(n), "backlog", std::nullopt});
  const std::string target = expectation.targetIds.at(0);
  report.addCheck("deliver", checkCorrectness({data.path(), {expectation}, {{target, &receiver}},
                                               std::set{target}}));
}

}  // namespace webhooker::bench
