// ingest: events/s the daemon acknowledges (durable, synchronous=FULL) and
// their latency, against a bare cpp-httplib server with the same thread count
// that answers 200 without storing. The webhook has one http target, so the
// deliveries run alongside as they would in production; the run ends when
// the receiver has every event.
#include <chrono>

#include "bench/bare_server.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"

namespace webhooker::bench {

void runIngest(const BenchConfig& config, Report& report) {
  LoadSpec spec;
  spec.connections = config.connections;
  spec.requests = config.ingestEvents;

  LoadResult bare;
  {
    BareServer server(config.connections);
    spec.baseUrl = server.url();
    spec.path = "/hooks/00000000-0000-4000-8000-000000000000";
    spec.firstSeq = reserveSeqs(spec.requests);
    bare = runLoad(spec, config.bodies);
  }

  BenchReceiver receiver;
  const LoadResult result = loadThroughDaemon(config, spec, receiver, "ingest", report);

  report.add({"ingest", "events/s acknowledged", result.ratePerSecond(), "1/s", bare.ratePerSecond(),
              "bare httplib server req/s", Goal{Goal::Kind::kRatioAtLeast, 0.5}});
  report.add({"ingest", "p50 latency", result.latencyPercentile(50), "ms", bare.latencyPercentile(50),
              "bare server p50", std::nullopt});
  report.add({"ingest", "p99 latency", result.latencyPercentile(99), "ms", bare.latencyPercentile(99),
              "bare server p99", std::nullopt});
  report.add({"ingest", "requests not acknowledged", static_cast<double>(spec.requests - result.ok()),
              "req", static_cast<double>(spec.requests - bare.ok()), "bare server failures", std::nullopt});
}

}  // namespace webhooker::bench
