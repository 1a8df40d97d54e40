// routed: what routing costs a delivery. The same closed-loop load goes
// through the daemon twice, to one http target: plain, then with a jq filter
// (run at ingest) and a jq transform (run at each attempt) on every event.
// Both rates are taken at the receiver, between its first and last arrival.
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"

namespace webhooker::bench {

void runRouted(const BenchConfig& config, Report& report) {
  LoadSpec spec;
  spec.connections = config.connections;
  spec.requests = std::max<size_t>(config.deliverBacklog / 5, 100);

  BenchReceiver plain(config.workers);
  loadThroughDaemon(config, spec, plain, "routed", report);
  // The generated bodies are GitHub- and Stripe-shaped JSON: the filter
  // passes every one, the transform reshapes every one.
  const nlohmann::json routing = {
      {"filter", {{"jq", ".body != null and (.headers | has(\"content-type\"))"}}},
      {"transform", {{"jq", "{type: .event_type, received_at, keys: (.body | keys), body}"}}}};
  BenchReceiver routed(config.workers);
  loadThroughDaemon(config, spec, routed, "routed", report, {}, nullptr, routing);

  report.add({"routed", "deliveries/s with a jq filter and transform on each", routed.arrivalRate(),
              "1/s", plain.arrivalRate(), "the same load without routing",
              Goal{Goal::Kind::kRatioAtLeast, 0.8}});
}

}  // namespace webhooker::bench
