// end to end: from the ingest request being due to the receiver having the
// delivery, at a steady rate (1,000 events/s), through the real daemon with
// one http target. Baseline: the same fixed-rate load posted straight to a
// receiver — one HTTP hop on this machine.
#include <chrono>

#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"

namespace webhooker::bench {

void runEndToEnd(const BenchConfig& config, Report& report) {
  LoadSpec spec = endToEndLoad(config);

  std::vector<double> hop;
  {
    BenchReceiver receiver(config.connections);
    spec.baseUrl = "http://127.0.0.1:" + std::to_string(receiver.port());
    spec.path = "/hook";
    spec.firstSeq = reserveSeqs(spec.requests);
    hop = deliveryLatencies(runLoad(spec, config.bodies), receiver);
  }

  BenchReceiver receiver(config.workers);
  const LoadResult result =
      loadThroughDaemon(config, spec, LoadTarget::http(receiver), "end-to-end", report);
  const std::vector<double> latencies = deliveryLatencies(result, receiver);

  report.add({"end-to-end", "ingest-to-receiver p50", percentile(latencies, 50), "ms",
              percentile(hop, 50), "one HTTP hop p50", std::nullopt});
  report.add({"end-to-end", "ingest-to-receiver p99", percentile(latencies, 99), "ms",
              percentile(hop, 99), "one HTTP hop p99", Goal{Goal::Kind::kValueAtMost, 20}});
  report.add({"end-to-end", "events delivered within the cap", static_cast<double>(latencies.size()),
              "", static_cast<double>(spec.requests), "events offered", std::nullopt});
  report.add({"end-to-end", "offered rate achieved", result.ratePerSecond(), "1/s", config.endToEndRate,
              "offered rate", std::nullopt});
}

}  // namespace webhooker::bench
