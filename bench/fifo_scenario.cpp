// fifo: how fast a FIFO target ("ordering": "fifo") delivers, one event at
// a time, to a receiver that answers in 1 ms and in 10 ms, against a bare
// client loop posting one request at a time to the same receiver (1/RTT,
// the most any strictly ordered sender can do). The backlog is seeded into
// the events DB before the daemon starts, so the rate at the receiver is the
// FIFO lane's alone. The checks: the usual correctness check, and that the
// receiver saw the events in the order they were stored.
#include <chrono>
#include <string>
#include <vector>

#include "bench/correctness.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

void measure(const BenchConfig& config, Report& report, std::chrono::milliseconds answerTime,
             size_t n) {
  const std::string label = std::to_string(answerTime.count()) + " ms";
  double bareRate = 0;
  {
    BenchReceiver receiver(1, answerTime);
    LoadSpec spec;
    spec.baseUrl = "http://127.0.0.1:" + std::to_string(receiver.port());
    spec.path = "/hook";
    spec.connections = 1;
    spec.requests = n;
    spec.firstSeq = reserveSeqs(n);
    runLoad(spec, config.bodies);
    bareRate = receiver.arrivalRate();
  }

  testing::TempDir data;
  BenchReceiver receiver(1, answerTime);
  WebhookExpectation expectation;
  {
    Seeder seeder(data.path());
    expectation = seedWebhook(seeder, "fifo", {{receiver.url(), 1, TargetOrdering::kFifo}}, n,
                              config.bodies);
  }
  const Drain drain = drainBacklog(config, data.path(), receiver, n);
  report.add({"fifo", "deliveries/s, receiver answering in " + label, drain.rate(receiver), "1/s",
              bareRate, "one-at-a-time client loop req/s (1/RTT)", std::nullopt});
  const std::string target = expectation.targetIds.at(0);
  addCheckAfterWait(report, "fifo", config, drain.drained,
                    {data.path(), {expectation}, {{target, &receiver}}, std::set{target}, {}});
  std::vector<std::string> problems;
  int64_t last = -1;
  for (const Arrival& a : receiver.arrivals()) {
    if (a.seq < 0) continue;
    if (a.seq == last) continue;  // a resend of the last one
    if (a.seq < last) {
      problems.push_back("an event arrived after a later one (" + label + ")");
      break;
    }
    last = a.seq;
  }
  report.addCheck("fifo", problems);
}

}  // namespace

void runFifo(const BenchConfig& config, Report& report) {
  measure(config, report, std::chrono::milliseconds(1), config.fifoEvents);
  measure(config, report, std::chrono::milliseconds(10), config.fifoEvents / 4);
}

}  // namespace webhooker::bench
