// routed: what routing costs a delivery. The same closed-loop load goes
// through the daemon twice, to one http target: plain, then with a jq filter
// (run at ingest) and a jq transform (run at each attempt) on every event.
// Both rates are taken at the receiver, between its first and last arrival.
//
// libjq's own work on each event (parsing a 7 KB body twice, writing the
// transformed one) is a cost no isolation can remove, and on this machine
// it is about half what the whole plain path costs. So the goal compares the
// routed rate with the plain rate less that work: the plain run's CPU per
// event (daemon, jq workers, load generator and receiver), plus libjq's own
// CPU per event measured in this process on the same programs and inputs.
#include <string>
#include <vector>

#include "bench/bare_jq.h"
#include "bench/load_generator.h"
#include "bench/process_cpu.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "routing/routing_rules.h"

namespace webhooker::bench {

namespace {

// The generated bodies are GitHub- and Stripe-shaped JSON: the filter
// passes every one, the transform reshapes every one.
constexpr const char* kFilter = ".body != null and (.headers | has(\"content-type\"))";
constexpr const char* kTransform = "{type: .event_type, received_at, keys: (.body | keys), body}";

struct MeasuredLoad {
  double rate = 0;         // deliveries/s at the receiver
  double cpuPerEvent = 0;  // CPU seconds of the daemon tree and this process
};

MeasuredLoad measuredLoad(const BenchConfig& config, const LoadSpec& spec, Report& report,
                          const nlohmann::json& routing) {
  BenchReceiver receiver(config.workers);
  double cpuPerEvent = 0;
  loadThroughDaemon(config, spec, LoadTarget::http(receiver), "routed", report, {},
                    measuringCpu(config, &receiver, cpuPerEvent), routing);
  return {receiver.arrivalRate(), cpuPerEvent};
}

// The jq input of each body, as the daemon builds it from a stored event.
std::vector<std::string> jqInputs(const std::vector<std::string>& bodies) {
  std::vector<std::string> inputs;
  for (const std::string& body : bodies) {
    const HeaderList headers = {{"Host", "127.0.0.1:8080"},     {"User-Agent", "cpp-httplib/0.11"},
                                {"Content-Type", "application/json"},
                                {"Content-Length", std::to_string(body.size())},
                                {kSeqHeader, "1"}};
    inputs.push_back(jqInput(eventTypeWithoutJq({}, headers, body), headers, body,
                             "2026-01-01T00:00:00.000Z"));
  }
  return inputs;
}

}  // namespace

void runRouted(const BenchConfig& config, Report& report) {
  LoadSpec spec;
  spec.connections = config.connections;
  spec.requests = std::max<size_t>(config.deliverBacklog / 5, 100);

  const MeasuredLoad plain = measuredLoad(config, spec, report, nlohmann::json::object());
  const MeasuredLoad routed = measuredLoad(
      config, spec, report, {{"filter", {{"jq", kFilter}}}, {"transform", {{"jq", kTransform}}}});

  const std::vector<std::string> inputs = jqInputs(config.bodies);
  const size_t runs = std::max<size_t>(spec.requests / 4, 200);
  const double jqPerEvent =
      bareJqSecondsPerRun(kFilter, inputs, runs) + bareJqSecondsPerRun(kTransform, inputs, runs);
  // The plain rate if each event also cost libjq's own work, on a machine
  // whose CPU the load keeps busy.
  const double bound = plain.rate * plain.cpuPerEvent / (plain.cpuPerEvent + jqPerEvent);

  report.add({"routed", "deliveries/s with a jq filter and transform on each", routed.rate,
              "1/s", bound, "plain rate less libjq's own CPU", Goal{Goal::Kind::kRatioAtLeast, 0.8}});
  report.add({"routed", "deliveries/s against the plain load", routed.rate, "1/s", plain.rate,
              "the same load without routing", std::nullopt});
  report.add({"routed", "CPU per event, routed", routed.cpuPerEvent * 1e3, "ms",
              plain.cpuPerEvent * 1e3, "CPU per event without routing", std::nullopt});
  report.add({"routed", "libjq's own CPU per event (filter+transform)", jqPerEvent * 1e3, "ms",
              (routed.cpuPerEvent - plain.cpuPerEvent) * 1e3, "CPU routing added per event",
              std::nullopt});
}

}  // namespace webhooker::bench
