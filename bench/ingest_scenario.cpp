// ingest: events/s the daemon acknowledges (durable, synchronous=FULL) and
// their latency at 8, 64 and 256 keep-alive connections, each against a
// bare cpp-httplib server with a thread per connection that answers 200
// without storing. The webhook has one http target, so the deliveries run
// alongside as they would in production; each run ends when the receiver
// has every event. More connections means more events in flight, so larger
// group commits: the daemon is asked to batch as deep as the senders allow.
//
// At 64 connections (ingestAloneConnections) the same load also goes to an
// entrypoint verifying Standard Webhooks signatures (each request signed by
// the load generator), to a webhook whose one target is a database target (each delivery records the
// stored event: the engine's and the result write's share, without a second
// HTTP hop on the cores) and to one with no target (the front door and the
// commit alone).
//
// Rates are steady rates (LoadResult::steadyRatePerSecond): a bare-server
// run lasts about a second, and its whole-run rate would mostly measure the
// connections opening and the threads starting.
//
// At that count the rows with an http target and with none also give the
// machine's CPU per acknowledged event (the daemon's, until its deliveries
// have all arrived, and this process's: the load generator and the
// receiver) against the bare run's per request (its server and the load
// generator, both in this process). On a machine whose cores the load keeps
// busy, the rate ratio cannot pass the inverse of that one.
#include <chrono>
#include <string>

#include "bench/bare_server.h"
#include "bench/load_generator.h"
#include "bench/process_cpu.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"

namespace webhooker::bench {

void runIngest(const BenchConfig& config, Report& report) {
  for (const int connections : config.ingestConnections) {
    LoadSpec spec;
    spec.connections = connections;
    spec.requests = config.ingestEvents;

    LoadResult bare;
    double bareCpu = 0;
    {
      BareServer server(connections);
      spec.baseUrl = server.url();
      spec.path = "/hooks/00000000-0000-4000-8000-000000000000";
      spec.firstSeq = reserveSeqs(spec.requests);
      const CpuMeter cpu;
      bare = runLoad(spec, config.bodies);
      bareCpu = cpu.secondsPer(bare.ok());
    }

    const bool alsoAlone = connections == config.ingestAloneConnections;
    BenchReceiver receiver;
    double httpCpu = 0;
    const std::string at = " at " + std::to_string(connections) + " conns";
    const LoadResult result = loadThroughDaemon(
        config, spec, LoadTarget::http(receiver), "ingest-" + std::to_string(connections), report,
        {}, alsoAlone ? measuringCpu(config, &receiver, httpCpu) : LoadRunner());

    // The goal is at 64 connections (the compass is 0.5).
    const std::optional<Goal> goal = connections == 64
                                         ? std::optional(Goal{Goal::Kind::kRatioAtLeast, 0.35})
                                         : std::nullopt;
    report.add({"ingest", "events/s acknowledged" + at, result.steadyRatePerSecond(), "1/s",
                bare.steadyRatePerSecond(), "bare httplib server req/s", goal});
    report.add({"ingest", "p50 latency" + at, result.latencyPercentile(50), "ms",
                bare.latencyPercentile(50), "bare server p50", std::nullopt});
    report.add({"ingest", "p99 latency" + at, result.latencyPercentile(99), "ms",
                bare.latencyPercentile(99), "bare server p99", std::nullopt});
    report.add({"ingest", "requests not acknowledged" + at,
                static_cast<double>(spec.requests - result.ok()), "req",
                static_cast<double>(spec.requests - bare.ok()), "bare server failures",
                std::nullopt});

    if (!alsoAlone) continue;
    const auto addCpu = [&](double seconds, const std::string& how) {
      report.add({"ingest", "CPU per event" + at + how, seconds * 1e6, "us", bareCpu * 1e6,
                  "bare server + load generator CPU per request", std::nullopt});
    };
    addCpu(httpCpu, "");
    const auto addVariant = [&](const LoadResult& r, const std::string& how) {
      report.add({"ingest", "events/s acknowledged" + at + ", " + how, r.steadyRatePerSecond(),
                  "1/s", bare.steadyRatePerSecond(), "bare httplib server req/s", std::nullopt});
      report.add({"ingest", "p99 latency" + at + ", " + how, r.latencyPercentile(99), "ms",
                  bare.latencyPercentile(99), "bare server p99", std::nullopt});
    };
    addVariant(loadThroughDaemon(config, spec, LoadTarget::database(), "ingest-database", report),
              "database target");
    // The same load with every request signed and verified (Standard
    // Webhooks): what verification costs the rate. The goal is at most 10 %.
    {
      BenchReceiver verifiedReceiver;
      LoadSpec signedSpec = spec;
      signedSpec.signingSecret = "whsec_YmVuY2gtdmVyaWZpY2F0aW9uLXNlY3JldC0zMmJ5dGVz";
      const LoadResult verified =
          loadThroughDaemon(config, signedSpec, LoadTarget::http(verifiedReceiver),
                            "ingest-verified", report);
      report.add({"ingest", "events/s acknowledged" + at + ", Standard Webhooks verification",
                  verified.steadyRatePerSecond(), "1/s", result.steadyRatePerSecond(),
                  "events/s acknowledged" + at + " unsigned", Goal{Goal::Kind::kRatioAtLeast, 0.9}});
    }
    double aloneCpu = 0;
    addVariant(loadThroughDaemon(config, spec, LoadTarget::none(), "ingest-alone", report, {},
                                 measuringCpu(config, nullptr, aloneCpu)),
               "no target");
    addCpu(aloneCpu, ", no target");
  }
}

}  // namespace webhooker::bench
